// MoE targets: Qwen3-MoE (dense attention + sparse MoE), Qwen3-Next (fused-projection Gated
// DeltaNet + gated attention + MoE with a gated shared expert) and Qwen3.5-MoE (Qwen3.5 hybrid
// + MoE with a gated shared expert). Prefill hidden states and logits, three cached
// single-token decode steps and a cached 6-token verify block against HF transformers 5.17
// goldens (tests/data/moe_goldens.safetensors, made by tools/make_moe_fixtures.py; max abs
// diff within 1e-4 of the golden's max abs), DFlash on the hybrid-MoE targets equal to greedy
// decoding, the fused expert layout equal to the per-expert one, and clear errors for bad
// MoE configs and checkpoints.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "test_support.h"

#include <QtTest>

#include <random>

using namespace draftscope;
using namespace testsupport;

namespace {

const draftscope::SafetensorsFile& moeGoldens() {
    static const auto f = draftscope::SafetensorsFile::open(dataPath("moe_goldens.safetensors"));
    return *f;
}

/// A random drafter for the tiny MoE targets (hidden 64, V 512).
const RandomDrafterShape kDrafterShape{64, 16, 128, 512};

std::string modelDir(const std::string& name) { return dataPath("models/" + name); }

std::vector<float> rows(const std::vector<float>& x, std::size_t width, std::size_t from, std::size_t count) {
    return {x.begin() + static_cast<std::ptrdiff_t>(from * width),
            x.begin() + static_cast<std::ptrdiff_t>((from + count) * width)};
}

/// The golden sequence of model `m` as forwardSteps chunks: prefill, 3 decode steps, one
/// 6-token block.
std::vector<std::vector<std::int64_t>> goldenChunks(const std::string& m) {
    const auto ids = moeGoldens().readInt64(m + ".input_ids");
    const auto extra = moeGoldens().readInt64(m + ".extra_ids");
    return {ids, {extra[0]}, {extra[1]}, {extra[2]}, {extra.begin() + 3, extra.end()}};
}



}  // namespace

