// Drafter layouts of late 2026 (DFLASH.md sections 9 and 11): sliding-window and causal
// layers, ModelOpt use_swa exports and YaRN RoPE, against the variant goldens made with the
// newest official z-lab drafter code (tests/data/FIXTURES.md, variant_goldens.json).

#include "draftscope/engine.h"
#include "test_support.h"

#include <QtTest>

using namespace draftscope;
using namespace testsupport;

namespace {

const char* const kVariantDrafters[] = {"drafter-swa", "drafter-modelopt-swa", "drafter-yarn"};

LoadOptions withDtype(const std::string& dtype) {
    LoadOptions o;
    o.dtype = dtype;
    return o;
}

/// One 96-token run of `drafterPath` on golden prompt `prompt` with reference revision
/// `loop` (its loop and its drafter rotary numerics); `stopAtEos` lets eos (2044) stop the
/// run (the `current_eos` goldens), else eos is ignored.
RunResult runLoop(const std::string& drafterPath, int prompt, LoopRevision loop, bool stopAtEos = false) {
    Engine engine;
    engine.loadTarget(demoTarget());
    engine.loadDrafter(drafterPath);
    RunSettings s;
    s.maxNewTokens = 96;
    s.loop = loop;
    s.ignoreEos = !stopAtEos;
    return engine.run(goldenPrompt(prompt), s);
}

}  // namespace

class TestDrafterLayouts : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    /// A copy of `drafter` whose config is rewritten to the base layout (every layer full
    /// attention, bidirectional, no window): what a loader that ignores the layout runs.
    std::string layoutIgnoredCopy(const std::string& drafter) {
        const auto dir = copyModel(drafterDir(drafter), tmp_.path().toStdString() + "/" + drafter + "-ignored");
        auto j = readJson(dir + "/config.json");
        j["layer_types"] = std::vector<std::string>(j["num_hidden_layers"].get<std::size_t>(), "full_attention");
        j["use_sliding_window"] = false;
        j.erase("is_causal");
        for (const char* k : {"use_swa", "swa_window_size", "causal"}) j["dflash_config"].erase(k);
        writeJson(dir + "/config.json", j);
        return dir;
    }

