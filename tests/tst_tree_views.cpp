// DDTree views fed hand-built tree steps whose every number is known: the tree-verify mask
// of the DFLASH.md toy tree, the node states and highlighting of the tree view, the link
// from a chain position to a tree step, the budget-sweep plot's data, and the exports.

#include "acceptance_tree_view.h"
#include "budget_sweep_plot.h"
#include "draftscope/ddtree.h"
#include "mask_view.h"
#include "figure_export.h"
#include "token_display.h"
#include "tree_nodes_table.h"
#include "tree_steps.h"

#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QGraphicsPathItem>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QStyleOptionComboBox>
#include <QTableView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>

using namespace draftscope;

namespace {

/// DFLASH.md section 5, budget 8: tokens [11,21,12,31,22,31,21,31] after the root,
/// parents [-1,0,1,0,2,1,5,3,7]. Root = anchor 10 at position 20. The target's walk:
/// root -> 11 (node 1) -> 22 (node 5) -> 31 (node 6) -> 40, so the path is [0,1,5,6] and
/// the bonus token is 40. Rejected: node 2 (21 under 11; the target wanted 22) and node 3
/// (12 under the root; it wanted 11). Unreached: 4 (under 2), 7 (under 3), 8 (under 7).
TreeStep toyStep() {
    TreeStep s;
    s.start = 20;
    s.tokens = {10, 11, 21, 12, 31, 22, 31, 21, 31};
    s.depths = {0, 1, 2, 1, 3, 2, 3, 2, 3};
    s.parents = {-1, 0, 1, 0, 2, 1, 5, 3, 7};
    s.drafterProbs = {1.0f, 0.6f, 0.5f, 0.3f, 0.9f, 0.4f, 0.9f, 0.5f, 0.9f};
    s.targetChoice = {11, 22, 50, 51, 52, 31, 40, 53, 54};
    s.acceptedPath = {0, 1, 5, 6};
    s.bonusToken = 40;
    return s;
}

/// Three steps: [10, 14) acceptance length 4, [14, 15) length 1, [15, 18) length 3.
TreeRunResult threeStepRun(int budget, double tau) {
    TreeRunResult r;
    r.budget = budget;
    r.tau = tau;
    TreeStep a = toyStep();
    a.start = 10;  // length 4
    TreeStep b = toyStep();
    b.start = 14;
    b.acceptedPath = {0};  // length 1: the target wanted 60 after the root
    b.targetChoice[0] = 60;
    b.bonusToken = 60;
    TreeStep c = toyStep();
    c.start = 15;
    c.acceptedPath = {0, 1, 5};  // length 3: the target wanted 77 after node 5
    c.targetChoice[5] = 77;
    c.bonusToken = 77;
    r.steps = {a, b, c};
    r.acceptanceLengths = {4, 1, 3};
    r.promptIds = {1, 2, 3};
    r.outputIds = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    return r;
}

QString piece(std::int64_t id) { return QStringLiteral("t%1").arg(id); }

/// A budget-64 step: a chain of 8 accepted nodes, each with 7 rejected children (56
/// nodes), bonus 99. 65 nodes, 8 columns deep, 57 leaves tall.
TreeStep bigStep(std::int64_t start) {
    TreeStep s;
    s.start = start;
    s.tokens = {10};
    s.depths = {0};
    s.parents = {-1};
    s.drafterProbs = {1.0f};
    for (int d = 1; d <= 8; ++d) {  // the path node at depth d is node d
        s.tokens.push_back(100 + d);
        s.depths.push_back(d);
        s.parents.push_back(d - 1);
        s.drafterProbs.push_back(0.5f);
    }
    for (int d = 0; d < 8; ++d)
        for (int k = 0; k < 7; ++k) {
            s.tokens.push_back(200 + 10 * d + k);
            s.depths.push_back(d + 1);
            s.parents.push_back(d);
            s.drafterProbs.push_back(0.05f);
        }
    s.targetChoice.assign(s.tokens.size(), 0);
    for (int d = 0; d < 8; ++d) s.targetChoice[static_cast<std::size_t>(d)] = 100 + d + 1;
    s.targetChoice[8] = 99;
    s.acceptedPath = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    s.bonusToken = 99;
    return s;
}

/// A budget-64 step whose accepted path is the last child at every depth: 8 rejected
/// siblings come first, so the path runs along the bottom of the drawn tree, far from the
/// root's row. 73 nodes, bonus 99.
TreeStep bottomPathStep(std::int64_t start) {
    TreeStep s;
    s.start = start;
    s.tokens = {10};
    s.depths = {0};
    s.parents = {-1};
    s.drafterProbs = {1.0f};
    s.acceptedPath = {0};
    for (int d = 1; d <= 8; ++d) {
        const std::int64_t parent = s.acceptedPath.back();
        for (int k = 0; k < 8; ++k) {
            s.tokens.push_back(200 + 10 * d + k);
            s.depths.push_back(d);
            s.parents.push_back(parent);
            s.drafterProbs.push_back(0.05f);
        }
        s.tokens.push_back(100 + d);
        s.depths.push_back(d);
        s.parents.push_back(parent);
        s.drafterProbs.push_back(0.4f);
        s.acceptedPath.push_back(static_cast<std::int64_t>(s.tokens.size()) - 1);
    }
    s.targetChoice.assign(s.tokens.size(), 0);
    for (std::size_t i = 0; i + 1 < s.acceptedPath.size(); ++i)
        s.targetChoice[static_cast<std::size_t>(s.acceptedPath[i])] = s.tokens[static_cast<std::size_t>(s.acceptedPath[i + 1])];
    s.targetChoice[static_cast<std::size_t>(s.acceptedPath.back())] = 99;
    s.bonusToken = 99;
    return s;
}

/// The toy tree's expected visibility: row i lists i and its ancestors.
const std::vector<std::vector<int>> kToyVisible = {{0}, {0, 1}, {0, 1, 2}, {0, 3}, {0, 1, 2, 4},
                                                   {0, 1, 5}, {0, 1, 5, 6}, {0, 3, 7}, {0, 3, 7, 8}};

}  // namespace

