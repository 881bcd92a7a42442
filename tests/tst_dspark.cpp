// DSpark drafters (DFLASH.md section 12; docs/ENGINE.md "DSpark") in the speculators format:
// the demo drafter's body with seeded Markov and confidence heads (tests/data/
// dspark_heads.safetensors), against goldens computed on the GPU machine by the reference
// modules (z-lab dflash/model.py for the body, speculators models/dspark/model_definitions.py
// for the heads; tools/make_dspark_fixtures.py): one drafter call (base logits, the walk's
// biased logits and tokens, the confidence), the greedy loop with the anchor's row drafting
// (B + 1 tokens per verify pass), the sampled loop's losslessness, and the refusals.

#include "draftscope/engine.h"
#include "draftscope/inspector.h"
#include "draftscope/results_json.h"
#include "sampling_test_support.h"
#include "speculators_support.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <map>

using namespace draftscope;
using namespace testsupport;

namespace {

const nlohmann::json& dsparkGoldens() {
    static const nlohmann::json j = nlohmann::json::parse(readFileToString(unpackedDataPath("dspark/goldens.json")));
    return j;
}

const SafetensorsFile& dsparkTensors() {
    static const auto f = SafetensorsFile::open(unpackedDataPath("dspark/tensors.safetensors"));
    return *f;
}

/// The speculators DSpark config the fixture script describes (rank 16, confidence over
/// [z; W1[prev]], sample_from_anchor true), edited further by `more`.
std::function<void(nlohmann::json&)> dsparkConfig(const std::function<void(nlohmann::json&)>& more = {}) {
    return [more](nlohmann::json& c) {
        c["speculators_model_type"] = "dspark";
        c["architectures"] = {"DSparkSpeculator"};
        c["sample_from_anchor"] = true;
        c["markov_rank"] = 16;
        c["markov_head_type"] = "vanilla";
        c["enable_confidence_head"] = true;
        c["confidence_head_with_markov"] = true;
        if (more) more(c);
    };
}

/// Within the fixtures' tolerance (relative 1e-5, as tst_dflash2): the goldens were computed on
/// the GPU machine's CPU, whose float32 kernels round differently from this machine's.
void expectFloats(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    QCOMPARE(got.size(), want.size());
    const auto e = relativeMaxError(got, want);
    QVERIFY2(e <= 1e-5, qPrintable(QString("%1: relative max error %2").arg(what).arg(e)));
}

}  // namespace

class TestDSpark : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::string dir(const std::string& name) const { return tmp_.path().toStdString() + "/" + name; }
    std::string heads() const { return dataPath("dspark/heads.safetensors"); }

    /// The demo drafter as a DSpark drafter, config edited by `more`, written once per name.
    std::string dspark(const std::string& name, const std::function<void(nlohmann::json&)>& more = {},
                       bool withHeads = true) {
        const auto d = dir(name);
        if (!std::filesystem::exists(d + "/config.json"))
            writeSpeculators(demoDrafter(), d, {}, dsparkConfig(more), withHeads ? std::vector<std::string>{heads()}
                                                                                   : std::vector<std::string>{});
        return d;
    }

