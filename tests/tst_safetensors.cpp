// The safetensors reader treats files as untrusted: every malformed case below must give a
// clear draftscope::Error naming the file and the problem, never a crash.

#include "draftscope/errors.h"
#include "draftscope/safetensors.h"
#include "test_support.h"

#include <QtTest>

#include <cstring>

using namespace draftscope;
using namespace testsupport;

class TestSafetensors : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::string path(const std::string& name) const { return tmp_.path().toStdString() + "/" + name; }

    /// A file with the given header text and `dataBytes` zero bytes of data.
    std::string makeFile(const std::string& name, const std::string& header, std::size_t dataBytes) {
        std::string bytes(8, '\0');
        const std::uint64_t n = header.size();
        for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
        bytes += header;
        bytes += std::string(dataBytes, '\0');
        writeBytes(path(name), bytes);
        return path(name);
    }

    static QString errorOf(const std::string& file) {
        try {
            SafetensorsFile::open(file);
        } catch (const Error& e) {
            return QString::fromStdString(e.what());
        }
        return {};
    }

private slots:
    void roundTrip() {
        SafetensorsWriter w;
        w.addFloat32("a", {2, 3}, {1, 2, 3, 4, 5, 6.5f});
        w.addInt64("ids", {3}, {7, -8, 9});
        const std::uint16_t bf16[2] = {0x3f80, 0xc000};  // 1.0, -2.0
        w.add("b", DType::BF16, {2}, bf16, sizeof bf16);
        const std::uint16_t f16[3] = {0x3c00, 0x0001, 0xfc00};  // 1.0, smallest subnormal, -inf
        w.add("h", DType::F16, {3}, f16, sizeof f16);
        w.setMetadata("format", "pt");
        w.write(path("rt.safetensors"));

        const auto f = SafetensorsFile::open(path("rt.safetensors"));
        QCOMPARE(f->tensors().size(), std::size_t(4));
        QCOMPARE(f->at("a").shape, (std::vector<std::int64_t>{2, 3}));
        QCOMPARE(f->readFloat32("a"), (std::vector<float>{1, 2, 3, 4, 5, 6.5f}));
        QCOMPARE(f->readInt64("ids"), (std::vector<std::int64_t>{7, -8, 9}));
        QCOMPARE(f->readFloat32("b"), (std::vector<float>{1.0f, -2.0f}));
        const auto h = f->readFloat32("h");
        QCOMPARE(h[0], 1.0f);
        QCOMPARE(h[1], std::ldexp(1.0f, -24));
        QVERIFY(std::isinf(h[2]) && h[2] < 0);
        QCOMPARE(f->metadata().at("format"), std::string("pt"));
        QVERIFY(f->find("missing") == nullptr);
        QVERIFY(QString::fromStdString([&] {
            try { f->at("missing"); } catch (const Error& e) { return std::string(e.what()); }
            return std::string();
        }()).contains("'missing' not found"));
        QVERIFY(QString::fromStdString([&] {
            try { f->readInt64("a"); } catch (const Error& e) { return std::string(e.what()); }
            return std::string();
        }()).contains("expected an integer dtype"));
    }

    void realCheckpointHeader() {
        const auto f = SafetensorsFile::open(demoTarget() + "/model.safetensors");
        const auto& e = f->at("model.embed_tokens.weight");
        QCOMPARE(e.dtype, DType::BF16);
        QCOMPARE(e.shape, (std::vector<std::int64_t>{2048, 256}));
    }

    void missingFile() {
        QVERIFY(errorOf(path("nope.safetensors")).contains("file not found"));
        QVERIFY(errorOf(tmp_.path().toStdString()).contains("directory"));
    }

    void tooShortForHeaderLength() {
        writeBytes(path("short"), "abc");
        const auto msg = errorOf(path("short"));
        QVERIFY2(msg.contains("too short") && msg.contains("short"), qPrintable(msg));
    }

    void truncatedFile() {
        // Header promises 24 bytes of data, file has 10.
        const auto f = makeFile("trunc", R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", 10);
        const auto msg = errorOf(f);
        QVERIFY2(msg.contains("outside") && msg.contains("'w'") && msg.contains("truncated"), qPrintable(msg));
    }

    void headerLengthPastEnd() {
        std::string bytes(8, '\0');
        bytes[0] = 100;  // claims a 100-byte header
        bytes += "{}";
        writeBytes(path("hdrpast"), bytes);
        const auto msg = errorOf(path("hdrpast"));
        QVERIFY2(msg.contains("runs past the end"), qPrintable(msg));
    }

    void absurdHeaderLength() {
        std::string bytes(8, '\xff');
        bytes += "{}";
        writeBytes(path("huge"), bytes);
        QVERIFY(errorOf(path("huge")).contains("not plausible"));
    }

    void corruptHeader() {
        const auto f = makeFile("corrupt", R"({"w":{"dtype":"F32", "shape":[2)", 8);
        const auto msg = errorOf(f);
        QVERIFY2(msg.contains("not valid JSON"), qPrintable(msg));
        const auto g = makeFile("array", "[1,2,3]", 0);
        QVERIFY(errorOf(g).contains("not a JSON object"));
    }

    void badEntries() {
        QVERIFY(errorOf(makeFile("dt", R"({"w":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}})", 1))
                    .contains("unsupported dtype 'F8'"));
        QVERIFY(errorOf(makeFile("noshape", R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4))
                    .contains("'shape'"));
        QVERIFY(errorOf(makeFile("negshape", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4))
                    .contains("non-negative"));
        QVERIFY(errorOf(makeFile("rev", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4))
                    .contains("begin after end"));
        QVERIFY(errorOf(makeFile("offs", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4))
                    .contains("data_offsets"));
        QVERIFY(errorOf(makeFile("overflow", R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})", 4))
                    .contains("overflows"));
    }

    void sizeDoesNotMatchShape() {
        const auto msg = errorOf(makeFile("size", R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]}})", 8));
        QVERIFY2(msg.contains("occupies 8 bytes") && msg.contains("need 12"), qPrintable(msg));
    }

    void offsetsOutsideFile() {
        const auto msg = errorOf(makeFile("outside", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[100,116]}})", 16));
        QVERIFY2(msg.contains("outside the 16-byte data section"), qPrintable(msg));
    }

    void overlappingTensors() {
        const auto msg = errorOf(makeFile("overlap",
            R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 16));
        QVERIFY2(msg.contains("overlap") && msg.contains("'a'") && msg.contains("'b'"), qPrintable(msg));
    }

    void overlapBehindAnEmptyTensor() {
        // A=[0,100), Z=[50,50) empty, B=[60,80): B overlaps A although its neighbour is Z.
        const auto msg = errorOf(makeFile("overlap3",
            R"({"a":{"dtype":"U8","shape":[100],"data_offsets":[0,100]},"z":{"dtype":"U8","shape":[0],"data_offsets":[50,50]},"b":{"dtype":"U8","shape":[20],"data_offsets":[60,80]}})", 100));
        QVERIFY2(msg.contains("overlap") && msg.contains("'a'") && msg.contains("'b'"), qPrintable(msg));
    }

    void writerRejectsBadInput() {
        SafetensorsWriter w;
        w.addFloat32("x", {2}, {1, 2});
        bool threw = false;
        try { w.addFloat32("x", {1}, {1}); } catch (const Error&) { threw = true; }
        QVERIFY(threw);
        threw = false;
        try { w.addFloat32("y", {3}, {1, 2}); } catch (const Error&) { threw = true; }
        QVERIFY(threw);
        threw = false;
        try { w.write("/nonexistent-dir/x.safetensors"); } catch (const Error&) { threw = true; }
        QVERIFY(threw);
    }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