class TestTreeViews : public QObject {
    Q_OBJECT
private slots:
    void toyTreeLayoutWithoutAScene() {
        // The accepted path 0 -> 1 -> 5 -> 6 -> bonus is the spine along row 0 (each path node's
        // on-path child first, the path node in its row). The rest in creation order: 1's other
        // child 2 -> 4 takes row 1, 0's other child 3 -> 7 -> 8 row 2.
        const TreeStep s = toyStep();
        const TreeLayout l = layoutTree(s, {});
        QCOMPARE(l.bonus, 9);
        QCOMPARE(l.column, (std::vector<int>{0, 1, 2, 1, 3, 2, 3, 2, 3, 4}));
        QCOMPARE(l.row, (std::vector<double>{0, 0, 1, 2, 1, 0, 0, 2, 2, 0}));
        QCOMPARE(l.shown, std::vector<bool>(10, true));
        QCOMPARE(l.hiddenBelow, std::vector<int>(10, 0));
        // Focus folds the rejected nodes with children: 2 (above 4) and 3 (above 7 and 8).
        const auto folds = focusFolds(s, treeNodeStates(s));
        QCOMPARE(folds, (std::vector<bool>{false, false, true, true, false, false, false, false, false}));
        const TreeLayout f = layoutTree(s, folds);
        QCOMPARE(f.shown, (std::vector<bool>{true, true, true, true, false, true, true, false, false, true}));
        QCOMPARE(f.hiddenBelow, (std::vector<int>{0, 0, 1, 2, 0, 0, 0, 0, 0, 0}));
        QCOMPARE(f.row, (std::vector<double>{0, 0, 1, 2, 0, 0, 0, 0, 0, 0}));  // hidden nodes keep row 0
    }

    void nodesTableWithoutAView() {
        const TreeStep s = toyStep();
        TreeNodesTable t;
        QAbstractItemModelTester tester(&t);
        QCOMPARE(t.columnCount(), 10);
        QCOMPARE(t.rowCount(), 0);
        t.showStep(&s, treeNodeStates(s), [](std::int64_t id) { return id == 21 ? QString("a b") : piece(id); });
        QCOMPARE(t.rowCount(), 9);
        // Node 2: token 21 at depth 2 under node 1, rejected (the target wanted 22 there).
        QCOMPARE(t.index(2, 1).data().toLongLong(), 21LL);
        QCOMPARE(t.index(2, 2).data().toString(), QString("a\u00b7b"));
        QCOMPARE(t.index(2, 2).data(kExportRole).toString(), QString("a b"));
        QCOMPARE(t.index(2, 3).data().toInt(), 2);
        QCOMPARE(t.index(2, 4).data().toInt(), 1);
        QCOMPARE(t.index(2, 5).data().toDouble(), 0.5);
        QCOMPARE(t.index(2, 6).data().toLongLong(), 50LL);
        QCOMPARE(t.index(2, 8).data().toBool(), false);
        QCOMPARE(t.index(2, 9).data().toString(), QString("rejected"));
        QCOMPARE(t.index(6, 9).data().toString(), QString("accepted"));
        QCOMPARE(t.index(6, 7).data().toString(), QString("t40"));
        QCOMPARE(t.index(8, 9).data().toString(), QString("unreached"));
        t.showStep(nullptr, {}, {});
        QCOMPARE(t.rowCount(), 0);
        QCOMPARE(t.headerData(9, Qt::Horizontal).toString(), QString("state"));
    }

