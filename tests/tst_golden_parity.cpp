// Golden parity: the engine against tensors, token ids and acceptance lengths produced by
// HF transformers and the official DFlash code (tests/data/FIXTURES.md).

#include "draftscope/engine.h"
#include "draftscope/file_io.h"
#include "test_support.h"

#include <QtTest>

using namespace draftscope;
using namespace testsupport;

class TestGoldenParity : public QObject {
    Q_OBJECT

    /// tests/data/variant_goldens.json: the current and April loops (tests/data/FIXTURES.md).
    static const nlohmann::json& variantGoldens() {
        static const nlohmann::json j = nlohmann::json::parse(readFileToString(dataPath("variant_goldens.json")));
        return j;
    }

private slots:
    void targetHiddenStatesAndLogits_data() {
        QTest::addColumn<int>("prompt");
        QTest::newRow("p0") << 0;
        QTest::newRow("p1") << 1;
    }
    void targetHiddenStatesAndLogits() {
        QFETCH(int, prompt);
        Engine engine;
        engine.loadTarget(demoTarget());
        const auto r = engine.forward(goldenPrompt(prompt));
        const auto key = std::string("p").append(std::to_string(prompt)).append(".target.");
        const auto& info = goldenTensors().at(key + "hidden_states");
        QCOMPARE(info.shape, (std::vector<std::int64_t>{r.numLayers + 1, static_cast<std::int64_t>(r.ids.size()), r.hiddenSize}));
        const double errHidden = relativeMaxError(r.hiddenStates, goldenTensors().readFloat32(key + "hidden_states"));
        const double errLogits = relativeMaxError(r.logits, goldenTensors().readFloat32(key + "logits"));
        qInfo("p%d: hidden states rel err %.3g, logits rel err %.3g", prompt, errHidden, errLogits);
        QVERIFY2(errHidden <= 1e-4, qPrintable(QString("hidden_states rel err %1").arg(errHidden)));
        QVERIFY2(errLogits <= 1e-4, qPrintable(QString("logits rel err %1").arg(errLogits)));
        // The anchor is the target's greedy next token.
        const auto V = r.vocabSize;
        const auto last = r.logits.begin() + static_cast<std::ptrdiff_t>((r.ids.size() - 1) * V);
        const auto anchor = std::max_element(last, last + V) - last;
        QCOMPARE(static_cast<std::int64_t>(anchor), goldens()[std::string("p").append(std::to_string(prompt)).append(".anchor")].get<std::int64_t>());
    }

    void drafterBlock_data() {
        QTest::addColumn<QString>("drafter");
        QTest::addColumn<int>("prompt");
        for (const char* d : {"drafter-good", "drafter-anchor-leak", "drafter-label-shift"})
            for (int p : {0, 1}) QTest::newRow(qPrintable(QString("%1.p%2").arg(d).arg(p))) << QString(d) << p;
    }
    void drafterBlock() {
        QFETCH(QString, drafter);
        QFETCH(int, prompt);
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(drafterDir(drafter.toStdString()));
        const auto r = engine.draftBlock(goldenPrompt(prompt), LoopRevision::April2026);  // goldens.json: April numerics
        const auto key = std::string("p").append(std::to_string(prompt)).append(".").append(drafter.toStdString()).append(".");
        QCOMPARE(r.anchor, goldens()[std::string("p").append(std::to_string(prompt)).append(".anchor")].get<std::int64_t>());
        const double errHidden = relativeMaxError(r.draftHidden, goldenTensors().readFloat32(key + "draft_hidden"));
        const double errLogits = relativeMaxError(r.draftLogits, goldenTensors().readFloat32(key + "draft_logits"));
        QVERIFY2(errHidden <= 1e-4, qPrintable(QString("draft_hidden rel err %1").arg(errHidden)));
        QVERIFY2(errLogits <= 1e-4, qPrintable(QString("draft_logits rel err %1").arg(errLogits)));
    }

