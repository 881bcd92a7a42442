// Attention-mask construction (draftscope/masks.h) against hand-computed matrices
// (DFLASH.md sections 3, 6 and 7).

#include "draftscope/errors.h"
#include "draftscope/masks.h"
#include "test_support.h"

#include <QtTest>

#include <string>
#include <vector>

using namespace draftscope;
using testsupport::errorOf;

namespace {

using Rows = std::vector<std::vector<int>>;

/// The matrix as rows of 0/1, for readable comparisons.
Rows toRows(const MaskMatrix& m) {
    Rows out(static_cast<std::size_t>(m.rows));
    for (std::int64_t r = 0; r < m.rows; ++r)
        for (std::int64_t c = 0; c < m.cols; ++c) out[static_cast<std::size_t>(r)].push_back(m.at(r, c) ? 1 : 0);
    return out;
}

QString show(const Rows& rows) {
    QString s;
    for (const auto& r : rows) {
        for (int v : r) s += v ? '1' : '.';
        s += '\n';
    }
    return s;
}

#define COMPARE_ROWS(actual, expected)                                                            \
    do {                                                                                          \
        const Rows a_ = (actual), e_ = (expected);                                                \
        if (a_ != e_) QFAIL(qPrintable("mask differs\nactual:\n" + show(a_) + "expected:\n" + show(e_))); \
    } while (0)

MaskConventions conv(MaskConventions::Context ctx = MaskConventions::Context::Strict,
                     MaskConventions::Block blk = MaskConventions::Block::Bidirectional, int offset = 0) {
    MaskConventions c;
    c.context = ctx;
    c.block = blk;
    c.positionOffset = offset;
    return c;
}

constexpr auto Inclusive = MaskConventions::Context::Inclusive;
constexpr auto Strict = MaskConventions::Context::Strict;
constexpr auto Causal = MaskConventions::Block::Causal;
constexpr auto Bidir = MaskConventions::Block::Bidirectional;

}  // namespace

class TestMasks : public QObject {
    Q_OBJECT

private slots:
    // ---- Per-layer drafter masks (DFLASH.md section 9) ----

    void layerVisibilitySlidingCausal() {
        // W = 3, causal: query p sees keys p-2..p (the window counts the query's own position).
        const LayerAttention l{true, 3};
        const auto v = layerVisibility(l, {5, 6}, {0, 1, 2, 3, 4, 5, 6, 7});
        const std::vector<std::uint8_t> expected = {0, 0, 0, 1, 1, 1, 0, 0,   // query 5
                                                    0, 0, 0, 0, 1, 1, 1, 0};  // query 6
        QCOMPARE(v, expected);
        QVERIFY(LayerAttention({true, 2048}).visible(2048, 1));   // p sees p - 2047
        QVERIFY(!LayerAttention({true, 2048}).visible(2048, 0));  // but not p - 2048
    }

    void layerVisibilitySlidingBidirectionalAndCausalFull() {
        // Bidirectional window: |query - key| < W on both sides.
        const auto v = layerVisibility({false, 2}, {3}, {0, 1, 2, 3, 4, 5});
        QCOMPARE(v, (std::vector<std::uint8_t>{0, 0, 1, 1, 1, 0}));
        // Causal, no window: key <= query only.
        QCOMPARE(layerVisibility({true, std::nullopt}, {2}, {0, 1, 2, 3}), (std::vector<std::uint8_t>{1, 1, 1, 0}));
        // Base layout: everything visible, no mask needed.
        QVERIFY(!LayerAttention{}.needsMask());
        QCOMPARE(layerVisibility({}, {0, 1}, {5, 0}), (std::vector<std::uint8_t>{1, 1, 1, 1}));
    }