    void toyTreeVisibilityMatrix() {
        const TreeStep s = toyStep();
        const MaskMatrix m = treeVerifyMask(s, /*pastColumn=*/false);
        QCOMPARE(m.rows, std::int64_t(9));
        QCOMPARE(m.cols, std::int64_t(9));
        QCOMPARE(m.contextCols, std::int64_t(0));
        for (int r = 0; r < 9; ++r)
            for (int c = 0; c < 9; ++c) {
                const auto& row = kToyVisible[static_cast<std::size_t>(r)];
                const bool expected = std::find(row.begin(), row.end(), c) != row.end();
                QVERIFY2(m.at(r, c) == expected, qPrintable(QString("row %1 col %2").arg(r).arg(c)));
            }
        QCOMPARE(m.visibleCount(), std::int64_t(26));
        QCOMPARE(m.rowPositions, (std::vector<std::int64_t>{20, 21, 22, 21, 23, 22, 23, 22, 23}));
        QCOMPARE(m.rowLabels[0], std::string("root"));
        QCOMPARE(m.rowLabels[4], std::string("n4"));

        // With the past column: one more column, visible to every node.
        const MaskMatrix p = treeVerifyMask(s, true);
        QCOMPARE(p.cols, std::int64_t(10));
        QCOMPARE(p.contextCols, std::int64_t(1));
        QCOMPARE(p.colLabels[0], std::string("past 0..19"));
        QCOMPARE(p.colPositions[0], std::int64_t(19));
        for (int r = 0; r < 9; ++r) QVERIFY(p.at(r, 0));
        QCOMPARE(p.visibleCount(), std::int64_t(26 + 9));
        QVERIFY(p.at(8, 1 + 7) && p.at(8, 1 + 3) && !p.at(8, 1 + 5));
        // The drawn cells are the mask the DDTree loop applies (one past column here, one per
        // cached position there): the same function's output.
        QCOMPARE(m.visible, treeVisibility(s.parents, 0));
        QCOMPARE(p.visible, treeVisibility(s.parents, 1));
    }

    void maskViewTreeMode() {
        MaskView v;
        v.resize(900, 700);
        v.setMode(MaskView::Mode::TreeVerify);
        QCOMPARE(v.matrix().rows, std::int64_t(0));  // no step yet
        std::vector<QString> pieces;
        for (auto id : toyStep().tokens) pieces.push_back(piece(id));
        v.setTreeStep(toyStep(), 8, 2, pieces);
        QCOMPARE(v.matrix().rows, std::int64_t(9));
        QCOMPARE(v.matrix().cols, std::int64_t(10));  // past column on by default
        QCOMPARE(v.shownValues().size(), std::size_t(90));
        // Row 6 (31 under 22 under 11): past, root, n1, n5, n6.
        const std::vector<std::uint8_t> row6(v.shownValues().begin() + 60, v.shownValues().begin() + 70);
        QCOMPARE(row6, (std::vector<std::uint8_t>{1, 1, 1, 0, 0, 0, 1, 1, 0, 0}));
        QCOMPARE(v.queryTickLabels()[6], QString("n6 @23 't31'"));
        QCOMPARE(v.keyTickLabels()[0], QString("past 0..19"));
        QVERIFY(v.summaryText().contains("35 visible"));
        QCOMPARE(v.tableModel()->rowCount(), 9);
        QCOMPARE(v.tableModel()->index(6, 0).data().toString(), QString("n6"));
        QCOMPARE(v.tableModel()->index(6, 7).data().toInt(), 1);  // column 7 = key n5
        v.setPastColumnShown(false);
        QCOMPARE(v.matrix().cols, std::int64_t(9));
        QCOMPARE(v.matrix().visibleCount(), std::int64_t(26));
        // Diff and conventions do not apply to the target's tree mask.
        v.setDiffEnabled(true);
        QCOMPARE(v.diffMatrix().rows, std::int64_t(0));
        QCOMPARE(v.matrix().visibleCount(), std::int64_t(26));
    }

    void nodeStates() {
        const auto st = treeNodeStates(toyStep());
        using S = TreeNodeState;
        QCOMPARE(st, (std::vector<S>{S::Accepted, S::Accepted, S::Rejected, S::Rejected, S::Unreached, S::Accepted,
                                     S::Accepted, S::Unreached, S::Unreached}));
    }

