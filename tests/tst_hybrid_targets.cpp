// Qwen3.5 hybrid targets (Gated DeltaNet + gated attention): prefill (chunked DeltaNet path),
// cached single-token decode (recurrent path) and a cached 6-token verify block against HF
// transformers 5.17 goldens (tests/data/FIXTURES.md, q35.*; max abs diff within 1e-4 of the
// golden's max abs), the text-only and vision-language layouts giving identical results, and
// DFlash runs on a hybrid target equal to greedy decoding (the verify-block state rollback
// is exact).

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <functional>
#include <random>

using namespace draftscope;
using namespace testsupport;

namespace {

/// A random drafter for the tiny Qwen3.5 target (hidden 128, V 2048).
const RandomDrafterShape kDrafterShape{128, 32, 256, 2048};

std::string causalLm() { return dataPath("models/qwen3_5-tiny-causallm"); }
std::string vlm() { return unpackedDataPath("models/qwen3_5-tiny-vlm"); }

std::vector<float> rows(const std::vector<float>& x, std::size_t width, std::size_t from, std::size_t count) {
    return {x.begin() + static_cast<std::ptrdiff_t>(from * width),
            x.begin() + static_cast<std::ptrdiff_t>((from + count) * width)};
}

/// The golden sequence as forwardSteps chunks: prefill, 3 decode steps, one 6-token block.
std::vector<std::vector<std::int64_t>> goldenChunks() {
    const auto ids = goldenTensors().readInt64("q35.input_ids");
    const auto extra = goldenTensors().readInt64("q35.extra_ids");
    return {ids, {extra[0]}, {extra[1]}, {extra[2]}, {extra.begin() + 3, extra.end()}};
}


}  // namespace

class TestHybridTargets : public QObject {
    Q_OBJECT

private slots:
    void loadsBothLayouts() {
        Engine e;
        const auto text = e.loadTarget(causalLm());
        QCOMPARE(text.architecture, std::string("Qwen3_5ForCausalLM"));
        QCOMPARE(text.layerTypes, (std::vector<std::string>{"linear_attention", "linear_attention",
                                                             "linear_attention", "full_attention"}));
        QVERIFY(text.unexpectedTensors.empty());
        QVERIFY(text.ignoredTensors.empty());
        const auto vl = e.loadTarget(vlm());
        QCOMPARE(vl.architecture, std::string("Qwen3_5ForConditionalGeneration"));
        QCOMPARE(vl.layerTypes, text.layerTypes);
        QVERIFY(vl.unexpectedTensors.empty());
        QVERIFY(!vl.ignoredTensors.empty());
        for (const auto& n : vl.ignoredTensors) QVERIFY2(n.rfind("model.visual.", 0) == 0, n.c_str());
        QCOMPARE(vl.parameters, text.parameters);
    }

    void prefillMatchesGoldens() {
        Engine e;
        e.loadTarget(causalLm());
        auto p = idsPrompt(goldenTensors().readInt64("q35.input_ids"));
        const auto r = e.forward(p);
        QCOMPARE(r.numLayers, std::int64_t(4));
        const double eh = relativeMaxError(r.hiddenStates, goldenTensors().readFloat32("q35.hidden_states"));
        const double el = relativeMaxError(r.logits, goldenTensors().readFloat32("q35.logits"));
        qInfo("q35 prefill: hidden rel err %.3g, logits rel err %.3g", eh, el);
        QVERIFY2(eh <= 1e-4, qPrintable(QString::number(eh)));
        QVERIFY2(el <= 1e-4, qPrintable(QString::number(el)));
    }

    void decodeAndVerifyMatchGoldens() {
        Engine e;
        e.loadTarget(causalLm());
        const auto steps = e.forwardSteps(goldenChunks());
        QCOMPARE(steps.size(), std::size_t(5));
        const auto V = static_cast<std::size_t>(steps[0].vocabSize);
        const double ep = relativeMaxError(steps[0].logits, goldenTensors().readFloat32("q35.logits"));
        const auto decodeGolden = goldenTensors().readFloat32("q35.decode_logits");
        double ed = 0;
        for (std::size_t i = 0; i < 3; ++i)
            ed = std::max(ed, relativeMaxError(steps[i + 1].logits, rows(decodeGolden, V, i, 1)));
        const double ev = relativeMaxError(steps[4].logits, goldenTensors().readFloat32("q35.verify_logits"));
        qInfo("q35 steps: prefill %.3g, decode (recurrent) %.3g, verify block (chunked on cache) %.3g", ep, ed, ev);
        QVERIFY2(ep <= 1e-4, qPrintable(QString::number(ep)));
        QVERIFY2(ed <= 1e-4, qPrintable(QString::number(ed)));
        QVERIFY2(ev <= 1e-4, qPrintable(QString::number(ev)));
    }

