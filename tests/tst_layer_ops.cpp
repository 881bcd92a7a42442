// The plain-op references of the model ops that draftscope's fused CUDA kernels replace on
// the GPU (docs/ENGINE.md, "Fused kernels"; tests/gpu/check_fused_kernels compares the
// kernels with these): RMSNorm (plain and 1 + w), the residual add before it, the per-head
// norm + partial rotary, the gated RMSNorm, the Gated DeltaNet gates and the sigmoid-gated
// attention heads, each against values computed by hand. On the CPU every fused kernel
// declines, whatever the build.

// Torch headers first: ATen uses `slots` as an identifier, which Qt defines as a macro.
#include "kernels/fused_ops.h"
#include "models/gated_attention.h"
#include "models/gated_deltanet.h"
#include "models/layers.h"
#include "tensor_test_support.h"

#include <QtTest>

#include <cmath>
#include <vector>

using namespace draftscope;
using testsupport::expectNear;
using testsupport::f32;

namespace {

}  // namespace

class TestLayerOps : public QObject {
    Q_OBJECT
private slots:
    // x = [1, 2], delta = [2, 2]: sum [3, 4], rms sqrt(12.5) = 3.5355339.
    void residualAddThenNorm() {
        const auto x = f32({1, 2}, {1, 2}), delta = f32({2, 2}, {1, 2});
        const RmsNorm plain{f32({1, 1}, {2}), 0.0, false};
        const auto [sum, normed] = plain.addNorm(x, delta);
        expectNear(sum, {3, 4});
        expectNear(normed, {3 / std::sqrt(12.5), 4 / std::sqrt(12.5)});
        // Qwen3_5RMSNorm scales by (1 + w): w = [0, 1] doubles the second element.
        const RmsNorm centred{f32({0, 1}, {2}), 0.0, true};
        expectNear(centred.addNorm(x, delta).second, {3 / std::sqrt(12.5), 8 / std::sqrt(12.5)});
        // eps counts: rms of [3, 4] with eps 12.5 is sqrt(25).
        const RmsNorm withEps{f32({1, 1}, {2}), 12.5, false};
        expectNear(withEps(f32({3, 4}, {1, 2})), {0.6, 0.8});
    }

    // One token, two heads of 4: rotary on the first 2 dims (partial), angle pi/3 and pi/2.
    void normThenPartialRotary() {
        const auto x = f32({1, 0, 0, 0, 0, 2, 0, 0}, {1, 2, 4});  // [T, H, D]; each row's rms is half its one entry
        const RmsNorm norm{f32({1, 1, 1, 1}, {4}), 0.0, false};
        const double a = M_PI / 3;
        const auto cos = f32({static_cast<float>(std::cos(a)), static_cast<float>(std::cos(a))}, {1, 2});
        const auto sin = f32({static_cast<float>(std::sin(a)), static_cast<float>(std::sin(a))}, {1, 2});
        const auto y = norm.normRotary(x, cos, sin);  // [H, T, D]
        QCOMPARE(y.sizes(), (at::IntArrayRef{2, 1, 4}));
        // head 0: normed [2, 0, 0, 0] -> [2 cos, 2 sin, 0, 0]; head 1: normed [0, 2, 0, 0] -> [-2 sin, 2 cos, 0, 0]
        expectNear(y, {2 * std::cos(a), 2 * std::sin(a), 0, 0, -2 * std::sin(a), 2 * std::cos(a), 0, 0}, 1e-6);
    }

    // HF Qwen3_5RMSNormGated: w * norm(x) * silu(z).
    void gatedNorm() {
        const GatedRmsNorm norm{f32({1, 2}, {2}), 0.0};
        const auto x = f32({3, 4, 3, 4}, {2, 2}), z = f32({1, 1, 0, 0}, {2, 2});
        const double silu1 = 1.0 / (1.0 + std::exp(-1.0));
        expectNear(norm(x, z), {3 / std::sqrt(12.5) * silu1, 8 / std::sqrt(12.5) * silu1, 0, 0});
    }

    // g = -exp(A_log) * softplus(a + dt_bias) (softplus(x) = x above 20), beta = sigmoid(b).
    void deltaNetGateValues() {
        const auto a = f32({0, 30, -30}, {1, 3}), b = f32({0, 2, -2}, {1, 3});
        const auto aLog = f32({0, static_cast<float>(std::log(2.0)), 0}, {3});
        const auto dtBias = f32({0, 0, 1}, {3});
        const auto [g, beta] = deltaNetGates(a, b, aLog, dtBias);
        QCOMPARE(g.scalar_type(), at::kFloat);
        expectNear(g, {-std::log(2.0), -60.0, -std::log1p(std::exp(-29.0))}, 1e-5);
        expectNear(beta, {0.5, 1 / (1 + std::exp(-2.0)), 1 / (1 + std::exp(2.0))});
    }

    // attn [H, T, D] * sigmoid(gate [T, H, D]) as [T, H*D].
    void sigmoidGatedHeads() {
        const auto attn = f32({2, 5, 3, 7}, {2, 2, 1});  // head 0: t0 2, t1 5; head 1: t0 3, t1 7
        const auto gate = f32({0, static_cast<float>(std::log(3.0)), 0, 0}, {2, 2, 1});
        const auto y = GatedAttention::gatedHeads(attn, gate);
        QCOMPARE(y.sizes(), (at::IntArrayRef{2, 2}));
        expectNear(y, {2 * 0.5, 3 * 0.75, 5 * 0.5, 7 * 0.5});
    }

    // The fused kernels never take CPU tensors (nor float32 ones), in any build.
    void fusedKernelsDeclineOnCpu() {
        const auto x = at::randn({2, 8}, at::TensorOptions().dtype(at::kBFloat16));
        const auto w = at::ones({8}, x.options());
        QVERIFY(!kernels::rmsNorm(x, w, 1e-6, false));
        QVERIFY(!kernels::addRmsNorm(x, x, w, 1e-6, true));
        QVERIFY(!kernels::gatedRmsNorm(x, x, w, 1e-6));
        QVERIFY(!kernels::deltaNetGates(x, x, w.narrow(0, 0, 8), w));
        QVERIFY(!kernels::sigmoidGate(x.reshape({2, 2, 4}), x.reshape({2, 2, 4})));
        QVERIFY(!kernels::rmsNormRotary(x.reshape({1, 2, 8}), w, 1e-6, false, x.narrow(0, 0, 1), x.narrow(0, 0, 1)));
    }
};

QTEST_APPLESS_MAIN(TestLayerOps)
#include "tst_layer_ops.moc"
