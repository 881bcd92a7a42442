// DDTree: tree construction (the DFLASH.md toy example and the official builds of
// p0.drafter-good at budgets 8 and 32), the tree mask (treeVisibility, which the loop
// applies and the tree mask view draws) against the builds' visibility, the DDTree loop against the official goldens
// (budgets 4/8/32, prompts 0-1), budget 0, a budget larger than the vocabulary, and the
// refusal of a negative budget (hybrid targets: tst_hybrid_targets).

#include "draftscope/ddtree.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "test_support.h"

#include <QtTest>

#include <cmath>

using namespace draftscope;
using namespace testsupport;

namespace {
/// The toy of DFLASH.md section 5 as log-probabilities (float32, as the engine feeds them).
DraftTree toyTree(int budget) {
    const std::vector<std::vector<double>> p = {{.6, .3, .1}, {.5, .4, .1}, {.9, .05, .05}};
    const std::vector<std::vector<std::int64_t>> ids = {{11, 12, 13}, {21, 22, 23}, {31, 32, 33}};
    std::vector<std::vector<float>> lp;
    for (const auto& row : p) {
        lp.emplace_back();
        for (double v : row) lp.back().push_back(static_cast<float>(std::log(v)));
    }
    return buildDraftTree(7, lp, ids, budget);
}

std::vector<std::int64_t> tail(const std::vector<std::int64_t>& v) { return {v.begin() + 1, v.end()}; }
std::vector<int> tail(const std::vector<int>& v) { return {v.begin() + 1, v.end()}; }
}  // namespace

class TestDDTree : public QObject {
    Q_OBJECT
private slots:
    void toyExample() {
        const auto t3 = toyTree(3);
        QCOMPARE(tail(t3.tokens), (std::vector<std::int64_t>{11, 21, 12}));
        QCOMPARE(tail(t3.depths), (std::vector<int>{1, 2, 1}));
        QCOMPARE(t3.parents, (std::vector<int>{-1, 0, 1, 0}));
        QCOMPARE(t3.tokens[0], std::int64_t(7));
        const auto t8 = toyTree(8);
        QCOMPARE(tail(t8.tokens), (std::vector<std::int64_t>{11, 21, 12, 31, 22, 31, 21, 31}));
        QCOMPARE(t8.parents, (std::vector<int>{-1, 0, 1, 0, 2, 1, 5, 3, 7}));
        // Visibility: each node sees its ancestors and itself.
        const auto v = treeVisibility(t8.parents);
        QCOMPARE(v.size(), std::size_t(9 * 9));
        QCOMPARE(std::vector<std::uint8_t>(v.begin() + 4 * 9, v.begin() + 5 * 9),
                 (std::vector<std::uint8_t>{1, 1, 1, 0, 1, 0, 0, 0, 0}));
        QCOMPARE(std::vector<std::uint8_t>(v.begin() + 8 * 9, v.end()),
                 (std::vector<std::uint8_t>{1, 0, 0, 1, 0, 0, 0, 1, 1}));
        // Drafter probabilities of the nodes' own tokens.
        QVERIFY(std::fabs(t8.drafterProbs[1] - 0.6f) < 1e-6f);
        QVERIFY(std::fabs(t8.drafterProbs[2] - 0.5f) < 1e-6f);
    }

    void budgetZeroAndExhaustedHeap() {
        QCOMPARE(toyTree(0).size(), 1);
        // 3 depths x 3 ranks = 27 paths at most... the heap enumerates every path: 3 + 9 + 27.
        const auto all = toyTree(1000);
        QCOMPARE(all.size(), 1 + 3 + 9 + 27);
        bool threw = false;
        try {
            buildDraftTree(1, {{-0.1f}}, {{5, 6}}, 4);
        } catch (const Error&) {
            threw = true;
        }
        QVERIFY(threw);
    }

    void treeVisibilityRefusesNonTrees() {
        QVERIFY(treeVisibility({}).empty());
        QCOMPARE(treeVisibility({-1}, 2), (std::vector<std::uint8_t>{1, 1, 1}));
        QVERIFY2(errorOf([] { treeVisibility({0, 0}); }).contains("node 0 has parent 0"),
                 qPrintable(errorOf([] { treeVisibility({0, 0}); })));
        QVERIFY2(errorOf([] { treeVisibility({-1, 0, 2}); }).contains("node 2 has parent 2, expected one of the earlier nodes 0..1"),
                 qPrintable(errorOf([] { treeVisibility({-1, 0, 2}); })));
        QVERIFY(!errorOf([] { treeVisibility({-1}, -1); }).isEmpty());
    }