    void treeViewHighlightsTheAcceptedPath() {
        AcceptanceTreeView v;
        v.resize(900, 700);
        TreeRunResult run = threeStepRun(8, 2.667);
        run.steps[0] = toyStep();
        QSignalSpy changed(&v, &AcceptanceTreeView::treeStepChanged);
        v.setRuns({run}, piece);
        QCOMPARE(v.currentBudget(), 8);
        QCOMPARE(v.currentStep(), 0);
        QVERIFY(changed.count() >= 1);
        QCOMPARE(changed.last().at(0).toInt(), 8);
        QCOMPARE(changed.last().at(1).toInt(), 0);
        QCOMPARE(v.drawnNodeCount(), 9);
        QCOMPARE(v.nodeStates()[5], TreeNodeState::Accepted);
        // Path edges thick and green; the others thin; rejected and unreached nodes dimmed.
        for (int i : {1, 5, 6}) {
            QCOMPARE(v.edgeItem(i)->pen().widthF(), 4.0);
            QCOMPARE(v.edgeItem(i)->pen().color(), QColor(0x23, 0x8b, 0x45));
            QCOMPARE(v.nodeItem(i)->opacity(), 1.0);
        }
        for (int i : {2, 3, 4, 7, 8}) {
            QCOMPARE(v.edgeItem(i)->pen().widthF(), 1.2);
            QVERIFY(v.nodeItem(i)->opacity() < 0.5);
        }
        QVERIFY(v.nodeItem(2)->opacity() > v.nodeItem(4)->opacity());  // rejected brighter than unreached
        QCOMPARE(v.edgeItem(0), nullptr);
        // Layout: column = depth.
        const double col = v.nodeItem(1)->path().boundingRect().left() - v.nodeItem(0)->path().boundingRect().left();
        QVERIFY(col > 100);
        for (int i = 0; i < 9; ++i)
            QCOMPARE(qRound(v.nodeItem(i)->path().boundingRect().left() - v.nodeItem(0)->path().boundingRect().left()),
                     qRound(toyStep().depths[static_cast<std::size_t>(i)] * col));
        // The target's choice at each path node; the bonus after the last.
        QCOMPARE(v.targetChoiceText(0), QString("target \u2192 't11'"));
        QCOMPARE(v.targetChoiceText(5), QString("target \u2192 't31'"));
        QCOMPARE(v.targetChoiceText(6), QString("target \u2192 't40'"));
        QVERIFY(v.targetChoiceText(2).isEmpty());
        QCOMPARE(v.bonusText(), QString("bonus 't40'"));
        QVERIFY(v.bonusItem()->boundingRect().left() > v.nodeItem(6)->boundingRect().right());
        // The nodes table.
        auto* t = v.nodesTable();
        QCOMPARE(t->rowCount(), 9);
        QCOMPARE(t->columnCount(), 10);
        QCOMPARE(t->index(5, 1).data().toLongLong(), 22LL);
        QCOMPARE(t->index(5, 2).data().toString(), QString("t22"));
        QCOMPARE(t->index(5, 3).data().toInt(), 2);
        QCOMPARE(t->index(5, 4).data().toInt(), 1);
        QCOMPARE(t->index(5, 5).data().toDouble(), double(0.4f));
        QCOMPARE(t->index(5, 6).data().toLongLong(), 31LL);
        QCOMPARE(t->index(5, 8).data().toBool(), true);
        QCOMPARE(t->index(3, 8).data().toBool(), false);
        QCOMPARE(t->index(3, 9).data().toString(), QString("rejected"));
    }

    void stepSelectorIsOneBased() {
        AcceptanceTreeView v;
        v.setRuns({threeStepRun(4, 2.0), threeStepRun(8, 2.5)}, piece);
        auto* spin = v.findChild<QSpinBox*>("treeStepSpin");
        auto* combo = v.findChild<QComboBox*>("budgetCombo");
        QVERIFY(spin && combo);
        QCOMPARE(combo->count(), 2);
        QCOMPARE(spin->minimum(), 1);
        QCOMPARE(spin->maximum(), 3);
        QCOMPARE(spin->value(), 1);
        spin->setValue(3);
        QCOMPARE(v.currentStep(), 2);
        QCOMPARE(v.currentTreeStep()->start, std::int64_t(15));
        QCOMPARE(v.drawnNodeCount(), 9);
        QCOMPARE(v.nodeStates()[6], TreeNodeState::Rejected);  // path [0, 1, 5] here
        QCOMPARE(v.nodeStates()[4], TreeNodeState::Unreached);
        QCOMPARE(v.targetChoiceText(5), QString("target \u2192 't77'"));
        QCOMPARE(v.bonusText(), QString("bonus 't77'"));
        QVERIFY(v.setCurrentBudget(8));
        QCOMPARE(v.currentBudget(), 8);
        QCOMPARE(v.currentStep(), 2);  // the step is kept across budgets
        QVERIFY(!v.setCurrentBudget(16));
        v.clear();
        QCOMPARE(v.drawnNodeCount(), 0);
        QCOMPARE(v.currentTreeStep(), nullptr);
    }

    void chainStepLinksToCoveringTreeStep() {
        const TreeRunResult run = threeStepRun(8, 2.667);
        // Step i covers [start, start + acceptance length).
        QCOMPARE(treeStepCovering(run, 10), 0);
        QCOMPARE(treeStepCovering(run, 13), 0);
        QCOMPARE(treeStepCovering(run, 14), 1);
        QCOMPARE(treeStepCovering(run, 15), 2);
        QCOMPARE(treeStepCovering(run, 17), 2);
        QCOMPARE(treeStepCovering(run, 40), 2);  // past the end: the last step
        QCOMPARE(treeStepCovering(run, 3), 0);   // before the first: the first step
        QCOMPARE(treeStepCovering(TreeRunResult{}, 10), -1);
        AcceptanceTreeView v;
        v.setRuns({run}, piece);
        v.showPosition(14);
        QCOMPARE(v.currentStep(), 1);
        QCOMPARE(v.findChild<QSpinBox*>("treeStepSpin")->value(), 2);
        QCOMPARE(v.drawnNodeCount(), 9);
        QCOMPARE(v.nodeStates()[1], TreeNodeState::Rejected);  // path is the root only
        v.showPosition(16);
        QCOMPARE(v.currentStep(), 2);
    }