    void inferenceMaskPerLayer() {
        // Context 6, B 3, W 4 causal: query b+o at position 6+o sees ctx 3+o..5 and block 0..o.
        const auto m = inferenceMask(6, 3, conv(), false, LayerAttention{true, 4});
        QCOMPARE(m.rows, 3);
        QCOMPARE(m.cols, 9);
        for (std::int64_t o = 0; o < 3; ++o)
            for (std::int64_t c = 0; c < 9; ++c) {
                const std::int64_t key = c;  // columns: ctx 0..5 then b+0..2 at positions 6..8
                const bool expected = key <= 6 + o && 6 + o - key < 4;
                QCOMPARE(m.at(o, c), expected);
            }
        // The base layout leaves the reference mask unchanged; a bidirectional window hides
        // the far context but keeps the whole block.
        QCOMPARE(inferenceMask(6, 3, conv(), false, LayerAttention{}).visible, inferenceMask(6, 3, conv()).visible);
        const auto b = inferenceMask(6, 3, conv(), false, LayerAttention{false, 4});
        QVERIFY(!b.at(0, 2) && b.at(0, 3) && b.at(0, 8));
    }
    // S=6, B=3, anchors {1, 4}: keys = ctx 0..5 | b0+0..2 | b1+0..2, queries = b0+0..2, b1+0..2.
    void trainingStrictBidirectional() {
        const auto m = trainingMask(6, 3, {1, 4}, conv());
        QCOMPARE(m.rows, std::int64_t(6));
        QCOMPARE(m.cols, std::int64_t(12));
        QCOMPARE(m.contextCols, std::int64_t(6));
        //           ctx 0 1 2 3 4 5 | b0 0 1 2 | b1 0 1 2
        COMPARE_ROWS(toRows(m), (Rows{{1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1},
                                      {1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1},
                                      {1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1}}));
        QCOMPARE(m.visibleCount(), std::int64_t(3 * 4 + 3 * 7));
        QCOMPARE(m.rowPositions, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
        QCOMPARE(m.colPositions, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 6}));
        QCOMPARE(m.rowLabels, (std::vector<std::string>{"b0+0", "b0+1", "b0+2", "b1+0", "b1+1", "b1+2"}));
        QCOMPARE(m.colLabels[5], std::string("ctx 5"));
        QCOMPARE(m.colLabels[6], std::string("b0+0"));
        QCOMPARE(m.colLabels[11], std::string("b1+2"));
    }

    void trainingInclusiveDiffersOnlyInAnchorColumns() {
        const auto s = trainingMask(6, 3, {1, 4}, conv());
        const auto i = trainingMask(6, 3, {1, 4}, conv(Inclusive));
        COMPARE_ROWS(toRows(i), (Rows{{1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
                                      {1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
                                      {1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}}));
        for (std::int64_t r = 0; r < s.rows; ++r)
            for (std::int64_t c = 0; c < s.cols; ++c) {
                const std::int64_t anchor = r < 3 ? 1 : 4;
                QCOMPARE(s.at(r, c) != i.at(r, c), c == anchor);
            }
        MaskDiffCounts n;
        const auto d = maskDifference(s, i, &n);
        QCOMPARE(n.onlyA, std::int64_t(0));
        QCOMPARE(n.onlyB, std::int64_t(6));
        QCOMPARE(n.total(), std::int64_t(6));
        QCOMPARE(n.positionMismatches, std::int64_t(0));
        QCOMPARE(d.visibleCount(), std::int64_t(6));
        QVERIFY(d.at(0, 1) && d.at(5, 4) && !d.at(0, 4) && !d.at(5, 1));
        QCOMPARE(d.colLabels, s.colLabels);
    }

    void trainingCausalBlock() {
        const auto m = trainingMask(6, 3, {1, 4}, conv(Strict, Causal));
        COMPARE_ROWS(toRows(m), (Rows{{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0},
                                      {1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0},
                                      {1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0},
                                      {1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0},
                                      {1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1}}));
        MaskDiffCounts n;
        maskDifference(trainingMask(6, 3, {1, 4}, conv()), m, &n);
        QCOMPARE(n.onlyA, std::int64_t(6));  // 3 upper-triangle cells per block
        QCOMPARE(n.onlyB, std::int64_t(0));
    }

    void trainingOffsetMovesPositionsNotVisibility() {
        const auto ref = trainingMask(6, 3, {1, 4}, conv());
        const auto off = trainingMask(6, 3, {1, 4}, conv(Strict, Bidir, 1));
        QCOMPARE(off.visible, ref.visible);
        QCOMPARE(off.rowLabels, ref.rowLabels);
        QCOMPARE(off.rowPositions, (std::vector<std::int64_t>{2, 3, 4, 5, 6, 7}));
        QCOMPARE(off.colPositions, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 2, 3, 4, 5, 6, 7}));
        MaskDiffCounts n;
        const auto d = maskDifference(ref, off, &n);
        QCOMPARE(n.total(), std::int64_t(0));
        QCOMPARE(d.visibleCount(), std::int64_t(0));
        QCOMPARE(n.positionMismatches, std::int64_t(6 + 6));  // 6 block rows + 6 block columns
    }

    // W = 3: block row o of the block anchored at a sees context kv in [a+o-2, a-1], and the
    // block causally.
    void trainingSlidingWindow() {
        const auto m = trainingMask(6, 3, {1, 4}, conv(), 3);
        COMPARE_ROWS(toRows(m), (Rows{{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0},
                                      {1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0},
                                      {0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0},
                                      {0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1}}));
        // Inclusive + window: kv in [a+o-2, a].
        const auto i = trainingMask(6, 3, {1, 4}, conv(Inclusive), 3);
        COMPARE_ROWS(toRows(i), (Rows{{1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0},
                                      {1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0},
                                      {0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0},
                                      {0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0},
                                      {0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0},
                                      {0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1}}));
        // The window is measured from the reference position, so offset 1 does not change it.
        QCOMPARE(trainingMask(6, 3, {1, 4}, conv(Strict, Bidir, 1), 3).visible, m.visible);
    }

    // Per-layer training mask, S=6, B=4, anchors {2, 4}, sliding 3 causal (DFLASH.md 6 + 9).
    // Keys: ctx 0..5 | b0+0..3 (positions 2..5) | b1+0..3 (positions 4..7). Row o of the
    // block at a sees context kv in [a+o-2, a-1] and block rows o-2..o.
    void trainingMaskPerLayer() {
        const LayerAttention swa{true, 3};
        const auto m = trainingMask(6, 4, {2, 4}, conv(), swa);
        COMPARE_ROWS(toRows(m), (Rows{{1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
                                      {0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0},
                                      {0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0},
                                      {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0},
                                      {0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0},
                                      {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1}}));
        // Specific cells: b0+1 (position 3) sees ctx 1 (3-1 = 2 < 3) but not ctx 0 (3-0 = 3);
        // b0+3 (position 5) does not see b0+0 (position 2, 3 apart) but sees b0+1; b1+0 sees
        // ctx 2 and 3 and nothing of block 0.
        QVERIFY(m.at(1, 1) && !m.at(1, 0));
        QVERIFY(!m.at(3, 6) && m.at(3, 7));
        QVERIFY(m.at(4, 2) && m.at(4, 3) && !m.at(4, 1) && !m.at(4, 6));
        QCOMPARE(m.visibleCount(), 24);
        // Labels and positions are those of the plain training mask; offset 1 moves
        // positions only; the base layout is the plain mask.
        const auto plain = trainingMask(6, 4, {2, 4}, conv());
        QCOMPARE(m.rowPositions, plain.rowPositions);
        QCOMPARE(m.colLabels, plain.colLabels);
        QCOMPARE(trainingMask(6, 4, {2, 4}, conv(Strict, Bidir, 1), swa).visible, m.visible);
        QCOMPARE(trainingMask(6, 4, {2, 4}, conv(), LayerAttention{}).visible, plain.visible);
        // A causal full layer: the plain mask with a causal block.
        QCOMPARE(trainingMask(6, 4, {2, 4}, conv(), LayerAttention{true, std::nullopt}).visible,
                 trainingMask(6, 4, {2, 4}, conv(Strict, Causal)).visible);
    }

    void trainingEdgeCases() {
        // No anchors: no queries, keys are the context only.
        const auto e = trainingMask(5, 4, {}, conv());
        QCOMPARE(e.rows, std::int64_t(0));
        QCOMPARE(e.cols, std::int64_t(5));
        // Anchor 0, strict: no context at all; inclusive: exactly position 0.
        const auto z = trainingMask(3, 2, {0}, conv());
        COMPARE_ROWS(toRows(z), (Rows{{0, 0, 0, 1, 1}, {0, 0, 0, 1, 1}}));
        const auto zi = trainingMask(3, 2, {0}, conv(Inclusive, Causal));
        COMPARE_ROWS(toRows(zi), (Rows{{1, 0, 0, 1, 0}, {1, 0, 0, 1, 1}}));
        // Repeated anchors are allowed; each block sees only itself.
        const auto rep = trainingMask(2, 1, {1, 1}, conv());
        COMPARE_ROWS(toRows(rep), (Rows{{1, 0, 1, 0}, {1, 0, 0, 1}}));
    }

    void trainingBadInputThrows() {
        QString err = errorOf([] { trainingMask(6, 3, {1, 6}, conv()); });
        QVERIFY2(err.contains("anchor 6"), qPrintable(err));
        QVERIFY2(err.contains("[0, 6)"), qPrintable(err));
        err = errorOf([] { trainingMask(6, 3, {-1}, conv()); });
        QVERIFY2(err.contains("anchor -1"), qPrintable(err));
        err = errorOf([] { trainingMask(6, 0, {1}, conv()); });
        QVERIFY2(err.contains("block size") && err.contains("got 0"), qPrintable(err));
        err = errorOf([] { trainingMask(-2, 3, {}, conv()); });
        QVERIFY2(err.contains("got -2"), qPrintable(err));
        err = errorOf([] { trainingMask(6, 3, {1}, conv(), -5); });
        QVERIFY2(err.contains("got -5"), qPrintable(err));
        err = errorOf([] { trainingMask(0, 3, {0}, conv()); });
        QVERIFY2(err.contains("anchor 0"), qPrintable(err));
    }

    void inferenceReference() {
        const auto m = inferenceMask(4, 3, conv());
        QCOMPARE(m.rows, std::int64_t(3));
        QCOMPARE(m.cols, std::int64_t(7));
        QCOMPARE(m.contextCols, std::int64_t(4));
        QCOMPARE(m.visibleCount(), std::int64_t(21));  // no mask at all
        QCOMPARE(m.rowPositions, (std::vector<std::int64_t>{4, 5, 6}));
        QCOMPARE(m.colPositions, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6}));
        QCOMPARE(m.rowLabels, (std::vector<std::string>{"b+0", "b+1", "b+2"}));
        QCOMPARE(m.colLabels, (std::vector<std::string>{"ctx 0", "ctx 1", "ctx 2", "ctx 3", "b+0", "b+1", "b+2"}));
        // First drafter call of a run without context (the degenerate shape still works).
        const auto z = inferenceMask(0, 1, conv());
        QCOMPARE(z.rows, std::int64_t(1));
        QCOMPARE(z.cols, std::int64_t(1));
        QVERIFY(z.at(0, 0));
    }

    void inferenceInclusiveAddsAnchorColumn() {
        const auto m = inferenceMask(4, 3, conv(Inclusive));
        QCOMPARE(m.cols, std::int64_t(8));
        QCOMPARE(m.contextCols, std::int64_t(5));
        QCOMPARE(m.colLabels[4], std::string("ctx 4 (anchor feat)"));
        QCOMPARE(m.colPositions[4], std::int64_t(4));
        QCOMPARE(m.visibleCount(), std::int64_t(24));
        // Strict with the column kept: same shape, the column masked.
        const auto s = inferenceMask(4, 3, conv(), true);
        QCOMPARE(s.cols, std::int64_t(8));
        QCOMPARE(s.colLabels, m.colLabels);
        for (int r = 0; r < 3; ++r) QVERIFY(!s.at(r, 4));
        MaskDiffCounts n;
        const auto d = maskDifference(s, m, &n);
        QCOMPARE(n.onlyA, std::int64_t(0));
        QCOMPARE(n.onlyB, std::int64_t(3));
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 8; ++c) QCOMPARE(d.at(r, c), c == 4);
        // The plain strict mask has a different shape: diffing it is an error.
        const QString err = errorOf([&] { maskDifference(inferenceMask(4, 3, conv()), m); });
        QVERIFY2(err.contains("3 x 7") && err.contains("3 x 8"), qPrintable(err));
    }

    void inferenceCausalAndOffset() {
        const auto c = inferenceMask(2, 3, conv(Strict, Causal));
        COMPARE_ROWS(toRows(c), (Rows{{1, 1, 1, 0, 0}, {1, 1, 1, 1, 0}, {1, 1, 1, 1, 1}}));
        const auto o = inferenceMask(2, 3, conv(Strict, Bidir, 1));
        QCOMPARE(o.visibleCount(), std::int64_t(15));
        QCOMPARE(o.rowPositions, (std::vector<std::int64_t>{3, 4, 5}));
        QCOMPARE(o.colPositions, (std::vector<std::int64_t>{0, 1, 3, 4, 5}));  // position 2 skipped
        const QString err = errorOf([] { inferenceMask(-1, 3, conv()); });
        QVERIFY2(err.contains("-1"), qPrintable(err));
        QVERIFY(!errorOf([] { inferenceMask(3, 0, conv()); }).isEmpty());
    }

    void parseAnchors() {
        QCOMPARE(parseIndexList("1, 4,9"), (std::vector<std::int64_t>{1, 4, 9}));
        QCOMPARE(parseIndexList("  "), std::vector<std::int64_t>{});
        QCOMPARE(parseIndexList("3,, -2 +5,"), (std::vector<std::int64_t>{3, -2, 5}));
        const QString err = errorOf([] { parseIndexList("1, x2"); });
        QVERIFY2(err.contains("'x2'"), qPrintable(err));
        QVERIFY(!errorOf([] { parseIndexList("1.5"); }).isEmpty());
    }
};

QTEST_MAIN(TestMasks)
#include "tst_masks.moc"
