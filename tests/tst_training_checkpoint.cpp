// torch.save training checkpoints (.pt): the fixtures written by torch 2.x load through
// draftscope's own unpickler and equal their safetensors twin; refused and corrupt files
// give clear Errors (never a crash); a .pt drafter runs exactly like its safetensors twin.

// Torch headers first: ATen uses `slots` as an identifier, which Qt defines as a macro.
#include "checkpoints/training_checkpoint.h"
#include "io/torch_pickle.h"
#include "torch_save_support.h"


#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/safetensors.h"
#include "test_support.h"

#include <QtTest>

#include <cstring>
#include <algorithm>
#include <functional>
#include <random>

using namespace draftscope;
using namespace testsupport;

namespace {

std::string pt(const std::string& name) { return unpackedDataPath("pt/" + name); }

/// The safetensors twin's tensor `name` as an owned at::Tensor.
at::Tensor twinTensor(const SafetensorsFile& f, const std::string& name) {
    const auto& info = f.at(name);
    at::ScalarType dtype = at::kFloat;
    switch (info.dtype) {
        case DType::BF16: dtype = at::kBFloat16; break;
        case DType::F32: dtype = at::kFloat; break;
        case DType::F16: dtype = at::kHalf; break;
        default: throw Error("unexpected twin dtype");
    }
    auto t = at::empty(info.shape, at::TensorOptions().dtype(dtype));
    std::memcpy(t.data_ptr(), f.data(info), info.byteSize());
    return t;
}

std::string readAll(const std::string& path) { return readFileToString(path); }

std::string floats(const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

}  // namespace

class TestTrainingCheckpoint : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    std::string tmp(const std::string& name) const { return (tmp_.path() + "/").toStdString() + name; }

    /// A small checkpoint {'model': OrderedDict(w: [2,3] float, b: [3] view into the same storage)}.
    std::string smallPickle() const {
        Pickle p;
        p.op('}').op('(').str("model").global("collections", "OrderedDict").op(')').op('R').op('(');
        p.str("w").tensor("0", 9, 0, {2, 3}, {3, 1});
        p.str("b").tensor("0", 9, 6, {3}, {1});
        p.op('u').str("step").i(7).op('u');
        return p.stop().b;
    }
    std::string smallData() const { return floats({1, 2, 3, 4, 5, 6, 7, 8, 9}); }

    /// Writes data.pkl `pkl` (and the small storage) to a fresh archive, returns readTrainingCheckpoint's error.
    QString errorFor(const std::string& pkl, const std::string& name, const std::string& data = {}) {
        const auto path = tmp(name + ".pt");
        writeArchive(path, {{"data.pkl", pkl}, {"byteorder", "little"}, {"data/0", data.empty() ? smallData() : data}});
        return errorOf([&] { readTrainingCheckpoint(path); });
    }

private slots:
    void initTestCase() { QVERIFY(tmp_.isValid()); }