    void textAndVisionLayoutsAreIdentical() {
        Engine a, b;
        a.loadTarget(causalLm());
        b.loadTarget(vlm());
        const auto ra = a.forwardSteps(goldenChunks());
        const auto rb = b.forwardSteps(goldenChunks());
        QCOMPARE(ra.size(), rb.size());
        for (std::size_t i = 0; i < ra.size(); ++i) {
            QCOMPARE(ra[i].logits, rb[i].logits);
            QCOMPARE(ra[i].hiddenStates, rb[i].hiddenStates);
        }
    }

    void dflashEqualsGreedy_data() {
        QTest::addColumn<int>("blockSize");
        QTest::addColumn<int>("promptLength");
        QTest::addColumn<int>("seed");
        QTest::newRow("B4-p7") << 4 << 7 << 1;
        QTest::newRow("B8-p40") << 8 << 40 << 2;
        QTest::newRow("B16-p70") << 16 << 70 << 3;
    }
    void dflashEqualsGreedy() {
        QFETCH(int, blockSize);
        QFETCH(int, promptLength);
        QFETCH(int, seed);
        QTemporaryDir tmp;
        const auto drafterDir = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafterDir, kDrafterShape, blockSize, static_cast<std::uint32_t>(seed));
        Engine e;
        e.loadTarget(causalLm());
        const auto ds = e.loadDrafter(drafterDir);
        QCOMPARE(ds.targetLayerIds, (std::vector<std::int64_t>{0, 2}));
        PromptSpec p;
        p.kind = PromptSpec::Kind::Ids;
        const auto ids = goldenTensors().readInt64("q35.input_ids");
        p.ids.assign(ids.begin(), ids.begin() + promptLength);
        RunSettings s;
        s.maxNewTokens = 48;
        s.ignoreEos = true;
        const auto run = e.run(p, s);
        const auto greedy = e.greedy(p, 48, /*ignoreEos=*/true);
        QCOMPARE(run.outputIds.size(), std::size_t(promptLength + 48));
        QCOMPARE(run.outputIds, greedy);
        int rollbacks = 0;
        for (int len : run.acceptanceLengths) rollbacks += len < blockSize;
        qInfo("B=%d: %zu steps, tau %.3f, %d rolled back", blockSize, run.acceptanceLengths.size(), run.tau, rollbacks);
        // A random drafter is almost never right (acc = 0): every step rolls back and re-runs
        // the single committed token (the recurrent path on the restored state).
        QVERIFY(rollbacks > 0);
    }

    // DDTree on a hybrid target (docs/ENGINE.md, "DDTree on hybrid targets"): lossless, so
    // the output equals greedy decoding. Budget 2100 > vocab 2048 drafts every token at
    // depth 1, so every step accepts at least one drafted token and the cache adopts the
    // Gated DeltaNet state of a non-root tree node.
    void ddtreeEqualsGreedy_data() {
        QTest::addColumn<int>("budget");
        QTest::newRow("budget8") << 8;
        QTest::newRow("budget2100") << 2100;
    }
    void ddtreeEqualsGreedy() {
        QFETCH(int, budget);
        QTemporaryDir tmp;
        const auto drafterDir = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafterDir, kDrafterShape, 8, 11);
        Engine e;
        e.loadTarget(causalLm());
        e.loadDrafter(drafterDir);
        PromptSpec p;
        p.kind = PromptSpec::Kind::Ids;
        const auto ids = goldenTensors().readInt64("q35.input_ids");
        p.ids.assign(ids.begin(), ids.begin() + 20);
        RunSettings s;
        s.maxNewTokens = 12;
        s.ignoreEos = true;
        const auto tree = e.runTree(p, s, budget);
        QCOMPARE(tree.outputIds, e.greedy(p, 12, /*ignoreEos=*/true));
        const int minLen = *std::min_element(tree.acceptanceLengths.begin(), tree.acceptanceLengths.end());
        qInfo("budget %d: %zu steps, tau %.3f, shortest path %d", budget, tree.acceptanceLengths.size(), tree.tau, minLen);
        if (budget > 2048) QVERIFY2(minLen >= 2, "every depth-1 token is drafted, so every step accepts one");
    }

    // Each tree node's target choice equals the target's argmax after a plain causal verify
    // of the node's root-to-node path on the committed prefix.
    void treeChoicesMatchSequentialVerify() {
        QTemporaryDir tmp;
        const auto drafterDir = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafterDir, kDrafterShape, 6, 5);
        Engine e;
        e.loadTarget(causalLm());
        e.loadDrafter(drafterDir);
        PromptSpec p;
        p.kind = PromptSpec::Kind::Ids;
        const auto ids = goldenTensors().readInt64("q35.input_ids");
        p.ids.assign(ids.begin(), ids.begin() + 12);
        RunSettings s;
        s.maxNewTokens = 4;
        s.ignoreEos = true;
        const auto run = e.runTree(p, s, 2060);
        int checked = 0, deep = 0;
        for (std::size_t step = 0; step < std::min<std::size_t>(run.steps.size(), 2); ++step) {
            const auto& st = run.steps[step];
            // Deepest node of each depth's first occurrence, plus every node on the path.
            std::vector<int> nodes(st.acceptedPath.begin(), st.acceptedPath.end());
            std::vector<bool> seenDepth(16, false);
            for (int i = 1; i < static_cast<int>(st.tokens.size()); ++i)
                if (!seenDepth[static_cast<std::size_t>(st.depths[static_cast<std::size_t>(i)])]) {
                    seenDepth[static_cast<std::size_t>(st.depths[static_cast<std::size_t>(i)])] = true;
                    nodes.push_back(i);
                }
            for (int node : nodes) {
                std::vector<std::int64_t> path;
                for (int n = node; n >= 0; n = st.parents[static_cast<std::size_t>(n)])
                    path.insert(path.begin(), st.tokens[static_cast<std::size_t>(n)]);
                std::vector<std::int64_t> prefix(run.outputIds.begin(), run.outputIds.begin() + st.start);
                const auto fw = e.forwardSteps({prefix, path});
                const auto& last = fw[1];
                const auto V = static_cast<std::size_t>(last.vocabSize);
                const auto row = last.logits.begin() + static_cast<std::ptrdiff_t>((path.size() - 1) * V);
                std::vector<float> logits(row, row + static_cast<std::ptrdiff_t>(V));
                const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
                std::vector<float> sorted = logits;
                std::nth_element(sorted.begin(), sorted.begin() + 1, sorted.end(), std::greater<float>());
                if (sorted[0] - sorted[1] < 1e-3f) continue;  // a near tie could flip on rounding
                QCOMPARE(st.targetChoice[static_cast<std::size_t>(node)], static_cast<std::int64_t>(best));
                ++checked;
                deep += st.depths[static_cast<std::size_t>(node)] >= 2;
            }
        }
        qInfo("%d tree nodes checked against a sequential verify, %d at depth >= 2", checked, deep);
        QVERIFY(checked >= 6);
        QVERIFY(deep >= 2);
    }

    void linearLayersNeedQwen3_5Architecture() {
        // Hybrid layer types are only accepted for Qwen3.5 architectures.
        QTemporaryDir tmp;
        const auto dir = copyModel(dataPath("models/tiny-qwen2"), tmp.path().toStdString() + "/m");
        auto c = readJson(dir + "/config.json");
        const auto L = c["num_hidden_layers"].get<std::int64_t>();
        std::vector<std::string> types(static_cast<std::size_t>(L), "full_attention");
        types[0] = "linear_attention";
        c["layer_types"] = types;
        writeJson(dir + "/config.json", c);
        Engine e;
        QString msg;
        try {
            e.loadTarget(dir);
        } catch (const Error& err) {
            msg = err.what();
        }
        QVERIFY2(msg.contains("linear_attention") && msg.contains("Qwen3_5"), qPrintable(msg));
    }

    void badHybridCheckpointsGiveClearErrors() {
        QTemporaryDir tmp;
        const auto dir = copyModel(causalLm(), tmp.path().toStdString() + "/m");
        auto c = readJson(dir + "/config.json");
        c["linear_num_value_heads"] = 3;  // not a multiple of 2 key heads
        writeJson(dir + "/config.json", c);
        Engine e;
        QString msg;
        try {
            e.loadTarget(dir);
        } catch (const Error& err) {
            msg = err.what();
        }
        QVERIFY2(msg.contains("linear_num_value_heads"), qPrintable(msg));

        c["linear_num_value_heads"] = 8;  // config and checkpoint disagree on the DeltaNet shapes
        writeJson(dir + "/config.json", c);
        msg.clear();
        try {
            e.loadTarget(dir);
        } catch (const Error& err) {
            msg = err.what();
        }
        QVERIFY2(msg.contains("linear_attn.A_log") || msg.contains("linear_attn.in_proj"), qPrintable(msg));
    }
};

QTEST_GUILESS_MAIN(TestHybridTargets)
#include "tst_hybrid_targets.moc"
