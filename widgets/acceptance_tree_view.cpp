#include "acceptance_tree_view.h"

#include "figure_export.h"
#include "tree_scene.h"
#include "token_display.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace draftscope {


// ---- AcceptanceTreeView ---------------------------------------------------------------

AcceptanceTreeView::AcceptanceTreeView(QWidget* parent)
    : QWidget(parent), budgetCombo_(new QComboBox(this)), stepSpin_(new QSpinBox(this)),
      focusCheck_(new QCheckBox(tr("Focus accepted path"), this)), stepInfo_(new QLabel(this)),
      scene_(new QGraphicsScene(this)), view_(new ZoomableGraphicsView(scene_, this)), tableView_(new QTableView(this)),
      table_(new TreeNodesTable(this)) {
    setObjectName("AcceptanceTreeView");
    budgetCombo_->setObjectName("budgetCombo");
    budgetCombo_->setToolTip(tr("DDTree budget: tree nodes drafted per verify step"));
    stepSpin_->setObjectName("treeStepSpin");
    stepSpin_->setToolTip(tr("Verify step of the DDTree run (1-based). Selecting a chain step selects the tree step "
                             "that verified the chain step's anchor position."));
    stepSpin_->setPrefix(tr("step "));
    stepSpin_->setRange(0, 0);
    auto* fit = new QPushButton(tr("Fit"), this);
    fit->setObjectName("fitButton");
    fit->setToolTip(tr("Scale the whole tree to fit the view (wheel zooms, drag pans)"));
    focusCheck_->setObjectName("focusPathCheck");
    focusCheck_->setToolTip(tr("Fold the subtree below every rejected node (a folded node shows +k for its k hidden "
                               "nodes). Double-click a node off the accepted path to fold or unfold it."));
    stepInfo_->setObjectName("treeStepInfo");
    stepInfo_->setWordWrap(true);
    auto* legend = new QLabel(this);
    legend->setText(treeLegendHtml());
    legend->setObjectName("treeLegend");
    legend->setWordWrap(true);

    // The budget box is as wide as its longest entry ("32 nodes: tau 3.267, 30 steps"), so
    // the step selector shares its line and Focus / Fit get the next one.
    budgetCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Budget"), this));
    controls->addWidget(budgetCombo_);
    controls->addWidget(stepSpin_);
    controls->addStretch(1);
    auto* treeControls = new QHBoxLayout;
    treeControls->addWidget(focusCheck_);
    treeControls->addWidget(fit);
    treeControls->addStretch(1);

    view_->setObjectName("treeGraphicsView");
    view_->setMinimumHeight(220);
    table_->setObjectName("ddtree_nodes");
    tableView_->setModel(table_);
    tableView_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    tableView_->verticalHeader()->setVisible(false);
    tableView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Columns keep the width their contents need; when they do not all fit, the table
    // scrolls sideways (pixel by pixel, so the last column scrolls fully into view).
    tableView_->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    tableView_->setHorizontalScrollMode(QAbstractItemView::ScrollPerPixel);
    tableView_->horizontalHeader()->setStretchLastSection(false);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(view_);
    split->addWidget(tableView_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    split->setSizes({480, 160});
    tableView_->setMinimumHeight(80);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addLayout(treeControls);
    layout->addWidget(stepInfo_);
    layout->addWidget(legend);
    layout->addWidget(split, 1);

    connect(budgetCombo_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (updating_) return;
        run_ = i;
        // The same chain position, in this budget's steps (the step index means nothing here).
        const auto* r = currentRun();
        const int steps = r ? static_cast<int>(r->steps.size()) : 0;
        step_ = steps == 0 ? -1 : position_ >= 0 ? treeStepCovering(*r, position_) : std::clamp(step_, 0, steps - 1);
        rebuild();
    });
    connect(stepSpin_, &QSpinBox::valueChanged, this, [this](int v) {
        if (!updating_) setCurrentStep(v - 1);
    });
    connect(focusCheck_, &QCheckBox::toggled, this, [this](bool on) { setFocusAcceptedPath(on); });
    connect(fit, &QPushButton::clicked, this, &AcceptanceTreeView::fitTree);
    connect(view_, &ZoomableGraphicsView::zoomedByUser, this, [this] { autoFit_ = AutoFit::Off; });
    connect(view_, &ZoomableGraphicsView::itemDoubleClicked, this, [this](QGraphicsItem* item) {
        const QVariant node = item->data(0);
        if (node.isValid()) setSubtreeFolded(node.toInt(), !isSubtreeFolded(node.toInt()));
    });
    // A fit while hidden (a background dock tab) used a meaningless viewport size: refit.
    connect(view_, &ZoomableGraphicsView::viewportChanged, this, &AcceptanceTreeView::applyFit);
    installExportMenu(view_, exportName(), [this](const QString& p, QString* e) { return exportScene(scene_, p, e, 16, figureTitle()); },
                      table_);
    rebuild();
}