    void budgetSwitchKeepsTheChainPosition() {
        // Budget 4: steps at 10 (length 4), 14 (1), 15 (3). Budget 32: steps at 10, 14, 18,
        // each of length 4.
        TreeRunResult wide = threeStepRun(32, 4.0);
        for (int i = 0; i < 3; ++i) {
            wide.steps[static_cast<std::size_t>(i)] = toyStep();
            wide.steps[static_cast<std::size_t>(i)].start = 10 + 4 * i;
        }
        AcceptanceTreeView v;
        v.setRuns({threeStepRun(4, 2.0), wide}, piece);
        QCOMPARE(v.keptPosition(), std::int64_t(-1));
        v.findChild<QSpinBox*>("treeStepSpin")->setValue(3);  // budget 4's step 3: root at 15
        QCOMPARE(v.keptPosition(), std::int64_t(15));
        QVERIFY(v.setCurrentBudget(32));
        QCOMPARE(v.currentStep(), 1);  // [14, 18) holds 15; the step index 2 would be [18, 22)
        QCOMPARE(v.currentTreeStep()->start, std::int64_t(14));
        QVERIFY(v.setCurrentBudget(4));
        QCOMPARE(v.currentStep(), 2);  // back at the root at 15, not at index 1 (the root at 14)
        // The link from the chain run keeps its position, not the step's root.
        v.showPosition(17);
        QCOMPARE(v.currentStep(), 2);
        QVERIFY(v.setCurrentBudget(32));
        QCOMPARE(v.currentStep(), 1);
        v.showPosition(19);
        QCOMPARE(v.currentStep(), 2);
        QVERIFY(v.setCurrentBudget(4));
        QCOMPARE(v.currentStep(), 2);  // 19 is past budget 4's last step: its last step
        // New runs forget the position.
        v.setRuns({wide}, piece);
        QCOMPARE(v.keptPosition(), std::int64_t(-1));
        QCOMPARE(v.currentStep(), 0);
    }

    void rejectedSubtreesFold() {
        AcceptanceTreeView v;
        v.resize(900, 700);
        v.setRuns({threeStepRun(8, 2.667)}, piece);
        QCOMPARE(v.drawnNodeCount(), 9);
        QCOMPARE(v.hiddenNodeCount(), 0);
        // Focus: the rejected nodes 2 (child 4) and 3 (child 7, grandchild 8) fold.
        auto* focus = v.findChild<QCheckBox*>("focusPathCheck");
        QVERIFY(focus);
        focus->setChecked(true);
        QVERIFY(v.focusAcceptedPath());
        QVERIFY(v.isSubtreeFolded(2) && v.isSubtreeFolded(3));
        QCOMPARE(v.drawnNodeCount(), 6);
        QCOMPARE(v.hiddenNodeCount(), 3);
        for (int hidden : {4, 7, 8}) {
            QCOMPARE(v.nodeItem(hidden), nullptr);
            QCOMPARE(v.edgeItem(hidden), nullptr);
        }
        auto badgeOf = [&](int node) {
            for (auto* child : v.nodeItem(node)->childItems())
                if (auto* t = dynamic_cast<QGraphicsSimpleTextItem*>(child); t && t->text().startsWith('+')) return t->text();
            return QString();
        };
        QCOMPARE(badgeOf(3), QString("+2"));
        QCOMPARE(badgeOf(2), QString("+1"));
        QCOMPARE(badgeOf(1), QString());
        // The path, its target labels and the bonus stay.
        QCOMPARE(v.targetChoiceText(6), QString("target \u2192 't40'"));
        QCOMPARE(v.bonusText(), QString("bonus 't40'"));
        QCOMPARE(v.nodesTable()->rowCount(), 9);  // the table lists every node
        // Path nodes and leaves do not fold; a rejected node unfolds alone.
        QVERIFY(!v.setSubtreeFolded(1, true));
        QVERIFY(!v.setSubtreeFolded(4, true));
        QVERIFY(v.setSubtreeFolded(3, false));
        QCOMPARE(v.drawnNodeCount(), 8);
        QVERIFY(v.nodeItem(8));
        // A double-click on node 2 unfolds it.
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        auto* gv = v.graphicsView();
        const QPoint at = gv->mapFromScene(v.nodeItem(2)->path().boundingRect().center() + QPointF(30, 0));
        QTest::mouseDClick(gv->viewport(), Qt::LeftButton, {}, at);
        QVERIFY(!v.isSubtreeFolded(2));
        QCOMPARE(v.drawnNodeCount(), 9);
        // Focus applies to the next step: step 3 (path [0, 1, 5]) folds 2 and 3 (6 is a leaf).
        v.setCurrentStep(2);
        QVERIFY(v.isSubtreeFolded(2) && v.isSubtreeFolded(3) && !v.isSubtreeFolded(6));
        QCOMPARE(v.drawnNodeCount(), 6);
        focus->setChecked(false);
        QCOMPARE(v.drawnNodeCount(), 9);
    }

