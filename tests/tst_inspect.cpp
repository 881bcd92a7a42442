// Checkpoint inspector, checkpoint diff, target-load comparison and the A/B compare CLI
// (issue 6): statistics against hand computation from the raw safetensors values.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/inspector.h"
#include "draftscope/safetensors.h"
#include "draftscope/target_comparison.h"
#include "test_support.h"

#include <QProcess>
#include <QtTest>

#include <cmath>

using namespace draftscope;
using namespace testsupport;

namespace {

const TensorStats* stats(const CheckpointInspection& r, const std::string& name) {
    for (const auto& t : r.tensors)
        if (t.name == name) return &t;
    return nullptr;
}

struct Moments {
    double mean = 0, rms = 0, maxAbs = 0;
};
Moments moments(const std::vector<float>& v) {
    Moments m;
    for (float x : v) {
        m.mean += x;
        m.rms += static_cast<double>(x) * x;
        m.maxAbs = std::max(m.maxAbs, static_cast<double>(std::fabs(x)));
    }
    m.mean /= static_cast<double>(v.size());
    m.rms = std::sqrt(m.rms / static_cast<double>(v.size()));
    return m;
}

bool near(double a, double b, double tol = 1e-9) { return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b)); }

}  // namespace

class TestInspect : public QObject {
    Q_OBJECT
private slots:
    void drafterStatisticsMatchTheRawValues() {
        const auto r = inspectCheckpoint(demoDrafter());
        QCOMPARE(r.kind, std::string("drafter"));
        QVERIFY(r.missing.empty() && r.mismatched.empty() && r.unexpected.empty());
        const auto st = SafetensorsFile::open(demoDrafter() + "/model.safetensors");
        QCOMPARE(r.tensors.size(), st->tensors().size());
        std::int64_t total = 0;
        for (const auto& info : st->tensors()) {
            total += info.numel();
            const auto* s = stats(r, info.name);
            QVERIFY2(s, info.name.c_str());
            QCOMPARE(s->shape, info.shape);
            QCOMPARE(s->dtype, std::string(dtypeName(info.dtype)));
            const auto m = moments(st->readFloat32(info.name));
            QVERIFY2(near(s->mean, m.mean) && near(s->rms, m.rms) && near(s->maxAbs, m.maxAbs), info.name.c_str());
            QVERIFY(near(s->std * s->std, m.rms * m.rms - m.mean * m.mean, 1e-6));
        }
        QCOMPARE(r.totalParameters, total);
        bool sawMask = false;
        for (const auto& [k, v] : r.configFields) sawMask = sawMask || (k == "dflash_config.mask_token_id" && v == "2047");
        QVERIFY(sawMask);
    }