void AcceptanceTreeView::clear() { setRuns({}, {}); }

QString AcceptanceTreeView::stepInfoText() const { return stepInfo_->text(); }

void AcceptanceTreeView::setEmptyText(const QString& text) {
    if (text == emptyText_) return;
    emptyText_ = text;
    if (runs_.empty()) rebuild();
}


void AcceptanceTreeView::setRuns(const std::vector<TreeRunResult>& runs, PieceFn pieceOf) {
    const int keep = currentBudget();
    runs_ = runs;
    pieceOf_ = std::move(pieceOf);
    updating_ = true;
    budgetCombo_->clear();
    run_ = runs_.empty() ? -1 : 0;
    for (std::size_t i = 0; i < runs_.size(); ++i) {
        const auto& r = runs_[i];
        budgetCombo_->addItem(tr("%1 nodes: tau %2, %3 steps").arg(r.budget).arg(r.tau, 0, 'f', 3).arg(r.steps.size()),
                              r.budget);
        if (r.budget == keep) run_ = static_cast<int>(i);
    }
    budgetCombo_->setCurrentIndex(run_);
    updating_ = false;
    step_ = currentRun() && !currentRun()->steps.empty() ? 0 : -1;
    position_ = -1;
    drawnRun_ = drawnStep_ = -2;  // new runs: fold afresh even at the same indices
    rebuild();
}

int AcceptanceTreeView::currentBudget() const { return currentRun() ? currentRun()->budget : 0; }

bool AcceptanceTreeView::setCurrentBudget(int budget) {
    for (std::size_t i = 0; i < runs_.size(); ++i)
        if (runs_[i].budget == budget) {
            budgetCombo_->setCurrentIndex(static_cast<int>(i));  // rebuilds through the signal
            return true;
        }
    return false;
}

const TreeRunResult* AcceptanceTreeView::currentRun() const {
    return run_ >= 0 && run_ < static_cast<int>(runs_.size()) ? &runs_[static_cast<std::size_t>(run_)] : nullptr;
}

const TreeStep* AcceptanceTreeView::currentTreeStep() const {
    const auto* r = currentRun();
    return r && step_ >= 0 && step_ < static_cast<int>(r->steps.size()) ? &r->steps[static_cast<std::size_t>(step_)]
                                                                          : nullptr;
}

void AcceptanceTreeView::setCurrentStep(int step) {
    const auto* r = currentRun();
    const int n = r ? static_cast<int>(r->steps.size()) : 0;
    if (n > 0) position_ = r->steps[static_cast<std::size_t>(std::clamp(step, 0, n - 1))].start;
    selectStep(step);
}

void AcceptanceTreeView::selectStep(int step) {
    const auto* r = currentRun();
    const int n = r ? static_cast<int>(r->steps.size()) : 0;
    const int s = n == 0 ? -1 : std::clamp(step, 0, n - 1);
    if (s == step_ && drawnRun_ == run_ && drawnStep_ == s) return;
    step_ = s;
    rebuild();
}

void AcceptanceTreeView::showPosition(std::int64_t position) {
    position_ = position;
    if (const auto* r = currentRun()) selectStep(treeStepCovering(*r, position));
}

void AcceptanceTreeView::setFocusAcceptedPath(bool on) {
    if (focusCheck_->isChecked() != on) {
        focusCheck_->setChecked(on);  // toggled() comes back here
        return;
    }
    focus_ = on;
    drawnStep_ = -2;  // fold afresh
    rebuild();
}

void AcceptanceTreeView::foldDefaults() {
    const TreeStep* st = currentTreeStep();
    folded_ = focus_ && st ? focusFolds(*st, states_) : std::vector<bool>(states_.size(), false);
}