    void officialBuilds_data() {
        QTest::addColumn<int>("budget");
        QTest::newRow("budget8") << 8;
        QTest::newRow("budget32") << 32;
    }
    void officialBuilds() {
        QFETCH(int, budget);
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        const auto t = e.draftTree(goldenPrompt(0), budget, LoopRevision::April2026);  // goldens.json: April numerics
        const auto& g = goldens()["ddtree"]["build.p0.budget" + std::to_string(budget)];
        QCOMPARE(tail(t.tokens), g["tokens"].get<std::vector<std::int64_t>>());
        QCOMPARE(tail(t.depths), g["depths"].get<std::vector<int>>());
        QCOMPARE(t.parents, g["parents"].get<std::vector<int>>());
        // The one tree mask (treeVisibility): without past columns as the tree mask view draws
        // its node block, with the cache's columns in front as the DDTree loop applies it.
        const auto gv = g["visibility"].get<std::vector<std::vector<int>>>();
        const std::size_t n = gv.size();
        QCOMPARE(static_cast<std::size_t>(t.size()), n);
        for (const std::int64_t past : {std::int64_t(0), std::int64_t(1), std::int64_t(5)}) {
            const auto vis = treeVisibility(t.parents, past);
            const std::size_t cols = static_cast<std::size_t>(past) + n;
            QCOMPARE(vis.size(), n * cols);
            for (std::size_t i = 0; i < n; ++i) {
                for (std::size_t k = 0; k < static_cast<std::size_t>(past); ++k) QCOMPARE(int(vis[i * cols + k]), 1);
                for (std::size_t j = 0; j < n; ++j) QCOMPARE(int(vis[i * cols + static_cast<std::size_t>(past) + j]), gv[i][j]);
            }
        }
    }

    void ddtreeLoopGoldens_data() {
        QTest::addColumn<int>("budget");
        QTest::addColumn<int>("prompt");
        for (int b : {4, 8, 32})
            for (int p : {0, 1}) QTest::newRow(qPrintable(QString("budget%1.p%2").arg(b).arg(p))) << b << p;
    }
    void ddtreeLoopGoldens() {
        QFETCH(int, budget);
        QFETCH(int, prompt);
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 96;
        s.ignoreEos = true;
        s.loop = LoopRevision::April2026;  // goldens.json: the April reference's drafter numerics
        const auto r = e.runTree(goldenPrompt(prompt), s, budget);
        const auto& g = goldens()["ddtree"]["budget" + std::to_string(budget) + ".p" + std::to_string(prompt)];
        QCOMPARE(r.outputIds, g["output_ids"].get<std::vector<std::int64_t>>());
        // Exact, including the last steps, where the official loop drafts from a shortened
        // block (docs/ENGINE.md, DDTree, end of a run).
        const auto expected = g["acceptance_lengths"].get<std::vector<int>>();
        QCOMPARE(r.acceptanceLengths, expected);
        // Every step: the accepted path follows the target's choices from the root.
        for (const auto& st : r.steps) {
            for (std::size_t k = 1; k < st.acceptedPath.size(); ++k) {
                const int node = st.acceptedPath[k], parent = st.acceptedPath[k - 1];
                QCOMPARE(st.parents[node], parent);
                QCOMPARE(st.tokens[node], st.targetChoice[parent]);
            }
            QCOMPARE(st.bonusToken, st.targetChoice[st.acceptedPath.back()]);
        }
    }

    void budgetZeroIsPlainDecoding() {
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 24;
        s.ignoreEos = true;
        const auto r = e.runTree(goldenPrompt(1), s, 0);
        QCOMPARE(r.acceptanceLengths, std::vector<int>(24, 1));
        QCOMPARE(r.outputIds, e.greedy(goldenPrompt(1), 24, true));
    }

    void budgetLargerThanVocab() {
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        const auto t = e.draftTree(goldenPrompt(0), 3000, LoopRevision::Current);  // V = 2048: k = V, tree still has 3000 nodes
        QCOMPARE(t.size(), 3001);
        RunSettings s;
        s.maxNewTokens = 16;
        s.ignoreEos = true;
        const auto r = e.runTree(goldenPrompt(0), s, 3000);
        QCOMPARE(r.outputIds, e.greedy(goldenPrompt(0), 16, true));
    }

    void negativeBudgetIsRefused() {
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        RunSettings s;
        bool threw = false;
        try {
            e.runTree(goldenPrompt(0), s, -1);
        } catch (const Error& err) {
            threw = QString(err.what()).contains("budget");
        }
        QVERIFY(threw);
    }
};

QTEST_GUILESS_MAIN(TestDDTree)
#include "tst_ddtree.moc"
