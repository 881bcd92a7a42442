// Drafters in the vllm-project/speculators format (DFLASH.md section 12; docs/ENGINE.md
// "Drafter families"): the same weights as a z-lab drafter, converted the way speculators'
// `convert/dflash` converter does (taps + 1, the body nested in transformer_layer_config with
// HF Qwen3Config defaults left out, the target's embed_tokens and lm_head copied in), must
// reproduce the z-lab drafter's goldens exactly; a reduced draft vocabulary (d2t) maps draft
// rows to target ids; bad maps and unimplemented layouts are refused by name.

#include "draftscope/engine.h"
#include "draftscope/inspector.h"
#include "speculators_support.h"
#include "test_support.h"

#include <QtTest>

#include <cmath>
#include <filesystem>

using namespace draftscope;
using namespace testsupport;

namespace {

std::string dflash2Demo() { return unpackedDataPath("models/dflash2-demo"); }

}  // namespace

class TestSpeculators : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::string dir(const std::string& name) const { return tmp_.path().toStdString() + "/" + name; }

private slots:
    void initTestCase() {
        writeSpeculators(demoDrafter(), dir("dflash"));
        writeSpeculators(dflash2Demo(), dir("dflash2"));
    }

    void summaryAndInspectorNameTheFormat() {
        Engine engine;
        engine.loadTarget(demoTarget());
        const auto s = engine.loadDrafter(dir("dflash"));
        QCOMPARE(s.family, std::string("DFlash"));
        QVERIFY2(s.familyDetail.find("speculators format") != std::string::npos, s.familyDetail.c_str());
        QCOMPARE(s.targetLayerIds, (std::vector<std::int64_t>{1, 2, 4}));  // aux [2, 3, 5] - 1
        QCOMPARE(s.blockSize, std::int64_t{16});
        QVERIFY(s.unexpectedTensors.empty() && s.ignoredTensors.empty());
        const auto r = inspectCheckpoint(dir("dflash2"));
        QCOMPARE(r.family, std::string("DFlash2"));
        QVERIFY2(r.familyDetail.find("speculators format") != std::string::npos &&
                     r.familyDetail.find("candidate selector") != std::string::npos,
                 r.familyDetail.c_str());
        QVERIFY(r.missing.empty() && r.mismatched.empty() && r.unexpected.empty());
    }

    void dflashReproducesTheZLabGoldens_data() {
        QTest::addColumn<int>("prompt");
        for (int p : {0, 2}) QTest::newRow(qPrintable(QString("p%1").arg(p))) << p;
    }
    void dflashReproducesTheZLabGoldens() {
        // Own embed_tokens / lm_head equal to the target's: the current loop's goldens of the
        // z-lab demo drafter, and the same drafter call bit for bit.
        QFETCH(int, prompt);
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(dir("dflash"));
        engine.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 96;
        s.ignoreEos = true;
        const auto r = engine.run(goldenPrompt(prompt), s);
        const auto& g = variantGoldens()["current"]["drafter-good.p" + std::to_string(prompt)];
        QCOMPARE(r.outputIds, g["output_ids"].get<std::vector<std::int64_t>>());
        QCOMPARE(r.acceptanceLengths, g["acceptance_lengths"].get<std::vector<int>>());
        QCOMPARE(engine.draftBlock(goldenPrompt(prompt), LoopRevision::Current, 0).draftLogits,
                 engine.draftBlock(goldenPrompt(prompt), LoopRevision::Current, 1).draftLogits);
    }

    void dflash2ReproducesTheReferenceGoldens() {
        // speculators' dflash2 layout (conv and selector keys at the top level) of the DFlash2
        // demo drafter: the reference's goldens (tests/data/dflash2_goldens.json).
        const auto g = nlohmann::json::parse(readFileToString(dataPath("dflash2_goldens.json")))["generate"]["dflash2-demo.p0"];
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(dir("dflash2"));
        RunSettings s;
        s.maxNewTokens = 96;
        s.ignoreEos = true;
        const auto r = engine.run(goldenPrompt(0), s);
        QCOMPARE(r.outputIds, g["output_ids"].get<std::vector<std::int64_t>>());
        QCOMPARE(r.acceptanceLengths, g["acceptance_lengths"].get<std::vector<int>>());
        QCOMPARE(r.steps.front().drafted, g["steps"][0]["proposals"].get<std::vector<std::int64_t>>());
    }

    void reducedDraftVocabularyMapsRowsToTargetIds() {
        // Draft vocabulary: every target id not divisible by 3 (1365 of 2048). Row d is target
        // token d + d2t[d]: the logits there equal the full head's, every other id is -inf,
        // no drafted token is outside it, and the greedy output is still the target's.
        std::vector<std::int64_t> ids;
        for (std::int64_t t = 0; t < 2048; ++t)
            if (t % 3) ids.push_back(t);
        writeSpeculators(demoDrafter(), dir("reduced"), ids);
        Engine engine;
        engine.loadTarget(demoTarget());
        const auto summary = engine.loadDrafter(dir("reduced"));
        QVERIFY2(summary.familyDetail.find("draft vocabulary 1365 of 2048") != std::string::npos, summary.familyDetail.c_str());
        engine.loadDrafter(dir("dflash"));
        const auto reduced = engine.draftBlock(goldenPrompt(1), LoopRevision::Current, 0).draftLogits;
        const auto full = engine.draftBlock(goldenPrompt(1), LoopRevision::Current, 1).draftLogits;
        QCOMPARE(reduced.size(), full.size());
        for (std::size_t i = 0; i < full.size(); ++i) {
            const auto t = static_cast<std::int64_t>(i % 2048);
            if (t % 3) QCOMPARE(reduced[i], full[i]);
            else QVERIFY2(std::isinf(reduced[i]) && reduced[i] < 0, qPrintable(QString("id %1 not -inf").arg(t)));
        }
        RunSettings s;
        s.maxNewTokens = 48;
        s.ignoreEos = true;
        const auto r = engine.run(goldenPrompt(1), s);
        QCOMPARE(r.outputIds, engine.greedy(goldenPrompt(1), 48, true));
        for (const auto& st : r.steps)
            for (auto t : st.drafted) QVERIFY2(t % 3, qPrintable(QString("drafted %1, outside the draft vocabulary").arg(t)));
    }

    void badMapsAndLayoutsAreRefusedByName() {
        Engine engine;
        engine.loadTarget(demoTarget());
        auto refused = [&](const std::string& name, const std::vector<std::int64_t>& ids,
                           const std::function<void(nlohmann::json&)>& edit, const QString& expect) {
            writeSpeculators(demoDrafter(), dir(name), ids, edit);
            const auto e = errorOf([&] { engine.loadDrafter(dir(name)); });
            QVERIFY2(e.contains(expect), qPrintable(name.c_str() + QString(": ") + e));
        };
        std::vector<std::int64_t> some = {1, 5, 9};
        // A dspark config over a checkpoint without its heads: the missing heads are named.
        refused("dspark", {}, [](nlohmann::json& c) {
            c["speculators_model_type"] = "dspark";
            c["architectures"] = {"DSparkSpeculator"};
        }, "markov_head.markov_w1.weight");
        refused("logit-scale", {}, [](nlohmann::json& c) { c["logit_scale"] = 0.5; }, "logit_scale = 0.5");
        refused("llama-body", {}, [](nlohmann::json& c) { c["transformer_layer_config"]["model_type"] = "llama"; },
                "transformer_layer_config.model_type 'llama'");
        refused("aux-zero", {}, [](nlohmann::json& c) { c["aux_hidden_state_layer_ids"] = {0, 3}; }, "the embedding output");
        refused("vocab-count", some, [](nlohmann::json& c) { c["draft_vocab_size"] = 4; }, "lm_head.weight");
        refused("no-block-tensor", {}, [](nlohmann::json& c) { c.erase("transformer_layer_config"); }, "transformer_layer_config");
        // d2t written by hand: out of range, and two draft rows on one target id.
        writeSpeculators(demoDrafter(), dir("d2t-range"), some);
        {
            SafetensorsWriter w;
            const auto f = SafetensorsFile::open(dir("d2t-range") + "/model.safetensors");
            for (const auto& t : f->tensors())
                if (t.name == "d2t") w.addInt64("d2t", {3}, {1, 5000, 7});
                else if (t.name != "t2d") w.add(t.name, t.dtype, t.shape, f->data(t), t.byteSize());
            w.write(dir("d2t-range") + "/model.safetensors.new");
        }
        std::filesystem::rename(dir("d2t-range") + "/model.safetensors.new", dir("d2t-range") + "/model.safetensors");
        auto e = errorOf([&] { engine.loadDrafter(dir("d2t-range")); });
        QVERIFY2(e.contains("d2t[1] = 5000") && e.contains("outside the target's vocabulary"), qPrintable(e));
        writeSpeculators(demoDrafter(), dir("t2d-wrong"), some);
        {
            SafetensorsWriter w;
            const auto f = SafetensorsFile::open(dir("t2d-wrong") + "/model.safetensors");
            for (const auto& t : f->tensors()) {
                if (t.name != "t2d") {
                    w.add(t.name, t.dtype, t.shape, f->data(t), t.byteSize());
                    continue;
                }
                std::vector<std::uint8_t> mask(2048, 0);
                mask[1] = mask[5] = mask[10] = 1;  // 10 instead of 9
                w.add("t2d", DType::BOOL, {2048}, mask.data(), mask.size());
            }
            w.write(dir("t2d-wrong") + "/model.safetensors.new");
        }
        std::filesystem::rename(dir("t2d-wrong") + "/model.safetensors.new", dir("t2d-wrong") + "/model.safetensors");
        e = errorOf([&] { engine.loadDrafter(dir("t2d-wrong")); });
        QVERIFY2(e.contains("t2d and d2t disagree at target id 9"), qPrintable(e));
        // speculators' DFlash2 requires sample_from_anchor false: refused, not run some other way.
        writeSpeculators(dflash2Demo(), dir("dflash2-anchor"), {}, [](nlohmann::json& c) { c["sample_from_anchor"] = true; });
        e = errorOf([&] { engine.loadDrafter(dir("dflash2-anchor")); });
        QVERIFY2(e.contains("sample_from_anchor is true for a dflash2 drafter"), qPrintable(e));
        QCOMPARE(engine.drafterCount(), 0);
    }
};

QTEST_GUILESS_MAIN(TestSpeculators)
#include "tst_speculators.moc"