private slots:
    void variantPromptsAreTheGoldenPrompts() {
        // The variant goldens were made on the same prompt ids the other suites use.
        for (int p = 0; p < 4; ++p)
            QCOMPARE(variantGoldens()["prompt_ids"][std::to_string(p)].get<std::vector<std::int64_t>>(), promptIds(p));
    }

    void draftLogits_data() {
        QTest::addColumn<QString>("drafter");
        for (const char* d : kVariantDrafters) QTest::newRow(d) << QString(d);
    }
    void draftLogits() {
        // One drafter call: context = all prompt-0 features, block [anchor, MASK x15] at T..T+B-1.
        // The variant goldens come from the newest official drafter code: the current
        // revision, whose rotary inv_freq stays float32 (docs/ENGINE.md, "Drafter call").
        QFETCH(QString, drafter);
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(drafterDir(drafter.toStdString()));
        const auto r = engine.draftBlock(goldenPrompt(0), LoopRevision::Current);
        const auto key = "p0." + drafter.toStdString() + ".draft_logits";
        const auto& info = variantTensors().at(key);
        QCOMPARE(info.shape, (std::vector<std::int64_t>{r.blockSize - 1, r.vocabSize}));
        const auto ref = variantTensors().readFloat32(key);
        const double err = relativeMaxError(r.draftLogits, ref);
        qInfo("%s: draft_logits rel err %.3g", qPrintable(drafter), err);
        QVERIFY2(err <= 1e-4, qPrintable(QString("draft_logits rel err %1").arg(err)));
        // The 2026-04 revision rounds inv_freq through the bf16 checkpoint dtype (goldens.json):
        // visible at this tolerance, on the same loaded drafter.
        QVERIFY(relativeMaxError(engine.draftBlock(goldenPrompt(0), LoopRevision::April2026).draftLogits, ref) > 1e-4);
    }

    void float32CheckpointRoundsNothing() {
        // The April rounding comes from the checkpoint dtype: a drafter whose config says
        // float32 is loaded in float32 by the April reference too, so both revisions give
        // the same drafter call bit for bit; the bf16 original differs between them.
        const auto dir = copyModel(drafterDir("drafter-swa"), tmp_.path().toStdString() + "/drafter-swa-f32");
        auto j = readJson(dir + "/config.json");
        j["dtype"] = "float32";
        writeJson(dir + "/config.json", j);
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(dir);
        engine.loadDrafter(drafterDir("drafter-swa"));
        const auto current = engine.draftBlock(goldenPrompt(0), LoopRevision::Current, 0).draftLogits;
        QCOMPARE(engine.draftBlock(goldenPrompt(0), LoopRevision::April2026, 0).draftLogits, current);
        QCOMPARE(engine.draftBlock(goldenPrompt(0), LoopRevision::Current, 1).draftLogits, current);
        QVERIFY(engine.draftBlock(goldenPrompt(0), LoopRevision::April2026, 1).draftLogits != current);
    }

    void draftLogitsBfloat16() {
        // bfloat16 runs the same masks; it stays near the float32 reference and keeps its argmax
        // on most rows (bf16 rounding only).
        for (const char* drafter : {"drafter-swa", "drafter-modelopt-swa"}) {
            Engine engine;
            engine.loadTarget(demoTarget(), withDtype("bfloat16"));
            engine.loadDrafter(drafterDir(drafter));
            const auto r = engine.draftBlock(goldenPrompt(0), LoopRevision::Current);
            const auto ref = variantTensors().readFloat32(std::string("p0.") + drafter + ".draft_logits");
            const double err = relativeMaxError(r.draftLogits, ref);
            qInfo("%s bf16: draft_logits rel err %.3g", drafter, err);
            QVERIFY2(err <= 3e-2, qPrintable(QString("%1 bf16 rel err %2").arg(drafter).arg(err)));
            const auto V = static_cast<std::size_t>(r.vocabSize);
            int agree = 0;
            for (std::size_t row = 0; row + 1 < static_cast<std::size_t>(r.blockSize); ++row) {
                const auto a = r.draftLogits.begin() + static_cast<std::ptrdiff_t>(row * V);
                const auto b = ref.begin() + static_cast<std::ptrdiff_t>(row * V);
                agree += std::max_element(a, a + V) - a == std::max_element(b, b + V) - b;
            }
            QVERIFY2(agree >= 13, qPrintable(QString("%1 bf16: argmax agrees on %2 of 15 rows").arg(drafter).arg(agree)));
        }
    }

    void scalingKeys() {
        // output_multiplier m then final_logit_softcapping c: logits = tanh(m * l / c) * c,
        // l the plain draft logits; input_embedding_scale 1 is the identity, 2 changes the call.
        const auto variant = [&](const std::string& name, const nlohmann::json& extra) {
            const auto dir = copyModel(demoDrafter(), tmp_.path().toStdString() + "/" + name);
            auto j = readJson(dir + "/config.json");
            for (const auto& [k, v] : extra.items()) j["dflash_config"][k] = v;
            writeJson(dir + "/config.json", j);
            Engine engine;
            engine.loadTarget(demoTarget());
            engine.loadDrafter(dir);
            return engine.draftBlock(goldenPrompt(1), LoopRevision::Current).draftLogits;
        };
        const auto base = variant("plain", nlohmann::json::object());
        const auto scaled = variant("scaled", {{"output_multiplier", 2.0}, {"final_logit_softcapping", 5.0}});
        QCOMPARE(scaled.size(), base.size());
        double worst = 0;
        for (std::size_t i = 0; i < base.size(); ++i)
            worst = std::max(worst, std::fabs(scaled[i] - std::tanh(2.0 * base[i] / 5.0) * 5.0));
        QVERIFY2(worst < 1e-5, qPrintable(QString("max deviation %1").arg(worst)));
        QCOMPARE(variant("unit-scale", {{"input_embedding_scale", 1.0}}), base);
        QVERIFY(relativeMaxError(variant("double-scale", {{"input_embedding_scale", 2.0}}), base) > 1e-3);
    }

    void aprilLoop_data() {
        QTest::addColumn<QString>("drafter");
        QTest::addColumn<int>("prompt");
        for (const char* d : kVariantDrafters)
            for (int p = 0; p < 4; ++p) QTest::newRow(qPrintable(QString("%1.p%2").arg(d).arg(p))) << QString(d) << p;
    }
    void aprilLoop() {
        // The 2026-04 loop (DFLASH.md section 4) with the per-layer masks: exact ids and lengths.
        QFETCH(QString, drafter);
        QFETCH(int, prompt);
        const auto r = runLoop(drafterDir(drafter.toStdString()), prompt, LoopRevision::April2026);
        const auto& g = variantGoldens()["2026-04"][drafter.toStdString() + ".p" + std::to_string(prompt)];
        QCOMPARE(r.outputIds, g["output_ids"].get<std::vector<std::int64_t>>());
        QCOMPARE(r.acceptanceLengths, g["acceptance_lengths"].get<std::vector<int>>());
    }

    void currentLoop_data() {
        QTest::addColumn<QString>("drafter");
        QTest::addColumn<int>("prompt");
        QTest::addColumn<bool>("stopAtEos");
        for (const char* d : kVariantDrafters)
            for (int p = 0; p < 4; ++p)
                for (bool eos : {false, true})
                    QTest::newRow(qPrintable(QString("%1.p%2%3").arg(d).arg(p).arg(eos ? ".eos" : "")))
                        << QString(d) << p << eos;
    }
    void currentLoop() {
        // The current official loop (DFLASH.md section 10) with the per-layer masks: `current`
        // (eos ignored) and `current_eos` (eos 2044 stops the run), exact ids and lengths.
        QFETCH(QString, drafter);
        QFETCH(int, prompt);
        QFETCH(bool, stopAtEos);
        const auto r = runLoop(drafterDir(drafter.toStdString()), prompt, LoopRevision::Current, stopAtEos);
        const auto& g = variantGoldens()[stopAtEos ? "current_eos" : "current"][drafter.toStdString() + ".p" +
                                                                              std::to_string(prompt)];
        QCOMPARE(r.outputIds, g["output_ids"].get<std::vector<std::int64_t>>());
        QCOMPARE(r.acceptanceLengths, g["acceptance_lengths"].get<std::vector<int>>());
    }

    void ignoringTheLayoutGivesTheLayoutIgnoredLengths_data() {
        QTest::addColumn<QString>("drafter");
        QTest::addColumn<int>("prompt");
        for (const char* d : {"drafter-swa", "drafter-modelopt-swa"})
            for (int p : {0, 2}) QTest::newRow(qPrintable(QString("%1.p%2").arg(d).arg(p))) << QString(d) << p;
    }
    void ignoringTheLayoutGivesTheLayoutIgnoredLengths() {
        // `layout_ignored` holds the current loop's lengths when every layer runs full and
        // bidirectional: a copy of the drafter with the layout keys removed must give them
        // exactly, and honouring the layout must give the reference's (different) lengths.
        QFETCH(QString, drafter);
        QFETCH(int, prompt);
        const auto name = drafter.toStdString() + ".p" + std::to_string(prompt);
        const auto ignored = runLoop(layoutIgnoredCopy(drafter.toStdString()), prompt, LoopRevision::Current);
        QCOMPARE(ignored.acceptanceLengths, variantGoldens()["layout_ignored"][name].get<std::vector<int>>());
        const auto honoured = variantGoldens()["current"][name]["acceptance_lengths"].get<std::vector<int>>();
        QVERIFY(ignored.acceptanceLengths != honoured);
    }
};

QTEST_GUILESS_MAIN(TestDrafterLayouts)
#include "tst_drafter_layouts.moc"