bool AcceptanceTreeView::setSubtreeFolded(int node, bool folded) {
    const TreeStep* st = currentTreeStep();
    if (!st || node < 0 || node >= static_cast<int>(states_.size()) ||
        states_[static_cast<std::size_t>(node)] == TreeNodeState::Accepted)
        return false;
    if (std::find(st->parents.begin(), st->parents.end(), node) == st->parents.end()) return false;  // a leaf
    if (folded_[static_cast<std::size_t>(node)] == folded) return true;
    folded_[static_cast<std::size_t>(node)] = folded;
    rebuild();
    return true;
}

bool AcceptanceTreeView::isSubtreeFolded(int node) const {
    return node >= 0 && node < static_cast<int>(folded_.size()) && folded_[static_cast<std::size_t>(node)];
}

int AcceptanceTreeView::drawnNodeCount() const {
    return static_cast<int>(std::count_if(nodeItems_.begin(), nodeItems_.end(), [](auto* i) { return i != nullptr; }));
}

int AcceptanceTreeView::hiddenNodeCount() const { return static_cast<int>(states_.size()) - drawnNodeCount(); }

QString AcceptanceTreeView::piece(std::int64_t id) const {
    return pieceOf_ ? pieceOf_(id) : QStringLiteral("#%1").arg(id);
}

QGraphicsPathItem* AcceptanceTreeView::nodeItem(int i) const {
    return i >= 0 && i < static_cast<int>(nodeItems_.size()) ? nodeItems_[static_cast<std::size_t>(i)] : nullptr;
}

QGraphicsPathItem* AcceptanceTreeView::edgeItem(int i) const {
    return i >= 0 && i < static_cast<int>(edgeItems_.size()) ? edgeItems_[static_cast<std::size_t>(i)] : nullptr;
}

QString AcceptanceTreeView::bonusText() const { return bonusLabel_ ? bonusLabel_->text() : QString(); }

QString AcceptanceTreeView::targetChoiceText(int node) const {
    return node >= 0 && node < static_cast<int>(targetLabels_.size()) && targetLabels_[static_cast<std::size_t>(node)]
               ? targetLabels_[static_cast<std::size_t>(node)]->text()
               : QString();
}

void AcceptanceTreeView::rebuild() {
    scene_->clear();
    nodeItems_.clear();
    edgeItems_.clear();
    targetLabels_.clear();
    bonusItem_ = nullptr;
    bonusLabel_ = nullptr;
    states_.clear();
    const bool newStep = drawnRun_ != run_ || drawnStep_ != step_;
    drawnRun_ = run_;
    drawnStep_ = step_;

    const auto* run = currentRun();
    updating_ = true;
    const int steps = run ? static_cast<int>(run->steps.size()) : 0;
    stepSpin_->setRange(steps > 0 ? 1 : 0, steps);
    stepSpin_->setSuffix(steps > 0 ? tr(" of %1").arg(steps) : QString());
    stepSpin_->setValue(step_ + 1);
    stepSpin_->setEnabled(steps > 0);
    budgetCombo_->setEnabled(!runs_.empty());
    updating_ = false;

    const TreeStep* st = currentTreeStep();
    if (!st) {
        stepInfo_->setText(runs_.empty() ? (emptyText_.isEmpty()
                                                ? tr("No DDTree runs: enter DDTree budgets in the Prompt panel and run (hybrid "
                                                     "targets cannot run DDTree; the Log says why a tree run failed).")
                                                : emptyText_)
                                         : tr("This DDTree run has no verify steps."));
        auto* t = scene_->addSimpleText(stepInfo_->text());
        t->setBrush(Qt::darkGray);
        scene_->setSceneRect(scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20));
        applyFit();
        table_->showStep(currentTreeStep(), states_, [this](std::int64_t id) { return piece(id); });
        emit treeStepChanged(currentBudget(), -1);
        return;
    }
    states_ = treeNodeStates(*st);
    if (newStep || folded_.size() != states_.size()) foldDefaults();
    const int n = static_cast<int>(st->tokens.size());
    TreeSceneItems items = drawTreeStep(scene_, *st, states_, layoutTree(*st, folded_),
                                        tr("DDTree budget %1, step %2 of %3").arg(run->budget).arg(step_ + 1).arg(steps),
                                        [this](std::int64_t id) { return piece(id); }, font());
    nodeItems_ = std::move(items.nodes);
    edgeItems_ = std::move(items.edges);
    targetLabels_ = std::move(items.targetLabels);
    bonusItem_ = items.bonus;
    bonusLabel_ = items.bonusLabel;
    const int len = st->acceptanceLength();
    stepInfo_->setText(tr("Step %1 of %2 (budget %3, tau %4): %5 nodes, root at position %6, acceptance length %7, "
                          "bonus %8")
                           .arg(step_ + 1).arg(steps).arg(run->budget).arg(run->tau, 0, 'f', 3).arg(n - 1)
                           .arg(st->start).arg(len).arg(quotedPiece(piece(st->bonusToken), 14)));
    scene_->setSceneRect(scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20));
    table_->showStep(currentTreeStep(), states_, [this](std::int64_t id) { return piece(id); });
    if (newStep && autoFit_ == AutoFit::Off) autoFit_ = AutoFit::Readable;  // the user's zoom was for another tree
    applyFit();
    emit treeStepChanged(run->budget, step_);
}

