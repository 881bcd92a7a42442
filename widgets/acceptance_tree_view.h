#pragma once
// The DDTree of one verify step: the drafted tree laid out by depth (left to right), the
// target's walk along it (accepted path, rejected siblings, bonus token), a budget and a
// step selector, and the step's nodes as a table.

#include "draftscope/run_types.h"
#include "exportable_view.h"
#include "tree_nodes_table.h"
#include "tree_steps.h"
#include "zoomable_graphics_view.h"

#include <QWidget>

#include <functional>
#include <vector>

class QCheckBox;
class QComboBox;
class QGraphicsPathItem;
class QGraphicsScene;
class QGraphicsSimpleTextItem;
class QLabel;
class QSpinBox;
class QTableView;

namespace draftscope {

/// Draws the DDTree of the selected step of the selected budget's run.
///
/// Layout (layoutTree(), tree_steps.h, computed without a scene): node i sits in column
/// depths[i] (the root, i.e. the anchor, in column 0); leaves take consecutive rows in
/// creation order, a parent is centred on its children. The table is a TreeNodesTable. Each node
/// shows its token piece, its drafter probability and its index. Colours follow
/// treeNodeStates(): accepted path green with thick edges (the root, the anchor, too),
/// rejected children of path nodes red and dimmed, nodes below them grey and dimmed. Every
/// path node carries the target's choice there ("target -> piece"); the bonus token (the
/// target's choice at the last path node) hangs after that node as a dashed orange box.
/// Steps are numbered from 1 in the step selector, as elsewhere in the GUI; the API uses
/// 0-based step indices.
///
/// Large budgets (32-64 nodes): a node's subtree can be folded (double-click a node that is
/// not on the accepted path; "Focus accepted path" folds every rejected node's subtree), a
/// folded node shows "+k" for its k hidden descendants. Fit scales the whole (shown) tree
/// into the view; after a step change the view fits at a readable zoom (at least 0.6,
/// scrolling from the root). Switching the budget keeps the chain position (the linked
/// position, or the shown step's root), not the step index.
class AcceptanceTreeView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    using PieceFn = std::function<QString(std::int64_t)>;

    explicit AcceptanceTreeView(QWidget* parent = nullptr);

    /// Shows `runs` (one per budget); `pieceOf` gives a token's display piece. Keeps the
    /// selected budget if it is still there, and selects step 0.
    void setRuns(const std::vector<TreeRunResult>& runs, PieceFn pieceOf);
    void clear();
    /// What the view says while it has no tree runs (the run state's reason: running,
    /// cancelled, none asked for); empty: the default hint.
    void setEmptyText(const QString& text);
    /// The line above the tree (the step's summary, or why there is no tree).
    QString stepInfoText() const;

    int budgetCount() const { return static_cast<int>(runs_.size()); }
    /// Budget of the selected run, 0 if none.
    int currentBudget() const;
    /// Selects the run with this budget; false if there is none.
    bool setCurrentBudget(int budget);
    /// 0-based selected step of the current run, -1 if none.
    int currentStep() const { return step_; }
    /// Selects step `step` (0-based, clamped to the run); its root position becomes the
    /// position kept across budgets.
    void setCurrentStep(int step);
    /// Selects the step of the current run that verified absolute `position`
    /// (treeStepCovering): the link from the chain run's selected step. The position is
    /// kept when the budget changes.
    void showPosition(std::int64_t position);
    /// The absolute position kept across budgets (-1 before any step was chosen).
    std::int64_t keptPosition() const { return position_; }

    /// Folds every rejected node's subtree (on), or unfolds all (off); applies to every step
    /// shown from now on.
    void setFocusAcceptedPath(bool on);
    bool focusAcceptedPath() const { return focus_; }
    /// Folds or unfolds the subtree below `node` of the shown step. Nodes on the accepted
    /// path and leaves cannot fold; returns false for them.
    bool setSubtreeFolded(int node, bool folded);
    bool isSubtreeFolded(int node) const;
    /// Nodes of the shown step hidden in folded subtrees.
    int hiddenNodeCount() const;

    const TreeRunResult* currentRun() const;
    const TreeStep* currentTreeStep() const;
    /// treeNodeStates() of the shown step (empty if none).
    const std::vector<TreeNodeState>& nodeStates() const { return states_; }
    /// Tree nodes drawn (root included, bonus box excluded; folded-away nodes excluded).
    int drawnNodeCount() const;
    /// The box of node i, and the edge from its parent to it (nullptr for the root and for
    /// nodes hidden in a folded subtree).
    QGraphicsPathItem* nodeItem(int i) const;
    QGraphicsPathItem* edgeItem(int i) const;
    /// The bonus box (nullptr if no step is shown) and its text.
    QGraphicsPathItem* bonusItem() const { return bonusItem_; }
    QString bonusText() const;
    /// "target -> piece" labels of the path nodes, by node index.
    QString targetChoiceText(int node) const;

    QGraphicsScene* scene() const { return scene_; }
    ZoomableGraphicsView* graphicsView() const { return view_; }
    /// The shown step's nodes: index, token id, piece, depth, parent, draft prob, target
    /// choice id and piece, on path, state.
    TreeNodesTable* nodesTable() const { return table_; }
    /// True if every accepted node and the bonus box lie inside the viewport (what a step
    /// opens on at a readable zoom, when the path fits it).
    bool acceptedPathVisible() const;
    /// Scales the view so the whole shown tree fits (and keeps fitting on resize until the
    /// user zooms): the Fit button.
    void fitTree();

    QString exportName() const override { return QStringLiteral("ddtree_tree"); }
    /// Writes ddtree_tree.{png,svg,pdf} and the nodes table as ddtree_nodes.{csv,json}.
    QStringList exportAll(const QString& dir, QString* error) override;

signals:
    /// The shown tree step changed (budget 0 and step -1 when cleared).
    void treeStepChanged(int budget, int step);

private:
    enum class AutoFit { Off, Readable, Whole };
    void rebuild();
    void selectStep(int step);
    void applyFit();
    /// Scene point to centre a readable view at `zoom` on: the accepted path, or its part
    /// nearest the root when it is wider than the viewport.
    QPointF acceptedPathFocus(double zoom) const;
    void foldDefaults();
    QString piece(std::int64_t id) const;

    std::vector<TreeRunResult> runs_;
    PieceFn pieceOf_;
    int run_ = -1, step_ = -1;
    int drawnRun_ = -2, drawnStep_ = -2;  ///< what rebuild() last drew
    bool updating_ = false;
    AutoFit autoFit_ = AutoFit::Readable;  ///< how to refit on resize (Off once the user zooms)
    std::int64_t position_ = -1;           ///< chain position kept across budgets
    bool focus_ = false;                   ///< fold rejected subtrees of every new step
    std::vector<bool> folded_;             ///< per node of the shown step
    std::vector<TreeNodeState> states_;
    std::vector<QGraphicsPathItem*> nodeItems_, edgeItems_;
    std::vector<QGraphicsSimpleTextItem*> targetLabels_;
    QGraphicsPathItem* bonusItem_ = nullptr;
    QGraphicsSimpleTextItem* bonusLabel_ = nullptr;

    QComboBox* budgetCombo_;
    QSpinBox* stepSpin_;
    QCheckBox* focusCheck_;
    QLabel* stepInfo_;
    QGraphicsScene* scene_;
    ZoomableGraphicsView* view_;
    QTableView* tableView_;
    TreeNodesTable* table_;
    QString emptyText_;
};

}  // namespace draftscope
