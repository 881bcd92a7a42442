// MXFP4 dequantisation (checkpoints/mxfp4.h; HF transformers integrations/mxfp4.py
// convert_moe_packed_tensors): hand-computed blocks (nibble order, the e2m1 table, signed zero,
// E8M0 factors above and below 1) and the refusals naming the tensor and the block.

#include "checkpoints/mxfp4.h"
#include "draftscope/errors.h"
#include "tensor_test_support.h"

#include <QtTest>

using namespace draftscope;
using namespace testsupport;

namespace {
at::Tensor u8(const std::vector<int>& v, at::IntArrayRef shape) {
    return at::tensor(std::vector<std::int64_t>(v.begin(), v.end())).to(at::kByte).reshape(shape);
}
QString errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}
}  // namespace

class TestMxfp4 : public QObject {
    Q_OBJECT
private slots:
    void decodesNibblesLowFirstWithTheBlockScale() {
        // Two blocks of one row: block 0 scale 128 (x2): bytes 0x21 -> 0.5, 1.0; 0xF8 -> -0.0, -6.0.
        // Block 1 scale 124 (x1/8): 0x77 -> 6, 6 -> 0.75, 0.75; 0x9A -> code 10 (-1.0), code 9 (-0.5).
        std::vector<int> bytes(32, 0);
        bytes[0] = 0x21;
        bytes[1] = 0xF8;
        bytes[16] = 0x77;
        bytes[17] = 0x9A;
        const auto out = dequantizeMxfp4(u8(bytes, {1, 2, 16}), u8({128, 124}, {1, 2}), "w");
        QCOMPARE(out.sizes(), (at::IntArrayRef{1, 64}));
        std::vector<double> want(64, 0.0);
        want[0] = 1.0, want[1] = 2.0, want[2] = -0.0, want[3] = -12.0;
        want[32] = 0.75, want[33] = 0.75, want[34] = -0.125, want[35] = -0.0625;
        expectNear(out, want, 0.0);
        QVERIFY(std::signbit(out[0][2].item<float>()));  // code 8 is -0
        // Every code at factor 1, as the table.
        std::vector<int> all(16);
        for (int k = 0; k < 8; ++k) all[static_cast<std::size_t>(k)] = (2 * k) | ((2 * k + 1) << 4);
        const auto t = dequantizeMxfp4(u8(all, {1, 16}), u8({127}, {1}), "table");
        for (int c = 0; c < 16; ++c) QCOMPARE(t[c].item<float>(), kFp4E2M1Values[c]);
        // Tiny factors stay exact (2^-127 x 0.5 is a float32 subnormal).
        const auto tiny = dequantizeMxfp4(u8(std::vector<int>(16, 0x11), {1, 16}), u8({0}, {1}), "tiny");
        QCOMPARE(tiny[0].item<float>(), std::ldexp(0.5f, -127));
    }

    void refusesBadShapesAndScales() {
        const auto blocks = u8(std::vector<int>(32, 0x11), {1, 2, 16});
        QVERIFY(errorOf([&] { dequantizeMxfp4(blocks, u8({127, 255}, {1, 2}), "model.layers.0.mlp.experts.down_proj_blocks"); })
                    .contains("MXFP4 scales 'model.layers.0.mlp.experts.down_proj_scales' (of 'model.layers.0.mlp.experts.down_proj_blocks'): block [0, 1] has scale 255 (E8M0's NaN)"));
        QVERIFY(errorOf([&] { dequantizeMxfp4(blocks, u8({127}, {1, 1}), "w"); })
                    .contains("scales have shape [1, 1], expected [1, 2]"));
        QVERIFY(errorOf([&] { dequantizeMxfp4(u8(std::vector<int>(8, 0), {1, 8}), u8({127}, {1}), "w"); })
                    .contains("[..., groups, 16]"));
        QVERIFY(errorOf([&] { dequantizeMxfp4(blocks.to(at::kInt), u8({127, 127}, {1, 2}), "w"); }).contains("uint8"));
        // 6 x 2^14 overflows float16 (65504), not float32.
        QVERIFY(errorOf([&] { dequantizeMxfp4(blocks, u8({127, 141}, {1, 2}), "w", at::kHalf); })
                    .contains("block [0, 1] has scale 141 (factor 2^14, whose values overflow Half)"));
        QVERIFY(errorOf([&] { dequantizeMxfp4(blocks, u8({127, 141}, {1, 2}), "w", at::kFloat); }).isEmpty());
        QVERIFY(errorOf([&] { dequantizeMxfp4(blocks, u8({253, 127}, {1, 2}), "w"); }).contains("block [0, 0] has scale 253"));
    }
};

QTEST_GUILESS_MAIN(TestMxfp4)
#include "tst_mxfp4.moc"