    void dflashGenerate_data() {
        QTest::addColumn<QString>("drafter");
        QTest::addColumn<int>("prompt");
        for (const char* d : {"drafter-good", "drafter-anchor-leak", "drafter-label-shift"})
            for (int p = 0; p < 4; ++p) QTest::newRow(qPrintable(QString("%1.p%2").arg(d).arg(p))) << QString(d) << p;
    }
    void dflashGenerate() {
        QFETCH(QString, drafter);
        QFETCH(int, prompt);
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(drafterDir(drafter.toStdString()));
        RunSettings s;
        s.maxNewTokens = 96;
        s.ignoreEos = true;
        s.loop = LoopRevision::April2026;  // goldens.json holds the April loop
        const auto r = engine.run(goldenPrompt(prompt), s);
        const auto& g = goldens()["dflash_generate"][drafter.toStdString() + ".p" + std::to_string(prompt)];
        QCOMPARE(r.outputIds, g["output_ids"].get<std::vector<std::int64_t>>());
        QCOMPARE(r.acceptanceLengths, g["acceptance_lengths"].get<std::vector<int>>());
        // Greedy equivalence: DFlash output equals plain greedy decoding of the target.
        const auto& greedy = goldens()["dflash_generate"]["greedy.p" + std::to_string(prompt)]["output_ids"];
        QCOMPARE(r.outputIds, greedy.get<std::vector<std::int64_t>>());
        // Per-step records are consistent with the aggregate numbers.
        QCOMPARE(r.steps.size(), r.acceptanceLengths.size());
        double sum = 0;
        for (std::size_t i = 0; i < r.steps.size(); ++i) {
            const auto& st = r.steps[i];
            QCOMPARE(st.acceptanceLength(), r.acceptanceLengths[i]);
            QCOMPARE(st.bonusToken, st.targetTokens[static_cast<std::size_t>(st.acceptedCount)]);
            for (int j = 0; j < st.acceptedCount; ++j) QCOMPARE(st.drafted[j], st.targetTokens[j]);
            if (st.acceptedCount < static_cast<int>(st.drafted.size()))
                QVERIFY(st.drafted[st.acceptedCount] != st.targetTokens[st.acceptedCount]);
            // The drafted token is the draft's argmax, so it is the top-1 of its top-k.
            for (std::size_t j = 0; j < st.drafted.size(); ++j) {
                QCOMPARE(st.draftTopIds[j][0], st.drafted[j]);
                QCOMPARE(st.draftTopProbs[j][0], st.draftProb[j]);
                if (st.targetRankInDraft[j] == 0) QCOMPARE(st.drafted[j], st.targetTokens[j]);
            }
            sum += st.acceptanceLength();
        }
        QVERIFY(qAbs(r.tau - sum / r.steps.size()) < 1e-12);
        QCOMPARE(r.perPositionAcceptance.at(0), 1.0);
    }