class TestMoeTargets : public QObject {
    Q_OBJECT

private slots:
    void loads_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("architecture");
        QTest::addColumn<int>("layers");
        QTest::newRow("qwen3-moe") << "tiny-qwen3-moe" << "Qwen3MoeForCausalLM" << 2;
        QTest::newRow("qwen3-next") << "tiny-qwen3-next" << "Qwen3NextForCausalLM" << 4;
        QTest::newRow("qwen3_5-moe") << "tiny-qwen3_5-moe" << "Qwen3_5MoeForCausalLM" << 4;
    }
    void loads() {
        QFETCH(QString, model);
        QFETCH(QString, architecture);
        QFETCH(int, layers);
        Engine e;
        const auto s = e.loadTarget(modelDir(model.toStdString()));
        QCOMPARE(QString::fromStdString(s.architecture), architecture);
        QCOMPARE(static_cast<int>(s.layerTypes.size()), layers);
        QVERIFY(s.unexpectedTensors.empty());
        QVERIFY(s.ignoredTensors.empty());
    }

    void matchesGoldens_data() {
        QTest::addColumn<QString>("model");
        QTest::newRow("qwen3-moe") << "tiny-qwen3-moe";
        QTest::newRow("qwen3-next") << "tiny-qwen3-next";
        QTest::newRow("qwen3_5-moe") << "tiny-qwen3_5-moe";
    }
    void matchesGoldens() {
        QFETCH(QString, model);
        const auto m = model.toStdString();
        Engine e;
        e.loadTarget(modelDir(m));
        auto p = idsPrompt(moeGoldens().readInt64(m + ".input_ids"));
        const auto r = e.forward(p);
        const double eh = relativeMaxError(r.hiddenStates, moeGoldens().readFloat32(m + ".hidden_states"));
        const double el = relativeMaxError(r.logits, moeGoldens().readFloat32(m + ".logits"));

        const auto steps = e.forwardSteps(goldenChunks(m));
        QCOMPARE(steps.size(), std::size_t(5));
        const auto V = static_cast<std::size_t>(steps[0].vocabSize);
        const double ep = relativeMaxError(steps[0].logits, moeGoldens().readFloat32(m + ".logits"));
        const auto decodeGolden = moeGoldens().readFloat32(m + ".decode_logits");
        double ed = 0;
        for (std::size_t i = 0; i < 3; ++i)
            ed = std::max(ed, relativeMaxError(steps[i + 1].logits, rows(decodeGolden, V, i, 1)));
        const double ev = relativeMaxError(steps[4].logits, moeGoldens().readFloat32(m + ".verify_logits"));
        qInfo("%s: prefill hidden %.3g, logits %.3g; steps: prefill %.3g, decode %.3g, verify %.3g", m.c_str(), eh,
              el, ep, ed, ev);
        for (double err : {eh, el, ep, ed, ev}) QVERIFY2(err <= 1e-4, qPrintable(QString::number(err)));
    }

    void fusedExpertLayoutIsIdentical_data() {
        QTest::addColumn<QString>("model");
        QTest::newRow("qwen3-moe") << "tiny-qwen3-moe";
        QTest::newRow("qwen3_5-moe") << "tiny-qwen3_5-moe";
    }
    void fusedExpertLayoutIsIdentical() {
        // The same weights with experts stored as HF 5.x keeps them in memory:
        // gate_up_proj [E, 2I, H] (gate rows first) and down_proj [E, H, I].
        QFETCH(QString, model);
        const auto m = model.toStdString();
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString() + "/fused";
        const auto cfg = readJson(modelDir(m) + "/config.json");
        const std::int64_t E = cfg.contains("num_experts") ? cfg["num_experts"].get<std::int64_t>()
                                                            : cfg["num_local_experts"].get<std::int64_t>();
        const auto L = cfg["num_hidden_layers"].get<std::int64_t>();
        const std::int64_t H = cfg["hidden_size"], I = cfg["moe_intermediate_size"];
        rewriteCheckpoint(modelDir(m), dir, [&](const SafetensorsFile& f, SafetensorsWriter& w) {
            for (const auto& t : f.tensors())
                if (t.name.find(".mlp.experts.") == std::string::npos)
                    w.add(t.name, t.dtype, t.shape, f.data(t), t.byteSize());
            for (std::int64_t l = 0; l < L; ++l) {
                const auto p = "model.layers." + std::to_string(l) + ".mlp.experts.";
                std::vector<float> gateUp, down;
                for (std::int64_t e = 0; e < E; ++e) {
                    const auto ep = p + std::to_string(e) + ".";
                    for (const char* n : {"gate_proj", "up_proj"}) {
                        const auto v = f.readFloat32(ep + n + ".weight");
                        gateUp.insert(gateUp.end(), v.begin(), v.end());
                    }
                    const auto d = f.readFloat32(ep + "down_proj.weight");
                    down.insert(down.end(), d.begin(), d.end());
                }
                w.addFloat32(p + "gate_up_proj", {E, 2 * I, H}, gateUp);
                w.addFloat32(p + "down_proj", {E, H, I}, down);
            }
        });
        Engine a, b;
        a.loadTarget(modelDir(m));
        const auto s = b.loadTarget(dir);
        QVERIFY(s.unexpectedTensors.empty());
        const auto ra = a.forwardSteps(goldenChunks(m));
        const auto rb = b.forwardSteps(goldenChunks(m));
        QCOMPARE(ra.size(), rb.size());
        for (std::size_t i = 0; i < ra.size(); ++i) QCOMPARE(ra[i].logits, rb[i].logits);
    }

    void dflashEqualsGreedy_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("blockSize");
        QTest::addColumn<int>("promptLength");
        QTest::newRow("qwen3-next-B4") << "tiny-qwen3-next" << 4 << 7;
        QTest::newRow("qwen3-next-B8") << "tiny-qwen3-next" << 8 << 40;
        QTest::newRow("qwen3_5-moe-B4") << "tiny-qwen3_5-moe" << 4 << 7;
        QTest::newRow("qwen3_5-moe-B8") << "tiny-qwen3_5-moe" << 8 << 40;
    }
    void dflashEqualsGreedy() {
        QFETCH(QString, model);
        QFETCH(int, blockSize);
        QFETCH(int, promptLength);
        const auto m = model.toStdString();
        QTemporaryDir tmp;
        const auto drafterDir = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafterDir, kDrafterShape, blockSize, static_cast<std::uint32_t>(blockSize + promptLength));
        Engine e;
        e.loadTarget(modelDir(m));
        e.loadDrafter(drafterDir);
        PromptSpec p;
        p.kind = PromptSpec::Kind::Ids;
        const auto ids = moeGoldens().readInt64(m + ".input_ids");
        p.ids.assign(ids.begin(), ids.begin() + promptLength);
        RunSettings s;
        s.maxNewTokens = 32;
        s.ignoreEos = true;
        const auto run = e.run(p, s);
        const auto greedy = e.greedy(p, 32, /*ignoreEos=*/true);
        QCOMPARE(run.outputIds.size(), std::size_t(promptLength + 32));
        QCOMPARE(run.outputIds, greedy);
        int rollbacks = 0;
        for (int len : run.acceptanceLengths) rollbacks += len < blockSize;
        qInfo("%s B=%d: %zu steps, tau %.3f, %d rolled back", m.c_str(), blockSize, run.acceptanceLengths.size(),
              run.tau, rollbacks);
        QVERIFY(rollbacks > 0);
    }

    void topKAboveExpertCountIsRejected() {
        QTemporaryDir tmp;
        const auto dir = copyModel(modelDir("tiny-qwen3-moe"), tmp.path().toStdString() + "/m");
        auto c = readJson(dir + "/config.json");
        c["num_experts_per_tok"] = 9;  // 8 experts
        writeJson(dir + "/config.json", c);
        Engine e;
        const auto msg = errorOf([&] { e.loadTarget(dir); });
        QVERIFY2(msg.contains("num_experts_per_tok (9)") && msg.contains("(8)"), qPrintable(msg));
    }

    void missingExpertTensorIsNamed() {
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString() + "/m";
        const std::string dropped = "model.layers.1.mlp.experts.5.up_proj.weight";
        rewriteCheckpoint(modelDir("tiny-qwen3-next"), dir, [&](const SafetensorsFile& f, SafetensorsWriter& w) {
            for (const auto& t : f.tensors())
                if (t.name != dropped) w.add(t.name, t.dtype, t.shape, f.data(t), t.byteSize());
        });
        Engine e;
        const auto msg = errorOf([&] { e.loadTarget(dir); });
        QVERIFY2(msg.contains("missing") && msg.contains(QString::fromStdString(dropped)), qPrintable(msg));
    }

    void expertCountMismatchIsNamed() {
        // config says 16 experts, checkpoint has 8: the router shape and experts 8..15 are named.
        QTemporaryDir tmp;
        const auto dir = copyModel(modelDir("tiny-qwen3_5-moe"), tmp.path().toStdString() + "/m");
        auto c = readJson(dir + "/config.json");
        c["num_experts"] = 16;
        writeJson(dir + "/config.json", c);
        Engine e;
        const auto msg = errorOf([&] { e.loadTarget(dir); });
        QVERIFY2(msg.contains("mlp.experts.8.") && msg.contains("mlp.gate.weight"), qPrintable(msg));
    }
};

QTEST_GUILESS_MAIN(TestMoeTargets)
#include "tst_moe_targets.moc"