private slots:
    void summaryAndInspectorNameTheFamily() {
        Engine engine;
        engine.loadTarget(demoTarget());
        const auto s = engine.loadDrafter(dspark("dspark"));
        QCOMPARE(s.family, std::string("DSpark"));
        QVERIFY(s.draftsFromAnchor);
        QCOMPARE(s.blockSize, std::int64_t{16});
        for (const char* part : {"speculators format", "Markov logit bias rank 16", "confidence head over [z; W1[prev]]",
                                 "drafts from the anchor's row (16 tokens per block)"})
            QVERIFY2(s.familyDetail.find(part) != std::string::npos, qPrintable(QString::fromStdString(s.familyDetail)));
        QVERIFY(s.unexpectedTensors.empty());
        const auto r = inspectCheckpoint(dspark("dspark"));
        QCOMPARE(r.family, std::string("DSpark"));
        QVERIFY(r.missing.empty() && r.mismatched.empty() && r.unexpected.empty());
    }

    /// Cases "<layout>.p<i>": layout "anchor" (sample_from_anchor: all 16 rows draft) or
    /// "shifted" (rows 1..15 draft, as DFlash); `withLogits`: only the cases whose logits the
    /// fixture keeps (tests/data/FIXTURES.md "DSpark").
    /// Also "hybrid-<layout>.h0": the DFlash body of models/dflash2-hybrid (its DFlash2 parts
    /// left out) with heads-hybrid over qwen3_5-tiny-causallm, block 8.
    static void addCases(bool withLogits) {
        QTest::addColumn<QString>("key");
        for (const char* layout : {"anchor", "shifted"})
            for (int p = 0; p < 4; ++p) {
                const auto key = QString("%1.p%2").arg(layout).arg(p);
                if (!withLogits || key == "anchor.p0" || key == "anchor.p3" || key == "shifted.p2")
                    QTest::newRow(qPrintable(key)) << key;
            }
        QTest::newRow("hybrid-anchor") << QString("hybrid-anchor.h0");
        QTest::newRow("hybrid-shifted") << QString("hybrid-shifted.h0");
    }
    static bool anchorLayout(const QString& key) { return key.startsWith("anchor") || key.startsWith("hybrid-anchor"); }
    static std::string hybridTarget() { return dataPath("models/qwen3_5-tiny-causallm"); }
    /// The drafter of a case's layout, loaded beside its target.
    void load(Engine& engine, const QString& key) {
        const bool anchor = anchorLayout(key);
        auto layout = [anchor](nlohmann::json& c) { c["sample_from_anchor"] = anchor; };
        if (!key.startsWith("hybrid")) {
            engine.loadTarget(demoTarget());
            engine.loadDrafter(anchor ? dspark("dspark") : dspark("dspark-shifted", layout));
            return;
        }
        engine.loadTarget(hybridTarget());
        const auto d = dir(key.toStdString());
        if (!std::filesystem::exists(d + "/config.json"))
            writeSpeculators(dataPath("models/dflash2-hybrid"), d, {}, dsparkConfig([&](nlohmann::json& c) {
                                 layout(c);
                                 for (const char* k : {"conv_kernel_size", "conv_group_size", "selector_rank",
                                                       "selector_top_k", "output_multiplier", "final_logit_softcapping"})
                                     c.erase(k);
                             }),
                             {dataPath("dspark/heads-hybrid.safetensors")}, hybridTarget(), [](const std::string& n) {
                                 return n.rfind("candidate_selector.", 0) != 0 && n.find("_conv.") == std::string::npos;
                             });
        engine.loadDrafter(d);
    }
    static PromptSpec promptOf(const QString& key) {
        if (key.startsWith("hybrid"))
            return idsPrompt(dsparkGoldens()["hybrid_prompt_ids"].get<std::vector<std::int64_t>>());
        return goldenPrompt(key.back().digitValue());
    }
    /// Drafted tokens per full block and tokens per verify pass of a case.
    static std::size_t draftsOf(const QString& key) {
        const std::size_t B = key.startsWith("hybrid") ? 8 : 16;
        return anchorLayout(key) ? B : B - 1;
    }

    void drafterCall_data() { addCases(false); }
    void drafterCall() {
        QFETCH(QString, key);
        Engine engine;
        load(engine, key);
        const auto r = engine.draftBlock(promptOf(key), LoopRevision::Current, 0);
        const auto k = key.toStdString();
        const auto& t = dsparkTensors();
        const std::size_t D = draftsOf(key);  // every row drafts, or rows 1..B-1
        QCOMPARE(r.markovPath.size(), D);
        expectFloats(r.draftHidden, t.readFloat32(k + ".draft_hidden"), "draft hidden");
        QCOMPARE(r.markovPath, t.readInt64(k + ".walk_path"));
        expectFloats(r.confidence, t.readFloat32(k + ".confidence"), "confidence");
        if (t.find(k + ".base_logits")) {
            QCOMPARE(r.draftLogits.size(), D * 2048);  // both targets have 2048 tokens
            expectFloats(r.draftLogits, t.readFloat32(k + ".base_logits"), "base logits");
            expectFloats(r.markovLogits, t.readFloat32(k + ".walk_logits"), "logits with the Markov bias");
        }
    }

    void greedyLoop_data() { addCases(false); }
    void greedyLoop() {
        QFETCH(QString, key);
        Engine engine;
        load(engine, key);
        RunSettings s;
        s.maxNewTokens = key.startsWith("hybrid") ? 48 : 96;
        s.ignoreEos = true;
        const auto r = engine.run(promptOf(key), s);
        const auto& want = dsparkGoldens()["generate"][key.toStdString()];
        QCOMPARE(r.outputIds, want["output_ids"].get<std::vector<std::int64_t>>());
        QCOMPARE(r.outputIds, engine.greedy(promptOf(key), s.maxNewTokens, true));  // lossless
        QCOMPARE(r.acceptanceLengths, want["acceptance_lengths"].get<std::vector<int>>());
        // Tokens per verify pass: the anchor + its drafts (B + 1, or the block of B).
        QCOMPARE(r.blockSize, static_cast<std::int64_t>(draftsOf(key) + 1));
        const auto& steps = want["steps"];
        QCOMPARE(r.steps.size(), steps.size());
        for (std::size_t i = 0; i < r.steps.size(); ++i) {
            QCOMPARE(r.steps[i].drafted, steps[i]["drafted"].get<std::vector<std::int64_t>>());
            QCOMPARE(r.steps[i].drafterArgmax, steps[i]["argmax"].get<std::vector<std::int64_t>>());
            const auto conf = steps[i]["confidence"].get<std::vector<float>>();
            QCOMPARE(r.steps[i].confidence.size(), conf.size());
            // The loop's drafter calls run on a cache, the reference's on the whole context:
            // the same values up to float32 rounding.
            QVERIFY2(relativeMaxError(r.steps[i].confidence, conf) < 1e-5, qPrintable(QString("step %1").arg(i)));
        }
    }

    void sampledLoopIsLossless() {
        // Rejection sampling against the walk's per-slot distribution (each given the slots
        // before it; vLLM's draft_probs): the second and third generated tokens, given the ones
        // before, follow the target's own softmax(logits / T). T = 1.5: drafter and target disagree.
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(dspark("dspark"));
        const auto prompt = promptIds(1);
        RunSettings s;
        s.maxNewTokens = 4;
        s.ignoreEos = true;
        s.temperature = 1.5;
        const int runs = 600;
        std::map<std::vector<std::int64_t>, std::map<std::int64_t, int>> seen;  // prefix -> next -> count
        int rejected = 0;
        for (int i = 0; i < runs; ++i) {
            s.seed = static_cast<std::uint64_t>(5000 + i);
            const auto r = engine.run(idsPrompt(prompt), s);
            QVERIFY(r.outputIds.size() >= prompt.size() + 3);
            for (std::size_t k = 1; k <= 2; ++k) {
                std::vector<std::int64_t> prefix(r.outputIds.begin() + static_cast<std::ptrdiff_t>(prompt.size()),
                                                 r.outputIds.begin() + static_cast<std::ptrdiff_t>(prompt.size() + k));
                seen[prefix][r.outputIds[prompt.size() + k]] += 1;
            }
            rejected += !r.steps.empty() && !r.steps[0].rejectionTested.empty() && r.steps[0].rejectionTested[0] == 0;
            for (const auto& st : r.steps) QCOMPARE(st.selectorProb, st.rejectionQ);
        }
        // The most frequent one- and two-token prefixes.
        for (std::size_t len : {std::size_t{1}, std::size_t{2}}) {
            const std::map<std::int64_t, int>* best = nullptr;
            std::vector<std::int64_t> bestPrefix;
            int bestN = 0;
            for (const auto& [prefix, next] : seen) {
                if (prefix.size() != len) continue;
                int n = 0;
                for (const auto& [_, c] : next) n += c;
                if (n > bestN) bestN = n, best = &next, bestPrefix = prefix;
            }
            QVERIFY(best);
            auto ids = prompt;
            ids.insert(ids.end(), bestPrefix.begin(), bestPrefix.end());
            const auto fit = chiSquareAgainstTarget(engine, ids, s.temperature, *best);
            qInfo("after %zu generated token(s): %s", len, fit.describe().c_str());
            QVERIFY2(fit.df >= 3, fit.describe().c_str());
            QVERIFY2(fit.chi2 < fit.critical, fit.describe().c_str());
        }
        QVERIFY2(rejected > 0, "no rejection happened: the test does not exercise the residual distribution");
    }

    void resultsRoundTrip() {
        // A DSpark run through its JSON form: family, the anchor layout, per-step argmax,
        // walk probability and confidence survive; the run's width is 17 per verify pass.
        Engine engine;
        engine.loadTarget(demoTarget());
        const auto summary = engine.loadDrafter(dspark("dspark"));
        RunSettings s;
        s.maxNewTokens = 24;
        s.ignoreEos = true;
        const auto run = engine.run(goldenPrompt(2), s);
        QCOMPARE(run.perPositionAcceptance.size(), std::size_t{17});
        const auto back = runResultFromJson(nlohmann::json::parse(toJson(run).dump()), "run");
        QCOMPARE(back.blockSize, std::int64_t{17});
        QCOMPARE(back.steps.size(), run.steps.size());
        for (std::size_t i = 0; i < run.steps.size(); ++i) {
            QCOMPARE(back.steps[i].confidence, run.steps[i].confidence);
            QCOMPARE(back.steps[i].drafterArgmax, run.steps[i].drafterArgmax);
            QCOMPARE(back.steps[i].selectorProb, run.steps[i].selectorProb);
            QVERIFY(!run.steps[i].confidence.empty());
        }
        const auto m = modelSummaryFromJson(nlohmann::json::parse(toJson(summary).dump()), "drafter");
        QCOMPARE(m.family, std::string("DSpark"));
        QVERIFY(m.draftsFromAnchor);
        QCOMPARE(m.blockSize, std::int64_t{16});
    }

    void teacherForcedProbeStopsAtTheLastFullBlock() {
        // The anchor layout labels a block up to a + 16: the last anchor is T - 17, each block
        // drafts 16 tokens, and every one of them has a label (probability > 0 somewhere).
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(dspark("dspark"));
        const auto prompt = promptIds(0);
        const auto seq = engine.greedy(idsPrompt(prompt), 40, true);
        const auto P = static_cast<std::int64_t>(prompt.size()), T = static_cast<std::int64_t>(seq.size());
        const auto tf = engine.teacherForcedDrafts(seq, P, 0, ProbeConvention{}, LoopRevision::Current);
        QCOMPARE(tf.blockSize, std::int64_t{17});
        QCOMPARE(tf.anchors.front(), P);
        QCOMPARE(tf.anchors.back(), T - 17);
        for (const auto& d : tf.drafts) QCOMPARE(d.size(), std::size_t{16});
        for (const auto& row : tf.sequenceProbs[0]) QVERIFY(row.back() > 0.0f);
        // One token short of a full block after the prompt: refused, naming the 17 positions.
        const std::vector<std::int64_t> shortSeq(seq.begin(), seq.begin() + P + 16);
        try {
            engine.teacherForcedDrafts(shortSeq, P, 0, ProbeConvention{}, LoopRevision::Current);
            QFAIL("a sequence without a full block was probed");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("holds no full block of 17 positions") != std::string::npos, e.what());
        }
    }

    void markovBiasMapsAReducedVocabulary() {
        // With d2t, the walk's bias lands on the target ids of the draft rows (0 elsewhere, where
        // the logits are -inf): a reduced drafter whose draft rows are every target token in a
        // shuffled order is the full drafter (same logits, same bias per target id).
        std::vector<std::int64_t> ids(2048);
        for (std::int64_t i = 0; i < 2048; ++i) ids[static_cast<std::size_t>(i)] = i;
        const auto full = dspark("dspark");
        // Drop the last target id: a reduced vocabulary of 2047 rows. markov_w2 then needs 2047
        // rows, so the heads are rewritten with the rows of the kept ids.
        ids.pop_back();
        const auto reduced = dir("reduced");
        {
            const auto f = SafetensorsFile::open(heads());
            const auto tmpHeads = dir("reduced_heads.safetensors");
            SafetensorsWriter w;
            for (const auto& t : f->tensors()) {
                if (t.name == "markov_head.markov_w2.weight") {
                    const auto row = t.byteSize() / 2048;
                    w.add(t.name, t.dtype, {2047, t.shape[1]}, f->data(t), row * 2047);
                } else {
                    w.add(t.name, t.dtype, t.shape, f->data(t), t.byteSize());
                }
            }
            w.write(tmpHeads);
            writeSpeculators(demoDrafter(), reduced, ids, dsparkConfig(), {tmpHeads});
        }
        Engine a, b;
        a.loadTarget(demoTarget());
        b.loadTarget(demoTarget());
        a.loadDrafter(full);
        b.loadDrafter(reduced);
        for (int p : {0, 3}) {
            const auto ra = a.draftBlock(goldenPrompt(p), LoopRevision::Current, 0);
            const auto rb = b.draftBlock(goldenPrompt(p), LoopRevision::Current, 0);
            QCOMPARE(rb.markovLogits.size(), ra.markovLogits.size());
            for (std::size_t i = 0; i < ra.markovLogits.size(); ++i) {
                if (i % 2048 == 2047) {
                    QVERIFY(std::isinf(rb.markovLogits[i]) && rb.markovLogits[i] < 0);
                } else {
                    QCOMPARE(rb.markovLogits[i], ra.markovLogits[i]);
                }
            }
        }
    }

    void withoutHeadsItIsAnAnchorDraftingDFlash() {
        // markov_rank 0, no confidence head: the anchor layout alone. Greedy output is still the
        // target's own (lossless), 17 tokens per verify pass, no confidence recorded.
        Engine engine;
        engine.loadTarget(demoTarget());
        const auto s = engine.loadDrafter(dspark("plain", [](nlohmann::json& c) {
            c["markov_rank"] = 0;
            c["enable_confidence_head"] = false;
        }, /*withHeads=*/false));
        QVERIFY2(s.familyDetail.find("no Markov head") != std::string::npos, s.familyDetail.c_str());
        RunSettings rs;
        rs.maxNewTokens = 48;
        rs.ignoreEos = true;
        const auto r = engine.run(goldenPrompt(2), rs);
        QCOMPARE(r.outputIds, engine.greedy(goldenPrompt(2), rs.maxNewTokens, true));
        QCOMPARE(r.acceptanceHistogram.size(), std::size_t{18});
        for (const auto& st : r.steps) QVERIFY(st.confidence.empty());
        QCOMPARE(r.steps.front().drafted, r.steps.front().drafterArgmax);  // no bias: the walk is the argmax
    }

    void refusals() {
        Engine engine;
        engine.loadTarget(demoTarget());
        auto refused = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit,
                           const std::string& needle) {
            try {
                engine.loadDrafter(dspark(name, edit));
                QFAIL(qPrintable(QString::fromStdString(name + ": loaded")));
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
            }
        };
        refused("gated", [](nlohmann::json& c) { c["markov_head_type"] = "gated"; }, "markov_head_type 'gated'");
        refused("topk", [](nlohmann::json& c) { c["dspark_draft_topk"] = 8; }, "dspark_draft_topk");
        refused("rank0", [](nlohmann::json& c) { c["markov_rank"] = 0; }, "confidence_head_with_markov");
        refused("rank8", [](nlohmann::json& c) { c["markov_rank"] = 8; }, "markov_head.markov_w1.weight");
        refused("softcap", [](nlohmann::json& c) { c["final_logit_softcapping"] = 30.0; }, "final_logit_softcapping");
        refused("body-softcap", [](nlohmann::json& c) { c["transformer_layer_config"]["final_logit_softcapping"] = 0.5; },
                "transformer_layer_config.final_logit_softcapping = 0.5");
        refused("dflash2-key", [](nlohmann::json& c) { c["selector_rank"] = 16; }, "'selector_rank' = 16 asks for DFlash2's");
        refused("arch-eagle", [](nlohmann::json& c) { c["architectures"] = {"Eagle3Speculator"}; },
                "architectures names 'Eagle3Speculator', which is no DFlash, DFlash2 or DSpark model");
        refused("arch-dflash", [](nlohmann::json& c) { c["architectures"] = {"DFlashSpeculator"}; },
                "a dflash model, but speculators_model_type is 'dspark'");
        // Heads present that the config leaves out: named, with the keys to set.
        refused("conf-false", [](nlohmann::json& c) { c["enable_confidence_head"] = false; },
                "this DSpark config leaves them out (markov_rank 16, enable_confidence_head false");
        refused("aux-missing", [](nlohmann::json& c) { c.erase("aux_hidden_state_layer_ids"); },
                "required field 'aux_hidden_state_layer_ids'");
        refused("aux-oob", [](nlohmann::json& c) { c["aux_hidden_state_layer_ids"] = {2, 3, 7}; },
                "aux_hidden_state_layer_ids [2, 3, 7] (target layers [1, 2, 6]) contains 7, but the target has 6");
        // The heads in a dflash-type checkpoint: DSpark parts named, never run as DFlash.
        refused("as-dflash", [](nlohmann::json& c) {
            c["speculators_model_type"] = "dflash";
            c["architectures"] = {"DFlashSpeculator"};
            c.erase("markov_rank");
        }, "DSpark parts");
        // Speculators keys in a z-lab config: refused by name, never ignored.
        for (const char* where : {"top", "dflash_config"}) {
            const auto d = copyModel(demoDrafter(), dir(std::string("zlab-anchor-") + where));
            auto c = readJson(d + "/config.json");
            (std::string(where) == "top" ? c : c["dflash_config"])["sample_from_anchor"] = true;
            (std::string(where) == "top" ? c : c["dflash_config"])["markov_rank"] = nullptr;
            writeJson(d + "/config.json", c);
            try {
                engine.loadDrafter(d);
                QFAIL("a z-lab config with sample_from_anchor loaded");
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find("sample_from_anchor' = true asks for the anchor's row drafting") !=
                             std::string::npos, e.what());
            }
        }
        QCOMPARE(engine.drafterCount(), 0);

        engine.loadDrafter(dspark("dspark"));
        RunSettings s;
        s.maxNewTokens = 8;
        s.loop = LoopRevision::April2026;
        try {
            engine.run(goldenPrompt(0), s);
            QFAIL("the April loop ran a DSpark drafter");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("runs only in the current loop") != std::string::npos, e.what());
        }
        s.loop = LoopRevision::Current;
        try {
            engine.runTree(goldenPrompt(0), s, 8);
            QFAIL("DDTree ran a DSpark drafter");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("DDTree with a DSpark drafter") != std::string::npos, e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestDSpark)
#include "tst_dspark.moc"