    // Both loop revisions against variant_goldens.json (drafter-good = the demo drafter):
    // `current` ignores eos, `current_eos` stops at eos (2044), `2026-04` is the April loop.
    void loopRevisions_data() {
        QTest::addColumn<QString>("variant");
        QTest::addColumn<int>("prompt");
        for (const char* v : {"current", "current_eos", "2026-04"})
            for (int p = 0; p < 4; ++p) QTest::newRow(qPrintable(QString("%1.p%2").arg(v).arg(p))) << QString(v) << p;
    }
    void loopRevisions() {
        QFETCH(QString, variant);
        QFETCH(int, prompt);
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 96;
        s.loop = variant == "2026-04" ? LoopRevision::April2026 : LoopRevision::Current;
        s.ignoreEos = variant != "current_eos";
        if (!s.ignoreEos) {
            const auto& stops = engine.stopTokenIds();
            QVERIFY(std::find(stops.begin(), stops.end(), 2044) != stops.end());
        }
        const auto ids = variantGoldens()["prompt_ids"][std::to_string(prompt)].get<std::vector<std::int64_t>>();
        QCOMPARE(ids, promptIds(prompt));
        const auto r = engine.run(goldenPrompt(prompt), s);
        const auto& g = variantGoldens()[variant.toStdString()]["drafter-good.p" + std::to_string(prompt)];
        QCOMPARE(r.outputIds, g["output_ids"].get<std::vector<std::int64_t>>());
        QCOMPARE(r.acceptanceLengths, g["acceptance_lengths"].get<std::vector<int>>());
        // Every step's record agrees with its acceptance length and the committed tokens.
        std::vector<std::int64_t> rebuilt = promptIds(prompt);
        rebuilt.push_back(r.steps.at(0).anchor);
        for (const auto& st : r.steps) {
            QCOMPARE(st.targetTokens.size(), st.drafted.size() + 1);
            rebuilt.insert(rebuilt.end(), st.drafted.begin(), st.drafted.begin() + st.acceptedCount);
            rebuilt.push_back(st.bonusToken);
        }
        // The April loop truncates its last block's overshoot afterwards.
        if (variant == "2026-04") rebuilt.resize(std::min(rebuilt.size(), r.outputIds.size()));
        QCOMPARE(rebuilt, r.outputIds);
        if (variant != "2026-04") {
            // The current loop fills exactly P + max_new slots, the last block clipped to them.
            const auto P = static_cast<std::int64_t>(ids.size());
            QCOMPARE(static_cast<std::int64_t>(r.outputIds.size()), P + 96);
            const auto& last = r.steps.back();
            QCOMPARE(static_cast<std::int64_t>(last.drafted.size()), std::min<std::int64_t>(r.blockSize, P + 96 - last.start) - 1);
        }
    }