    // trainer.pt holds the whole drafter; the other fixtures hold its RMSNorm weights (the
    // twin's tensors whose names end in "norm.weight"; see tools/make_pt_fixtures.py).
    void fixturesEqualTheSafetensorsTwin_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("nestedUnder");
        QTest::addColumn<QString>("strippedPrefix");
        QTest::addColumn<QStringList>("otherEntries");
        QTest::addColumn<bool>("float32");
        QTest::addColumn<bool>("whole");
        QTest::newRow("trainer") << "trainer.pt" << "model" << "module._orig_mod."
                                 << QStringList{"optimizer", "step", "epoch", "loss", "tag", "done", "extra"} << false << true;
        QTest::newRow("state_dict") << "state_dict.pt" << "state_dict" << "_orig_mod." << QStringList{} << true << false;
        QTest::newRow("draft_model") << "draft_model.pt" << "draft_model" << "module." << QStringList{"config"} << false << false;
        QTest::newRow("flat") << "flat.pt" << "" << "" << QStringList{} << false << false;
    }
    void fixturesEqualTheSafetensorsTwin() {
        QFETCH(QString, file);
        QFETCH(QString, nestedUnder);
        QFETCH(QString, strippedPrefix);
        QFETCH(QStringList, otherEntries);
        QFETCH(bool, float32);
        QFETCH(bool, whole);
        const auto ck = readTrainingCheckpoint(pt(file.toStdString()));
        QCOMPARE(QString::fromStdString(ck.nestedUnder), nestedUnder);
        QCOMPARE(QString::fromStdString(ck.strippedPrefix), strippedPrefix);
        QStringList others;
        for (const auto& e : ck.otherEntries) others << QString::fromStdString(e);
        QCOMPARE(others, otherEntries);

        const auto twin = SafetensorsFile::open(demoDrafter() + "/model.safetensors");
        std::vector<std::string> expected, got;
        for (const auto& info : twin->tensors())
            if (whole || QString::fromStdString(info.name).endsWith("norm.weight")) expected.push_back(info.name);
        for (const auto& [name, t] : ck.tensors) got.push_back(name);
        std::sort(expected.begin(), expected.end());
        QCOMPARE(got, expected);
        QVERIFY(expected.size() >= (whole ? 25u : 10u));
        for (const auto& name : expected) {
            const auto& t = ck.tensors.at(name);
            QVERIFY(t.is_contiguous());
            QCOMPARE(t.sizes().vec(), twin->at(name).shape);
            auto ref = twinTensor(*twin, name);
            if (float32) {
                QVERIFY(t.scalar_type() == at::kFloat);
                ref = ref.to(at::kFloat);
            } else {
                QVERIFY(t.scalar_type() == ref.scalar_type());
            }
            QVERIFY2(at::equal(t, ref), name.c_str());
        }
    }

    void namespaceIsRefused() {
        const auto msg = errorOf([] { readTrainingCheckpoint(pt("namespace.pt")); });
        QVERIFY2(msg.contains("argparse.Namespace") && msg.contains("untrusted") && msg.contains("namespace.pt") &&
                     msg.contains("model.state_dict()"),
                 qPrintable(msg));
    }

    void legacyIsRefused() {
        const auto msg = errorOf([] { readTrainingCheckpoint(pt("legacy.pt")); });
        QVERIFY2(msg.contains("legacy") && msg.contains("pre-1.6") && msg.contains("legacy.pt"), qPrintable(msg));
    }

    void truncatedAndRandomFilesGiveErrors() {
        const auto bytes = readAll(pt("trainer.pt"));
        for (const std::size_t n : {std::size_t(4), std::size_t(1000), bytes.size() / 2, bytes.size() - 1}) {
            const auto path = tmp("truncated-" + std::to_string(n) + ".pt");
            writeBytes(path, bytes.substr(0, n));
            const auto msg = errorOf([&] { readTrainingCheckpoint(path); });
            QVERIFY2(msg.contains("cannot read") && msg.contains(QString::fromStdString(path)), qPrintable(msg));
        }
        std::mt19937 rng(17);
        std::string noise(4096, '\0');
        for (auto& c : noise) c = static_cast<char>(rng());
        writeBytes(tmp("random.pt"), noise);
        QVERIFY(errorOf([&] { readTrainingCheckpoint(tmp("random.pt")); }).contains("not a torch.save checkpoint"));
        writeBytes(tmp("random-zip.pt"), std::string("PK\x03\x04", 4) + noise);
        const auto msg = errorOf([&] { readTrainingCheckpoint(tmp("random-zip.pt")); });
        QVERIFY2(msg.contains("cannot read") && msg.contains("zip"), qPrintable(msg));
    }

    void garbageDataPklGivesError() {
        std::mt19937 rng(3);
        std::string garbage(500, '\0');
        for (auto& c : garbage) c = static_cast<char>(rng());
        const auto msg = errorFor(garbage, "garbage");
        QVERIFY2(msg.contains("data.pkl, byte") && msg.contains("garbage.pt"), qPrintable(msg));
        QVERIFY(errorFor("", "empty-pkl").contains("without a STOP"));
    }

    void smallHandMadeCheckpointLoads() {
        const auto path = tmp("small.pt");
        writeArchive(path, {{"data.pkl", smallPickle()}, {"byteorder", "little"}, {"data/0", smallData()}});
        const auto ck = readTrainingCheckpoint(path);
        QCOMPARE(QString::fromStdString(ck.nestedUnder), QString("model"));
        QCOMPARE(ck.otherEntries, std::vector<std::string>{"step"});
        QVERIFY(at::equal(ck.tensors.at("w"), at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3})));
        QVERIFY(at::equal(ck.tensors.at("b"), at::tensor({7.f, 8.f, 9.f})));
    }

    void stateDictMetadataIsAccepted() {
        // model.state_dict() is an OrderedDict with a _metadata attribute, pickled as
        // OrderedDict() ... SETITEMS, {'_metadata': {...}} BUILD: accepted, the state dropped.
        Pickle p;
        p.op('}').op('(').str("model").global("collections", "OrderedDict").op(')').op('R').op('(');
        p.str("w").tensor("0", 9, 0, {2, 3}, {3, 1});
        p.op('u');
        p.op('}').str("_metadata").op('}').str("").op('}').str("version").i(1).op('s').op('s').op('s').op('b');
        p.op('u').stop();
        const auto path = tmp("metadata.pt");
        writeArchive(path, {{"data.pkl", p.b}, {"data/0", smallData()}});
        QCOMPARE(readTrainingCheckpoint(path).tensors.size(), std::size_t(1));
        // BUILD on a plain dict (or anything else) is refused.
        auto pkl = smallPickle();
        pkl.pop_back();  // STOP
        const auto msg = errorFor(pkl + "}b.", "build-on-dict");
        QVERIFY2(msg.contains("BUILD"), qPrintable(msg));
    }

    void protocol4OpcodesAreRead() {
        // What protocols 4/5 add (FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL) and the
        // scalar opcodes the fixtures do not use, read through torchpickle::Archive directly.
        Pickle body;
        body.b.clear();
        auto sstr = [&](const std::string& t) { body.op('\x8c').op(static_cast<char>(t.size())).b += t; };
        body.op('}').op('\x94').op('(');
        sstr("model");
        sstr("collections");
        sstr("OrderedDict");
        body.op('\x93').op('\x94').op(')').op('R').op('(').str("w").tensor("0", 9, 0, {3, 3}, {1, 3}).op('u');
        sstr("step");
        body.op('\x8a').op('\x02').op('\x10').op('\x27');  // LONG1 10000
        sstr("neg");
        body.op('\x8a').op('\x01').op('\xff');  // LONG1 -1
        sstr("blob");
        body.op('C').op('\x03').b += "abc";
        sstr("list");
        body.op(']').op('2').op('0').op('(').op('N').op('\x88').op('G').b += std::string("\x3f\xf8\0\0\0\0\0\0", 8);  // 1.5
        body.op('e');
        sstr("again");
        body.op('h').op('\x01').op(')').op('R');
        body.op('u').op('.');
        std::string pkl("\x80\x04\x95", 3);
        for (int k = 0; k < 8; ++k) pkl += static_cast<char>((body.b.size() >> (8 * k)) & 0xff);
        pkl += body.b;
        const auto path = tmp("proto4.pt");
        writeArchive(path, {{"data.pkl", pkl}, {"data/0", smallData()}});

        torchpickle::Archive ar(path);
        const auto& root = *ar.root().c;
        QCOMPARE(root.find("step")->i, std::int64_t(10000));
        QCOMPARE(root.find("neg")->i, std::int64_t(-1));
        QVERIFY(root.find("blob")->kind == torchpickle::Value::Kind::Bytes && root.find("blob")->s == "abc");
        const auto& list = root.find("list")->c->items;
        QCOMPARE(list.size(), std::size_t(3));
        QVERIFY(list[0].kind == torchpickle::Value::Kind::None && list[1].b && list[2].f == 1.5);
        QVERIFY(root.find("again")->isDict() && root.find("again")->c->entries.empty());
        // A transposed view: made contiguous by readTrainingCheckpoint.
        const auto ck = readTrainingCheckpoint(path);
        QVERIFY(at::equal(ck.tensors.at("w"), at::arange(1, 10, at::kFloat).view({3, 3}).t()));
        QVERIFY(ck.tensors.at("w").is_contiguous());
    }

    void badPicklesGiveClearErrors_data() {
        QTest::addColumn<QByteArray>("pickle");
        QTest::addColumn<QString>("words");
        auto row = [](const char* name, const Pickle& p, const char* words) {
            QTest::newRow(name) << QByteArray(p.b.data(), static_cast<int>(p.b.size())) << QString(words);
        };
        auto sd = [](std::function<void(Pickle&)> tensor) {
            Pickle p;
            p.op('}').str("w");
            tensor(p);
            p.op('s').stop();
            return p;
        };
        row("os.system", Pickle().global("os", "system").stop(), "class os.system");
        row("stack global", Pickle().str("subprocess").str("Popen").op('\x93').stop(), "class subprocess.Popen");
        row("numpy", Pickle().global("numpy.core.multiarray", "_reconstruct").stop(), "numpy.core.multiarray._reconstruct");
        row("builtins.eval", Pickle().global("builtins", "eval").stop(), "untrusted");
        row("NEWOBJ", Pickle().op('}').op(')').op('\x81').stop(), "unsupported pickle opcode NEWOBJ (0x81)");
        row("unknown opcode", Pickle().op('\xff').stop(), "unsupported pickle opcode 0xff");
        row("protocol 9", Pickle{std::string("\x80\x09.", 3)}, "protocol 9");
        row("memo", Pickle().op('h').op('\x05').stop(), "memo entry 5");
        row("underflow", Pickle().op('t').stop(), "MARK");
        row("pop empty", Pickle().op('0').stop(), "POP on an empty stack");
        row("setitem underflow", Pickle().op('}').op('s').stop(), "stack underflow");
        row("append to dict", Pickle().op('}').op('N').op('a').stop(), "APPEND needs a list");
        row("two values", Pickle().op('N').op('N').stop(), "2 values");
        row("no stop", Pickle().op('N'), "without a STOP");
        row("long string", Pickle().op('X').op('\xff').op('\xff').op('\xff').op('\x7f').stop(), "runs past the end");
        row("long1", Pickle().op('\x8a').op('\x09').stop(), "does not fit 64 bits");
        row("bad utf8", Pickle().op('\x8c').op('\x01').op('\xc3').stop(), "UTF-8");
        row("odd setitems", Pickle().op('}').op('(').op('N').op('u').stop(), "odd number");
        row("tuple key", Pickle().op('}').op(')').op('N').op('s').stop(), "dict key is a tuple");
        row("reduce non-callable", Pickle().op('N').op(')').op('R').stop(), "not callable");
        row("OrderedDict args", Pickle().global("collections", "OrderedDict").op('N').op('\x85').op('R').stop(), "OrderedDict()");
        row("storage global alone", Pickle().global("torch", "FloatStorage").op(')').op('R').stop(), "cannot be called");
        row("past storage end", sd([](Pickle& p) { p.tensor("0", 9, 4, {2, 3}, {3, 1}); }), "past its end");
        row("negative stride", sd([](Pickle& p) { p.tensor("0", 9, 0, {3}, {-1}); }), "negative");
        row("negative offset", sd([](Pickle& p) { p.tensor("0", 9, -1, {3}, {1}); }), "negative");
        row("broadcast", sd([](Pickle& p) { p.tensor("0", 9, 0, {1000, 3}, {0, 1}); }), "broadcast");
        row("overflow", sd([](Pickle& p) { p.tensor("0", 9, 0, {0x7fffffff, 0x7fffffff, 0x7fffffff}, {1, 1, 1}); }), "overflow");
        row("sizes vs strides", sd([](Pickle& p) { p.tensor("0", 9, 0, {3, 3}, {1}); }), "2 sizes but 1 strides");
        row("record too small", sd([](Pickle& p) { p.tensor("0", 10, 0, {3}, {1}); }), "holds 36 bytes");
        row("missing record", sd([](Pickle& p) { p.tensor("7", 9, 0, {3}, {1}); }), "no record 'data/7'");
        row("bad key", sd([](Pickle& p) { p.tensor("../0", 9, 0, {3}, {1}); }), "storage key");
        row("huge storage", sd([](Pickle& p) { p.tensor("0", 0x7fffffff, 0, {3}, {1}); }), "more than the whole file");
        row("complex storage", sd([](Pickle& p) { p.tensor("0", 9, 0, {3}, {1}, "ComplexFloatStorage"); }), "torch.ComplexFloatStorage");
        row("no state dict", Pickle().op('}').str("step").i(3).op('s').stop(), "no state dict");
        {
            // One 1 MiB string memoised, then fetched 400 times: 400 MiB of values from 1 MiB.
            Pickle p;
            p.str(std::string(1 << 20, 'x')).op('q').op('\0');
            for (int k = 0; k < 400; ++k) p.op('h').op('\0');
            row("value amplification", p.stop(), "MiB of values");
        }

    }
    void badPicklesGiveClearErrors() {
        QFETCH(QByteArray, pickle);
        QFETCH(QString, words);
        const auto msg = errorFor(pickle.toStdString(), "bad");
        QVERIFY2(msg.contains(words) && msg.contains("bad.pt"), qPrintable(msg));
    }

    // 100 names for views of one 4 MiB storage: a 4 MiB file that would expand to 400 MiB.
    void overlappingViewsAreBounded() {
        Pickle p;
        p.global("collections", "OrderedDict").op(')').op('R').op('(');
        p.str("t0").tensor("0", 1 << 20, 0, {1024, 1024}, {1024, 1}).op('q').op('\x01');
        for (int k = 1; k < 100; ++k) p.str(std::string("t").append(std::to_string(k))).op('h').op('\x01');
        const auto msg = errorFor(p.op('u').stop().b, "views", std::string(std::size_t{4} << 20, '\0'));
        QVERIFY2(msg.contains("overlapping views") && msg.contains("views.pt"), qPrintable(msg));
    }

    void mutatedPicklesNeverCrash() {
        // Every prefix of a valid pickle, and random byte mutations of it, either load or throw
        // draftscope::Error (any other exception or a crash fails the test).
        const auto good = smallPickle();
        const auto path = tmp("mutated.pt");
        auto attempt = [&](const std::string& pkl) {
            writeArchive(path, {{"data.pkl", pkl}, {"data/0", smallData()}});
            try {
                readTrainingCheckpoint(path);
                return true;
            } catch (const Error&) {
                return false;
            }
        };
        QVERIFY(attempt(good));
        for (std::size_t n = 0; n < good.size(); ++n) QVERIFY2(!attempt(good.substr(0, n)), std::to_string(n).c_str());
        std::mt19937 rng(42);
        int loaded = 0;
        for (int k = 0; k < 400; ++k) {
            auto pkl = good;
            const int flips = 1 + static_cast<int>(rng() % 3);
            for (int f = 0; f < flips; ++f) pkl[rng() % pkl.size()] = static_cast<char>(rng());
            loaded += attempt(pkl);
        }
        qInfo() << "mutations that still loaded:" << loaded << "of 400";
    }

    void engineRunsTheCheckpointLikeItsTwin() {
        PromptSpec prompt;
        prompt.text = "def f(x):";
        RunSettings settings;
        settings.maxNewTokens = 32;
        settings.ignoreEos = true;

        Engine twin;
        twin.loadTarget(demoTarget());
        twin.loadDrafter(demoDrafter());
        const auto ref = twin.run(prompt, settings);

        Engine e;
        e.loadTarget(demoTarget());
        const auto s = e.loadDrafter(pt("trainer.pt"));
        QVERIFY2(QString::fromStdString(s.source).contains("state dict under 'model'"), s.source.c_str());
        const auto got = e.run(prompt, settings);
        QCOMPARE(got.outputIds, ref.outputIds);
        QCOMPARE(got.acceptanceLengths, ref.acceptanceLengths);
        QVERIFY(got.outputIds.size() > ref.promptIds.size());
    }
};

QTEST_GUILESS_MAIN(TestTrainingCheckpoint)
#include "tst_training_checkpoint.moc"