    void missingAndUnexpectedTensorsAreListed() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString() + "/d";
        std::filesystem::create_directories(dir);
        std::filesystem::copy_file(demoDrafter() + "/config.json", dir + "/config.json");
        const auto st = SafetensorsFile::open(demoDrafter() + "/model.safetensors");
        SafetensorsWriter w;
        for (const auto& info : st->tensors())
            if (info.name != "norm.weight") w.add(info.name, info.dtype, info.shape, st->data(info), info.byteSize());
        w.addFloat32("extra.bias", {3}, {1, 2, 3});
        w.write(dir + "/model.safetensors");
        const auto r = inspectCheckpoint(dir);
        QCOMPARE(r.missing.size(), std::size_t(1));
        QVERIFY(r.missing[0].rfind("norm.weight (expected shape [256])", 0) == 0);
        QCOMPARE(r.unexpected, std::vector<std::string>{"extra.bias"});
        const auto* e = stats(r, "extra.bias");
        QVERIFY(e);
        QCOMPARE(e->mean, 2.0);
        QVERIFY(near(e->std, std::sqrt(2.0 / 3.0)));
    }

    void drafterAttentionLayoutIsShown() {
        QCOMPARE(inspectCheckpoint(drafterDir("drafter-swa")).attentionLayout, std::string("sliding 24 causal, full bidirectional"));
        QCOMPARE(inspectCheckpoint(demoDrafter()).attentionLayout, std::string("2 x full bidirectional"));
        QVERIFY(inspectCheckpoint(demoTarget()).attentionLayout.empty());
    }

    void targetMatchesItsArchitecture() {
        const auto r = inspectCheckpoint(demoTarget());
        QCOMPARE(r.kind, std::string("target"));
        QVERIFY(r.missing.empty() && r.mismatched.empty());
        QVERIFY(r.totalParameters > 0);
    }

    void trainingCheckpointIsInspected() {
        const auto pt = inspectCheckpoint(unpackedDataPath("pt/trainer.pt"));
        const auto dir = inspectCheckpoint(demoDrafter());
        QVERIFY(pt.source.find("module._orig_mod.") != std::string::npos);
        QCOMPARE(pt.kind, std::string("drafter"));
        QCOMPARE(pt.tensors.size(), dir.tensors.size());
        for (std::size_t i = 0; i < pt.tensors.size(); ++i) {
            QCOMPARE(pt.tensors[i].name, dir.tensors[i].name);
            QCOMPARE(pt.tensors[i].rms, dir.tensors[i].rms);
        }
    }

    void diffOfTwoDrafters() {
        const auto self = diffCheckpoints(demoDrafter(), demoDrafter());
        for (const auto& t : self.common) {
            QCOMPARE(t.maxAbsDiff, 0.0);
            QCOMPARE(t.relativeDiff, 0.0);
            QVERIFY(near(t.cosine, 1.0, 1e-12));
        }
        const std::string other = drafterDir("drafter-label-shift");
        const auto d = diffCheckpoints(demoDrafter(), other);
        QVERIFY(d.onlyA.empty() && d.onlyB.empty());
        const auto a = SafetensorsFile::open(demoDrafter() + "/model.safetensors");
        const auto b = SafetensorsFile::open(other + "/model.safetensors");
        for (const auto& t : d.common) {
            const auto x = a->readFloat32(t.name), y = b->readFloat32(t.name);
            double nd = 0, ny = 0, dot = 0, nx = 0, mx = 0;
            for (std::size_t i = 0; i < x.size(); ++i) {
                const double df = static_cast<double>(x[i]) - y[i];
                nd += df * df;
                ny += static_cast<double>(y[i]) * y[i];
                nx += static_cast<double>(x[i]) * x[i];
                dot += static_cast<double>(x[i]) * y[i];
                mx = std::max(mx, std::fabs(df));
            }
            QVERIFY2(near(t.relativeDiff, std::sqrt(nd / ny), 1e-9), t.name.c_str());
            QVERIFY2(near(t.cosine, dot / std::sqrt(nx * ny), 1e-9), t.name.c_str());
            QCOMPARE(t.maxAbsDiff, mx);
        }
        for (std::size_t i = 1; i < d.common.size(); ++i) QVERIFY(d.common[i - 1].relativeDiff >= d.common[i].relativeDiff);
    }

    void missingPathIsAClearError() {
        try {
            inspectCheckpoint("/nonexistent/ckpt");
            QFAIL("no error");
        } catch (const Error& e) {
            QVERIFY(std::string(e.what()).find("/nonexistent/ckpt") != std::string::npos);
        }
    }

    // The text-only and vision-language layouts of the tiny Qwen3.5 load to the same model.
    void targetLoadsCompareLayerByLayer() {
        auto p = idsPrompt({1, 5, 9, 200, 31, 7});
        Engine a, b;
        a.loadTarget(dataPath("models/qwen3_5-tiny-causallm"));
        b.loadTarget(unpackedDataPath("models/qwen3_5-tiny-vlm"));
        const auto c = compareTargetForwards(a.forward(p), b.forward(p));
        QCOMPARE(c.layers.size(), std::size_t(5));
        for (const auto& l : c.layers) {
            QCOMPARE(l.maxAbs, 0.0);
            QCOMPARE(l.cosine.size(), p.ids.size());
            QVERIFY(near(l.minCosine, 1.0, 1e-9));
        }
        QCOMPARE(c.argmaxAgreement, 1.0);
        // float32 against bfloat16 of the demo target: close, not equal.
        Engine f, h;
        f.loadTarget(demoTarget());
        LoadOptions bf;
        bf.dtype = "bfloat16";
        h.loadTarget(demoTarget(), bf);
        const auto d = compareTargetForwards(f.forward(p), h.forward(p));
        QVERIFY(d.layers.back().maxAbs > 0);
        QVERIFY(d.layers.back().minCosine > 0.98);
        QVERIFY(d.layers.back().minCosine < 1.0);
        // Different models are refused with the reason.
        try {
            compareTargetForwards(a.forward(p), f.forward(p));
            QFAIL("no error");
        } catch (const Error& e) {
            QVERIFY(std::string(e.what()).find("differ in") != std::string::npos);
        }
    }

    void compareCliMatchesSingleRuns() {
        QTemporaryDir tmp;
        const QString json = tmp.path() + "/c.json";
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"compare", "--target", QString::fromStdString(demoTarget()), "--drafter",
                                 QString::fromStdString(demoDrafter()), "--drafter",
                                 QString::fromStdString(drafterDir("drafter-anchor-leak")), "--prompt",
                                 "def fibonacci(n):\n", "--max-new", "32", "--ignore-eos", "--json", json});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 0);
        const auto j = readJson(json.toStdString());
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        e.loadDrafter(drafterDir("drafter-anchor-leak"));
        PromptSpec spec;
        spec.text = "def fibonacci(n):\n";
        RunSettings s;
        s.maxNewTokens = 32;
        s.ignoreEos = true;
        for (int k = 0; k < 2; ++k) {
            s.drafter = k;
            const auto r = e.run(spec, s);
            QCOMPARE(j["macro_tau"][k].get<double>(), r.tau);
        }
        QVERIFY(j["prompts"][0]["outputs_identical"].get<bool>());
    }
};

QTEST_GUILESS_MAIN(TestInspect)
#include "tst_inspect.moc"