void AcceptanceTreeView::fitTree() {
    autoFit_ = AutoFit::Whole;
    applyFit();
}

void AcceptanceTreeView::applyFit() {
    if (autoFit_ == AutoFit::Off || scene_->items().isEmpty()) return;
    // Readable: never below 0.6 (a large tree scrolls instead, starting at the root's end);
    // Whole: as small as the whole tree needs. Neither blows a small tree up past 1:1.
    constexpr double kReadableZoom = 0.6, kSmallestZoom = 0.02;
    const bool whole = autoFit_ == AutoFit::Whole;
    const QRectF r = scene_->sceneRect();
    const double z = view_->fitRect(r, whole ? kSmallestZoom : kReadableZoom, 1.0);
    if (!whole && z <= kReadableZoom + 1e-9 && !nodeItems_.empty() && nodeItems_.front()) view_->centerOn(acceptedPathFocus(z));
}

QPointF AcceptanceTreeView::acceptedPathFocus(double zoom) const {
    // The accepted path (root, accepted nodes, the bonus token): its bounding box when it fits
    // the viewport at `zoom`, else its part nearest the root, so a large tree opens on the
    // nodes that matter whatever its budget (the path may run far from the root's row).
    QRectF path;
    for (std::size_t i = 0; i < nodeItems_.size() && i < states_.size(); ++i)
        if (nodeItems_[i] && states_[i] == TreeNodeState::Accepted) path |= nodeItems_[i]->sceneBoundingRect();
    if (bonusItem_) path |= bonusItem_->sceneBoundingRect();
    if (path.isNull()) return nodeItems_.front()->sceneBoundingRect().center();
    const double w = view_->viewport()->width() / zoom, h = view_->viewport()->height() / zoom;
    const double margin = 24;  // scene units around the path
    const double x = path.width() + 2 * margin <= w ? path.center().x() : path.left() - margin + w / 2;
    // Vertically: the path's middle when it fits, else the rows of the path inside the
    // horizontal span shown.
    if (path.height() + 2 * margin <= h) return {x, path.center().y()};
    QRectF shown;
    const QRectF span(x - w / 2, path.top(), w, path.height());
    for (std::size_t i = 0; i < nodeItems_.size() && i < states_.size(); ++i)
        if (nodeItems_[i] && states_[i] == TreeNodeState::Accepted && span.intersects(nodeItems_[i]->sceneBoundingRect()))
            shown |= nodeItems_[i]->sceneBoundingRect();
    return {x, shown.isNull() ? path.center().y() : shown.center().y()};
}

bool AcceptanceTreeView::acceptedPathVisible() const {
    const QRectF seen = view_->mapToScene(view_->viewport()->rect()).boundingRect();
    for (std::size_t i = 0; i < nodeItems_.size() && i < states_.size(); ++i)
        if (nodeItems_[i] && states_[i] == TreeNodeState::Accepted && !seen.contains(nodeItems_[i]->sceneBoundingRect()))
            return false;
    return !bonusItem_ || seen.contains(bonusItem_->sceneBoundingRect());
}

QStringList AcceptanceTreeView::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.figure(exportName(), [this](const QString& path, QString* e) { return exportScene(scene_, path, e, 16, figureTitle()); }) &&
        set.table(QStringLiteral("ddtree_nodes"), table_);
    return set.written();
}

}  // namespace draftscope