    void fitShowsTheWholeBigTree() {
        TreeRunResult run;
        run.budget = 64;
        run.steps = {bigStep(30)};
        run.acceptanceLengths = {9};
        AcceptanceTreeView v;
        v.resize(700, 500);
        v.setRuns({run}, piece);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QCOMPARE(v.drawnNodeCount(), 65);
        auto* gv = v.graphicsView();
        auto visible = [&] { return gv->mapToScene(gv->viewport()->rect()).boundingRect(); };
        const QRectF tree = v.scene()->itemsBoundingRect();
        // After a step change: readable, the root's end in view, the rest scrolls.
        QCOMPARE(gv->zoom(), 0.6);
        QVERIFY(visible().contains(v.nodeItem(0)->path().boundingRect()));
        QVERIFY(!visible().contains(tree));
        // Fit: all of it, and it stays fitted when the view grows.
        v.findChild<QPushButton*>("fitButton")->click();
        QVERIFY(gv->zoom() < 0.6);
        QVERIFY(visible().adjusted(-1, -1, 1, 1).contains(tree));
        v.resize(900, 650);
        QTest::qWait(50);
        QVERIFY(visible().adjusted(-1, -1, 1, 1).contains(tree));
        // Its rejected nodes are leaves: focus has nothing to fold.
        v.setFocusAcceptedPath(true);
        QCOMPARE(v.drawnNodeCount(), 65);
    }

    void bigTreesOpenOnTheAcceptedPath() {
        // Budgets 32 to 64 draw trees taller than the view: the step opens at a readable zoom
        // with the whole accepted path (and the bonus box) in view, wherever it runs.
        for (const bool bottom : {true, false}) {
            TreeRunResult run;
            run.budget = 64;
            run.steps = {bottom ? bottomPathStep(30) : bigStep(30), bottom ? bottomPathStep(40) : bigStep(40)};
            run.acceptanceLengths = {9, 9};
            AcceptanceTreeView v;
            v.resize(1000, 500);
            v.setRuns({run}, piece);
            v.show();
            QVERIFY(QTest::qWaitForWindowExposed(&v));
            QTest::qWait(20);
            auto* gv = v.graphicsView();
            QCOMPARE(gv->zoom(), 0.6);
            QVERIFY(!gv->mapToScene(gv->viewport()->rect()).boundingRect().contains(v.scene()->itemsBoundingRect()));
            QVERIFY2(v.acceptedPathVisible(), bottom ? "path along the bottom" : "path along the top");
            // The next step opens on its path too, after the user scrolled away.
            gv->centerOn(v.scene()->itemsBoundingRect().bottomLeft());
            QVERIFY(!v.acceptedPathVisible());
            v.setCurrentStep(1);
            QVERIFY2(v.acceptedPathVisible(), "second step");
        }
    }