    // Stop tokens inside the current loop: with an extra stop token X (generation_config
    // eos_token_id [2044, X]) the run equals the ignore-eos golden up to the step that
    // produced X's first generated occurrence, that step cut at (and including) X.
    void currentLoopCutsAtStopToken_data() {
        QTest::addColumn<int>("prompt");
        QTest::addColumn<qint64>("stop");
        QTest::newRow("p2 mid-step") << 2 << qint64(869);
        QTest::newRow("p2 token also in the prompt") << 2 << qint64(1430);
        QTest::newRow("p0 first drafted") << 0 << qint64(269);
    }
    void currentLoopCutsAtStopToken() {
        QFETCH(int, prompt);
        QFETCH(qint64, stop);
        QTemporaryDir tmp;
        const auto dir = copyModel(demoTarget(), tmp.filePath("target").toStdString());
        auto gen = readJson(dir + "/generation_config.json");
        gen["eos_token_id"] = {2044, stop};
        writeJson(dir + "/generation_config.json", gen);
        Engine engine;
        engine.loadTarget(dir);
        engine.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 96;
        const auto r = engine.run(goldenPrompt(prompt), s);

        const auto& g = variantGoldens()["current"]["drafter-good.p" + std::to_string(prompt)];
        const auto full = g["output_ids"].get<std::vector<std::int64_t>>();
        const auto lengths = g["acceptance_lengths"].get<std::vector<int>>();
        const auto P = promptIds(prompt).size();
        const auto k = static_cast<std::size_t>(std::find(full.begin() + P, full.end(), stop) - full.begin() - P);
        QVERIFY2(k > 0 && P + k < full.size(), "the stop token must be generated after the first anchor");
        std::vector<int> expectedLengths;
        for (std::size_t produced = 1, i = 0; produced <= k; ++i) {  // generated token 0 is the first anchor
            expectedLengths.push_back(static_cast<int>(std::min<std::size_t>(lengths[i], k - produced + 1)));
            produced += static_cast<std::size_t>(lengths[i]);
        }
        QCOMPARE(r.outputIds, std::vector<std::int64_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(P + k + 1)));
        QCOMPARE(r.acceptanceLengths, expectedLengths);
        QVERIFY(r.stoppedAtEos);
        QCOMPARE(r.steps.back().bonusToken, std::int64_t(stop));
    }

    void badSamplingOptionsAreRefusedByName() {
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(demoDrafter());
        const auto message = [&](const RunSettings& s) {
            try {
                engine.run(goldenPrompt(0), s);
            } catch (const Error& e) {
                return QString(e.what());
            }
            return QString();
        };
        RunSettings s;
        s.temperature = std::nan("");
        QCOMPARE(message(s), QString("temperature: expected a finite number >= 0 (0 = greedy), found nan"));
        s.temperature = -0.5;
        QVERIFY2(message(s).contains("temperature"), qPrintable(message(s)));
        s = RunSettings{};
        s.topP = 0;
        QCOMPARE(message(s), QString("top-p: expected a number in (0, 1] (1 = off), found 0"));
        s.topP = 1.5;
        QVERIFY2(message(s).contains("top-p"), qPrintable(message(s)));
        s = RunSettings{};
        s.topK = -1;
        QCOMPARE(message(s), QString("top-k: expected an integer >= 0 (0 = off), found -1"));
        QCOMPARE(loopRevisionName(parseLoopRevision("2026-04")), std::string("2026-04"));
        QCOMPARE(loopRevisionName(parseLoopRevision("current")), std::string("current"));
        QVERIFY_THROWS_EXCEPTION(Error, parseLoopRevision("april"));
    }

    void aggregatesByHand() {
        // p2 with the good drafter: recompute histogram and per-position rates by hand.
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 96;
        s.ignoreEos = true;
        s.loop = LoopRevision::April2026;
        const auto r = engine.run(goldenPrompt(2), s);
        const std::vector<int> expected = goldens()["dflash_generate"]["drafter-good.p2"]["acceptance_lengths"];
        QCOMPARE(r.acceptanceLengths, expected);
        // 28 steps, lengths sum to 96: tau = 96/28.
        QCOMPARE(r.tau, 96.0 / 28.0);
        QCOMPARE(r.acceptanceHistogram.size(), std::size_t(17));
        std::vector<std::int64_t> hist(17, 0);
        for (int l : expected) hist[l]++;
        QCOMPARE(r.acceptanceHistogram, hist);
        int reach3 = 0;
        for (int l : expected) reach3 += l >= 4;  // acc >= 3
        QCOMPARE(r.perPositionAcceptance[3], reach3 / 28.0);
    }

    void sampledRunIsSeededAndConsistent() {
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 40;
        s.ignoreEos = true;
        s.temperature = 0.8;
        s.seed = 1234;
        s.loop = LoopRevision::April2026;  // argmax drafts, exact match against sampled target tokens
        const auto a = engine.run(goldenPrompt(0), s);
        const auto b = engine.run(goldenPrompt(0), s);
        QCOMPARE(a.outputIds, b.outputIds);
        QCOMPARE(a.acceptanceLengths, b.acceptanceLengths);
        s.seed = 99;
        const auto c = engine.run(goldenPrompt(0), s);
        QVERIFY(c.outputIds != a.outputIds);
        for (const auto& st : a.steps) {
            for (int j = 0; j < st.acceptedCount; ++j) QCOMPARE(st.drafted[j], st.targetTokens[j]);
            QCOMPARE(st.bonusToken, st.targetTokens[st.acceptedCount]);
        }
        QCOMPARE(static_cast<std::int64_t>(a.outputIds.size()), static_cast<std::int64_t>(promptIds(0).size()) + 40);
    }

    void stopsAtEos() {
        // Without --ignore-eos the run ends at the first stop token, which is kept.
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(demoDrafter());
        const auto& stops = engine.stopTokenIds();
        QVERIFY(std::find(stops.begin(), stops.end(), 2044) != stops.end());
        RunSettings s;
        s.maxNewTokens = 400;
        s.loop = LoopRevision::April2026;
        const auto r = engine.run(goldenPrompt(1), s);
        const auto P = promptIds(1).size();
        for (std::size_t i = P; i + 1 < r.outputIds.size(); ++i) QVERIFY(r.outputIds[i] != 2044);
        if (r.stoppedAtEos) QCOMPARE(r.outputIds.back(), std::int64_t(2044));
        else QCOMPARE(r.outputIds.size(), P + 400);
    }
};

QTEST_GUILESS_MAIN(TestGoldenParity)
#include "tst_golden_parity.moc"