    void controlsAndNodeTableFitANarrowDock() {
        // Budgets with long entries ("32 nodes: tau 3.267, 300 steps"), in a dock as narrow
        // as the right-hand views at 1600x1000.
        std::vector<TreeRunResult> runs;
        for (int b : {4, 8, 16, 32}) {
            TreeRunResult r = threeStepRun(b, 3.267);
            r.steps.resize(300, r.steps.back());
            runs.push_back(r);
        }
        AcceptanceTreeView v;
        v.resize(520, 700);
        v.setRuns(runs, piece);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        // The budget box shows its longest entry whole.
        auto* combo = v.findChild<QComboBox*>("budgetCombo");
        QVERIFY(combo);
        QCOMPARE(combo->itemText(3), QString("32 nodes: tau 3.267, 300 steps"));
        int longest = 0;
        for (int i = 0; i < combo->count(); ++i)
            longest = std::max(longest, combo->fontMetrics().horizontalAdvance(combo->itemText(i)));
        QStyleOptionComboBox opt;
        opt.initFrom(combo);
        const QRect text = combo->style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, combo);
        QVERIFY2(text.width() >= longest, qPrintable(QString("text field %1 px < %2 px").arg(text.width()).arg(longest)));
        // Every control is inside the view.
        for (auto* w : std::initializer_list<QWidget*>{combo, v.findChild<QSpinBox*>("treeStepSpin"),
                                                        v.findChild<QCheckBox*>("focusPathCheck"),
                                                        v.findChild<QPushButton*>("fitButton")}) {
            QVERIFY(w);
            QVERIFY2(QRect(QPoint(0, 0), v.size()).contains(QRect(w->mapTo(&v, QPoint(0, 0)), w->size())),
                     qPrintable(w->objectName()));
        }
        // The nodes table keeps each column's width and scrolls sideways to the last one.
        auto* table = v.findChild<QTableView*>();
        QVERIFY(table);
        QCOMPARE(table->model(), static_cast<QAbstractItemModel*>(v.nodesTable()));
        const int columns = table->model()->columnCount();
        int total = 0;
        for (int c = 0; c < columns; ++c) {
            QVERIFY(table->columnWidth(c) >= table->horizontalHeader()->sectionSizeHint(c));
            total += table->columnWidth(c);
        }
        QVERIFY(total > table->viewport()->width());
        QVERIFY(table->horizontalScrollBar()->isVisible());
        table->horizontalScrollBar()->setValue(table->horizontalScrollBar()->maximum());
        QCOMPARE(table->columnViewportPosition(columns - 1) + table->columnWidth(columns - 1), table->viewport()->width());
        // The legend breaks between entries only: no entry's words are split.
        auto* legend = v.findChild<QLabel*>("treeLegend");
        QVERIFY(legend);
        QVERIFY(legend->text().contains("rejected&nbsp;by&nbsp;the&nbsp;target"));
        QVERIFY(legend->heightForWidth(legend->width()) <= legend->height());
    }

    void whitespaceShownAsGlyphsExportedRaw() {
        // The one convention (token_display.h).
        QCOMPARE(displayPiece(" a\tb\r\n"), QString("\u00b7a\u21e5b\u21e4\u21b5"));
        QCOMPARE(displayPiece("abcdefgh", 5), QString("abcd\u2026"));
        QCOMPARE(quotedPiece(" x"), QString("'\u00b7x'"));
        QVERIFY(whitespaceLegend().contains("\u00b7 space") && whitespaceLegend().contains("\u21b5 newline"));
        // In running HTML (the output strip): escaped, spaces non-breaking, a tab four of them.
        QCOMPARE(pieceHtml("a<b> &\t\r\n"), QString("a&lt;b&gt;&nbsp;&amp;&nbsp;&nbsp;&nbsp;&nbsp;\u21e4\u21b5"));
        // The DDTree table shows glyphs; its CSV and JSON hold the raw text.
        AcceptanceTreeView v;
        v.setRuns({threeStepRun(8, 2.667)}, [](std::int64_t id) { return id == 22 ? QString(" if\n") : piece(id); });
        QCOMPARE(v.nodesTable()->index(5, 2).data().toString(), QString("\u00b7if\u21b5"));
        QTemporaryDir dir;
        QString err;
        v.exportAll(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QFile json(dir.filePath("ddtree_nodes.json"));
        QVERIFY(json.open(QIODevice::ReadOnly));
        const QByteArray text = json.readAll();
        QCOMPARE(QJsonDocument::fromJson(text).array()[5].toObject()["piece"].toString(), QString(" if\n"));
        // Keys in column order.
        QVERIFY(text.indexOf("\"index\"") < text.indexOf("\"token id\"") &&
                text.indexOf("\"token id\"") < text.indexOf("\"piece\"") &&
                text.indexOf("\"piece\"") < text.indexOf("\"depth\"") && text.indexOf("\"on path\"") < text.indexOf("\"state\""));
        QFile csv(dir.filePath("ddtree_nodes.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QVERIFY(csv.readAll().contains("\r\n5,22,\" if\n\",2,1,"));
        // A figure title (prompt and drafter) is drawn above the figure; tables stay as they were.
        QTemporaryDir titled;
        v.setFigureTitle("prompt fibonacci, drafter A: demo-drafter");
        v.exportAll(titled.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QFile svg(titled.filePath("ddtree_tree.svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        QVERIFY(svg.readAll().contains("prompt fibonacci, drafter A: demo-drafter"));
        QCOMPARE(QImage(titled.filePath("ddtree_tree.png")).height(), QImage(dir.filePath("ddtree_tree.png")).height() + 2 * 22);
        QFile plain(dir.filePath("ddtree_nodes.csv")), withTitle(titled.filePath("ddtree_nodes.csv"));
        QVERIFY(plain.open(QIODevice::ReadOnly) && withTitle.open(QIODevice::ReadOnly));
        QCOMPARE(withTitle.readAll(), plain.readAll());
        BudgetSweepPlot sweep;
        sweep.setRuns(RunResult{}, {threeStepRun(4, 2.0)});
        sweep.setFigureTitle("prompt p7, drafter B: leak");
        const int rows = sweep.plot()->plotLayout()->rowCount();
        sweep.exportAll(titled.path(), &err);
        QFile sweepSvg(titled.filePath("ddtree_budget_sweep.svg"));
        QVERIFY(sweepSvg.open(QIODevice::ReadOnly));
        QVERIFY(sweepSvg.readAll().contains("prompt p7, drafter B: leak"));
        QCOMPARE(sweep.plot()->plotLayout()->rowCount(), rows);  // the title row is gone after the export
    }

    void budgetSweepData() {
        BudgetSweepPlot p;
        RunResult chain;
        chain.tau = 2.25;
        chain.steps.resize(4);
        chain.promptIds = {1, 2};
        chain.outputIds = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        std::vector<TreeRunResult> trees = {threeStepRun(16, 3.5), threeStepRun(4, 2.0), threeStepRun(8, 2.75)};
        p.setRuns(chain, trees);
        QCOMPARE(p.budgets(), (QVector<double>{4, 8, 16}));
        QCOMPARE(p.taus(), (QVector<double>{2.0, 2.75, 3.5}));
        QCOMPARE(p.chainTau(), 2.25);
        auto* plot = p.plot();
        QCOMPARE(plot->graphCount(), 2);
        QCOMPARE(plot->graph(0)->data()->size(), 3);
        QCOMPARE(plot->graph(0)->data()->at(1)->key, 8.0);
        QCOMPARE(plot->graph(0)->data()->at(1)->value, 2.75);
        QVERIFY(plot->graph(1)->name().startsWith("chain"));
        QCOMPARE(plot->graph(1)->data()->at(0)->value, 2.25);
        QCOMPARE(plot->xAxis->scaleType(), QCPAxis::stLogarithmic);
        auto* t = p.table();
        QCOMPARE(t->rowCount(), 4);
        QCOMPARE(t->index(0, 1).data().toInt(), 4);
        QCOMPARE(t->index(2, 2).data().toDouble(), 3.5);
        QCOMPARE(t->index(2, 3).data().toInt(), 3);
        QCOMPARE(t->index(2, 4).data().toInt(), 8);
        QCOMPARE(t->index(3, 0).data().toString(), QString("chain"));
        QCOMPARE(t->index(3, 2).data().toDouble(), 2.25);
        QCOMPARE(t->index(3, 4).data().toInt(), 7);
        // Without a chain run: no chain line.
        p.setRuns(RunResult{}, trees);
        QVERIFY(std::isnan(p.chainTau()));
        QCOMPARE(p.plot()->graphCount(), 1);
        QCOMPARE(p.table()->rowCount(), 3);
    }

    void budgetSweepLegendStaysInsideInCompareMode() {
        // Compare mode's entries name the drafters and are long: in a narrow dock one a row,
        // every entry inside the plot; in a wide one two a row, as exported at 640 px.
        BudgetSweepPlot p;
        RunResult chain;
        chain.tau = 2.25;
        chain.steps.resize(4);
        const std::vector<TreeRunResult> trees = {threeStepRun(4, 2.0), threeStepRun(8, 2.75)};
        p.setRuns(chain, trees);
        p.setComparison(chain, trees, "drafter-with-a-long-name", "drafter-anchor-leak-long-name");
        auto* legend = p.plot()->legend;
        QCOMPARE(legend->itemCount(), 4);
        for (int width : {340, 900}) {
            p.resize(width, 400);
            p.show();
            QVERIFY(QTest::qWaitForWindowExposed(&p));
            p.plot()->replot();
            QCOMPARE(legend->wrap(), width < 600 ? 1 : 2);
            for (int i = 0; i < legend->itemCount(); ++i)
                QVERIFY2(legend->item(i)->outerRect().right() <= p.plot()->width(),
                         qPrintable(QString("entry %1 ends at %2 of %3 px").arg(i)
                                        .arg(legend->item(i)->outerRect().right()).arg(p.plot()->width())));
        }
        QTemporaryDir dir;
        QString err;
        p.resize(340, 400);
        QCoreApplication::processEvents();
        QCOMPARE(p.exportAll(dir.path(), &err).size(), 5);
        QCOMPARE(legend->wrap(), 1);  // back to the on-screen width after the 640 px export
    }

    void exportsAreValid() {
        QTemporaryDir dir;
        AcceptanceTreeView v;
        v.resize(900, 700);
        TreeRunResult run = threeStepRun(8, 2.667);
        v.setRuns({run}, piece);
        QString err;
        const auto written = v.exportAll(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(written.size(), 5);
        QImage png(dir.filePath("ddtree_tree.png"));
        QVERIFY(png.width() > 600 && png.height() > 300);
        QFile svg(dir.filePath("ddtree_tree.svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        const QByteArray svgText = svg.readAll();
        QVERIFY(svgText.contains("<svg"));
        QVERIFY(svgText.contains("t40"));  // the bonus token's piece is drawn as text
        QFile pdf(dir.filePath("ddtree_tree.pdf"));
        QVERIFY(pdf.open(QIODevice::ReadOnly));
        QVERIFY(pdf.read(5) == "%PDF-");
        QFile json(dir.filePath("ddtree_nodes.json"));
        QVERIFY(json.open(QIODevice::ReadOnly));
        const auto arr = QJsonDocument::fromJson(json.readAll()).array();
        QCOMPARE(arr.size(), 9);
        QCOMPARE(arr[6].toObject()["on path"].toBool(), true);
        QCOMPARE(arr[6].toObject()["token id"].toInteger(), 31);
        QCOMPARE(arr[2].toObject()["state"].toString(), QString("rejected"));
        QFile csv(dir.filePath("ddtree_nodes.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const auto lines = QString::fromUtf8(csv.readAll()).split("\r\n", Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 10);
        QCOMPARE(lines[0], QString("index,token id,piece,depth,parent,draft prob,target choice id,target choice piece,"
                                   "on path,state"));
        QVERIFY(lines[6].startsWith("5,22,t22,2,1,"));

        BudgetSweepPlot p;
        p.setRuns(RunResult{}, {threeStepRun(4, 2.0), threeStepRun(8, 2.5)});
        const auto w2 = p.exportAll(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(w2.size(), 5);
        for (const auto& f : w2) QVERIFY2(QFileInfo(f).size() > 50, qPrintable(f));

        MaskView m;
        std::vector<QString> pieces(9, "x");
        m.setTreeStep(toyStep(), 8, 0, pieces);
        const auto w3 = m.exportAll(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QVERIFY(w3.contains(dir.filePath("mask_tree.csv")));
        QFile treeCsv(dir.filePath("mask_tree.csv"));
        QVERIFY(treeCsv.open(QIODevice::ReadOnly));
        const auto rows = QString::fromUtf8(treeCsv.readAll()).split("\r\n", Qt::SkipEmptyParts);
        QCOMPARE(rows.size(), 10);
        QCOMPARE(rows[9], QString("n8,1,1,0,0,1,0,0,0,1,1"));
        QCOMPARE(m.mode(), MaskView::Mode::Inference);  // restored after the export
    }
};

QTEST_MAIN(TestTreeViews)
#include "tst_tree_views.moc"
