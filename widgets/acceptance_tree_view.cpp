#include "acceptance_tree_view.h"

#include "figure_export.h"
#include "legend_html.h"
#include "token_display.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainterPath>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace draftscope {

namespace {

// Geometry of the layout (scene units = pixels at zoom 1).
constexpr double kBoxW = 124, kBoxH = 40, kColGap = 40, kRowH = 66, kTop = 76;

struct Style {
    QColor fill, border;
    double opacity;
};
const Style kAccepted{QColor(0xc7, 0xe9, 0xc0), QColor(0x23, 0x8b, 0x45), 1.0};
const Style kRoot{QColor(0xc6, 0xdb, 0xef), QColor(0x23, 0x8b, 0x45), 1.0};
const Style kRejected{QColor(0xfc, 0xbb, 0xa1), QColor(0xcb, 0x18, 0x1d), 0.45};
const Style kUnreached{QColor(0xf0, 0xf0, 0xf0), QColor(0x96, 0x96, 0x96), 0.35};
const QColor kBonusFill(0xff, 0xf3, 0xcd), kBonusBorder(0xe6, 0x55, 0x0d);
const QColor kPathEdge(0x23, 0x8b, 0x45), kOtherEdge(0x96, 0x96, 0x96);
constexpr double kPathEdgeWidth = 4.0, kOtherEdgeWidth = 1.2;

/// A piece as shown in a node: quoted, whitespace visible, at most 14 characters.
QString shownPiece(const QString& piece) { return quotedPiece(piece, 14); }

QString stateName(TreeNodeState s) {
    switch (s) {
    case TreeNodeState::Accepted: return QStringLiteral("accepted");
    case TreeNodeState::Rejected: return QStringLiteral("rejected");
    case TreeNodeState::Unreached: return QStringLiteral("unreached");
    }
    return {};
}

}  // namespace

// ---- ZoomableGraphicsView -------------------------------------------------------------

ZoomableGraphicsView::ZoomableGraphicsView(QGraphicsScene* scene, QWidget* parent) : QGraphicsView(scene, parent) {
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    setBackgroundBrush(Qt::white);
}

double ZoomableGraphicsView::zoom() const { return transform().m11(); }

void ZoomableGraphicsView::wheelEvent(QWheelEvent* e) {
    const double steps = e->angleDelta().y() / 120.0;
    if (steps == 0) return;
    const double factor = std::pow(1.15, steps);
    const double z = zoom() * factor;
    if (z < 0.05 || z > 20) return;
    scale(factor, factor);
    e->accept();
    emit zoomedByUser();
}

void ZoomableGraphicsView::mouseDoubleClickEvent(QMouseEvent* e) {
    if (QGraphicsItem* item = itemAt(e->position().toPoint())) {
        emit itemDoubleClicked(item->topLevelItem());
        e->accept();
        return;
    }
    QGraphicsView::mouseDoubleClickEvent(e);
}

void ZoomableGraphicsView::resizeEvent(QResizeEvent* e) {
    QGraphicsView::resizeEvent(e);
    sizeMayHaveChanged();
}

void ZoomableGraphicsView::showEvent(QShowEvent* e) {
    QGraphicsView::showEvent(e);
    sizeMayHaveChanged();
}

void ZoomableGraphicsView::sizeMayHaveChanged() {
    // The viewport is resized when the scroll bars come or go, the view itself is not: only
    // the view's own size (first show included) asks the owner to refit.
    if (fitting_ || !isVisible() || size() == notifiedSize_) return;
    notifiedSize_ = size();
    emit viewportChanged();
}

double ZoomableGraphicsView::fitRect(const QRectF& r, double minZoom, double maxZoom) {
    if (fitting_ || r.isEmpty()) return zoom();
    fitting_ = true;
    // Measure the whole viewport: a scroll bar left over from the previous zoom would make
    // the fit smaller than the room there is.
    const auto hPolicy = horizontalScrollBarPolicy(), vPolicy = verticalScrollBarPolicy();
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    resetTransform();
    fitInView(r, Qt::KeepAspectRatio);
    const double z = std::clamp(zoom(), minZoom, maxZoom);
    setTransform(QTransform::fromScale(z, z));
    centerOn(r.center());
    setHorizontalScrollBarPolicy(hPolicy);
    setVerticalScrollBarPolicy(vPolicy);
    fitting_ = false;
    return z;
}

// ---- AcceptanceTreeView ---------------------------------------------------------------

AcceptanceTreeView::AcceptanceTreeView(QWidget* parent)
    : QWidget(parent), budgetCombo_(new QComboBox(this)), stepSpin_(new QSpinBox(this)),
      focusCheck_(new QCheckBox(tr("Focus accepted path"), this)), stepInfo_(new QLabel(this)),
      scene_(new QGraphicsScene(this)), view_(new ZoomableGraphicsView(scene_, this)), tableView_(new QTableView(this)),
      table_(new QStandardItemModel(this)) {
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
    legend->setText(legendLine({legendSwatch(kAccepted.border, tr("accepted path")), legendSwatch(kRoot.fill, tr("root (anchor)")),
                                legendSwatch(kRejected.border, tr("rejected by the target")),
                                legendSwatch(kUnreached.border, tr("below a rejection")),
                                legendSwatch(kBonusBorder, tr("bonus token")),
                                legendText(tr("+k: k nodes folded (double-click to unfold)"))}) +
                    "<br/>" + whitespaceLegendLine());
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
    folded_.assign(states_.size(), false);
    if (!focus_) return;
    const TreeStep* st = currentTreeStep();
    if (!st) return;
    for (std::size_t i = 1; i < states_.size() && i < st->parents.size(); ++i) {
        const int p = st->parents[i];
        // A rejected node with children folds.
        if (p >= 0 && static_cast<std::size_t>(p) < states_.size() && states_[static_cast<std::size_t>(p)] == TreeNodeState::Rejected)
            folded_[static_cast<std::size_t>(p)] = true;
    }
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
        stepInfo_->setText(runs_.empty() ? tr("No DDTree runs: enter DDTree budgets in the Prompt panel and run (hybrid targets cannot run "
                                              "DDTree; the Log says why a tree run failed).")
                                         : tr("This DDTree run has no verify steps."));
        auto* t = scene_->addSimpleText(stepInfo_->text());
        t->setBrush(Qt::darkGray);
        scene_->setSceneRect(scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20));
        applyFit();
        fillTable();
        emit treeStepChanged(currentBudget(), -1);
        return;
    }
    states_ = treeNodeStates(*st);
    if (newStep || folded_.size() != states_.size()) foldDefaults();
    const int n = static_cast<int>(st->tokens.size());
    const int last = st->acceptedPath.empty() ? 0 : st->acceptedPath.back();

    // Children in creation order; the bonus token is a virtual last child of the last path node.
    const int bonus = n;
    std::vector<std::vector<int>> children(static_cast<std::size_t>(n + 1));
    for (int i = 1; i < n; ++i) {
        const int p = st->parents[static_cast<std::size_t>(i)];
        if (p >= 0 && p < n) children[static_cast<std::size_t>(p)].push_back(i);
    }
    children[static_cast<std::size_t>(last)].push_back(bonus);
    // Folded subtrees: their nodes are not drawn; the folded node counts them.
    std::vector<bool> shown(static_cast<std::size_t>(n + 1), true);
    std::vector<int> hiddenBelow(static_cast<std::size_t>(n + 1), 0);
    std::function<int(int, bool)> hide = [&](int v, bool hidden) {
        shown[static_cast<std::size_t>(v)] = !hidden;
        int count = 0;
        for (int c : children[static_cast<std::size_t>(v)])
            count += 1 + hide(c, hidden || isSubtreeFolded(v));
        if (isSubtreeFolded(v)) hiddenBelow[static_cast<std::size_t>(v)] = count;
        return count;
    };
    hide(0, false);
    std::vector<double> row(static_cast<std::size_t>(n + 1), 0);
    double nextRow = 0;
    std::function<void(int)> place = [&](int v) {
        const auto& ch = children[static_cast<std::size_t>(v)];
        if (ch.empty() || isSubtreeFolded(v)) {
            row[static_cast<std::size_t>(v)] = nextRow++;
            return;
        }
        for (int c : ch) place(c);
        row[static_cast<std::size_t>(v)] = (row[static_cast<std::size_t>(ch.front())] + row[static_cast<std::size_t>(ch.back())]) / 2;
    };
    place(0);
    auto depthOf = [&](int v) { return v == bonus ? st->depths[static_cast<std::size_t>(last)] + 1 : st->depths[static_cast<std::size_t>(v)]; };
    auto topLeft = [&](int v) {
        return QPointF(depthOf(v) * (kBoxW + kColGap), kTop + row[static_cast<std::size_t>(v)] * kRowH);
    };

    QFont small = font();
    small.setPointSizeF(std::max(7.0, font().pointSizeF() - 1));
    QFont bold = font();
    bold.setBold(true);

    // Title and legend (part of the exported figure), in short lines.
    const int len = st->acceptanceLength();
    auto* titleItem = scene_->addSimpleText(tr("DDTree budget %1, step %2 of %3").arg(run->budget).arg(step_ + 1).arg(steps), bold);
    titleItem->setPos(0, 0);
    auto* sub = scene_->addSimpleText(tr("root at position %1; acceptance length %2 (root + %3 accepted); bonus %4\n"
                                         "column = depth; green = accepted path, red = rejected by the target,\n"
                                         "grey = below a rejection; p = drafter probability; +k = k nodes folded")
                                          .arg(st->start).arg(len).arg(len - 1).arg(shownPiece(piece(st->bonusToken))),
                                      small);
    sub->setBrush(Qt::darkGray);
    sub->setPos(0, 20);

    // Edges first so the boxes cover their ends.
    edgeItems_.assign(static_cast<std::size_t>(n), nullptr);
    auto edge = [&](int from, int to, const QPen& pen) {
        const QPointF a = topLeft(from) + QPointF(kBoxW, kBoxH / 2);
        const QPointF b = topLeft(to) + QPointF(0, kBoxH / 2);
        QPainterPath path(a);
        const double mid = (a.x() + b.x()) / 2;
        path.cubicTo(QPointF(mid, a.y()), QPointF(mid, b.y()), b);
        auto* e = scene_->addPath(path, pen);
        e->setZValue(-1);
        return e;
    };
    for (int i = 1; i < n; ++i) {
        const int p = st->parents[static_cast<std::size_t>(i)];
        if (p < 0 || p >= n || !shown[static_cast<std::size_t>(i)]) continue;
        const bool onPath = states_[static_cast<std::size_t>(i)] == TreeNodeState::Accepted;
        QPen pen(onPath ? kPathEdge : kOtherEdge, onPath ? kPathEdgeWidth : kOtherEdgeWidth);
        auto* e = edge(p, i, pen);
        if (!onPath) e->setOpacity(states_[static_cast<std::size_t>(i)] == TreeNodeState::Rejected ? 0.6 : 0.4);
        edgeItems_[static_cast<std::size_t>(i)] = e;
    }
    edge(last, bonus, QPen(kBonusBorder, 2, Qt::DashLine));

    auto box = [&](int v, const Style& s, Qt::PenStyle penStyle, double penWidth) {
        QPainterPath path;
        path.addRoundedRect(QRectF(topLeft(v), QSizeF(kBoxW, kBoxH)), 6, 6);
        auto* item = scene_->addPath(path, QPen(s.border, penWidth, penStyle), QBrush(s.fill));
        item->setOpacity(s.opacity);
        return item;
    };
    auto text = [&](QGraphicsItem* parent, const QString& line, const QFont& f, QPointF at, const QColor& c) {
        auto* t = new QGraphicsSimpleTextItem(line, parent);
        t->setFont(f);
        t->setBrush(c);
        t->setPos(at);
        return t;
    };
    targetLabels_.assign(static_cast<std::size_t>(n), nullptr);
    nodeItems_.assign(static_cast<std::size_t>(n), nullptr);
    for (int i = 0; i < n; ++i) {
        if (!shown[static_cast<std::size_t>(i)]) continue;
        const auto state = states_[static_cast<std::size_t>(i)];
        const Style& s = i == 0 ? kRoot : state == TreeNodeState::Accepted ? kAccepted
                                        : state == TreeNodeState::Rejected ? kRejected : kUnreached;
        auto* item = box(i, s, Qt::SolidLine, state == TreeNodeState::Accepted ? 2.5 : 1.0);
        item->setData(0, i);
        const QPointF tl = topLeft(i);
        text(item, shownPiece(piece(st->tokens[static_cast<std::size_t>(i)])), font(), tl + QPointF(6, 3), Qt::black);
        const QString second = i == 0 ? tr("root (anchor)")
                                      : tr("p %1   #%2").arg(st->drafterProbs[static_cast<std::size_t>(i)], 0, 'f', 3).arg(i);
        text(item, second, small, tl + QPointF(6, 22), QColor(0x40, 0x40, 0x40));
        item->setToolTip(tr("node %1 (%2): token %3 %4, depth %5 (position %6), parent %7, drafter probability %8%9")
                             .arg(i).arg(stateName(state)).arg(st->tokens[static_cast<std::size_t>(i)])
                             .arg(shownPiece(piece(st->tokens[static_cast<std::size_t>(i)])))
                             .arg(st->depths[static_cast<std::size_t>(i)])
                             .arg(st->start + st->depths[static_cast<std::size_t>(i)])
                             .arg(st->parents[static_cast<std::size_t>(i)])
                             .arg(st->drafterProbs[static_cast<std::size_t>(i)], 0, 'f', 4)
                             .arg(state == TreeNodeState::Accepted
                                      ? tr("; target's choice after it: %1")
                                            .arg(shownPiece(piece(st->targetChoice[static_cast<std::size_t>(i)])))
                                      : QString()));
        nodeItems_[static_cast<std::size_t>(i)] = item;
        if (const int k = hiddenBelow[static_cast<std::size_t>(i)]; k > 0) {
            auto* badge = text(item, tr("+%1").arg(k), bold, tl + QPointF(kBoxW + 4, kBoxH / 2 - 9), kOtherEdge.darker(150));
            badge->setToolTip(tr("%n node(s) folded below; double-click the node to unfold", "", k));
        }
        if (state == TreeNodeState::Accepted && i < static_cast<int>(st->targetChoice.size())) {
            auto* t = text(nullptr, tr("target \u2192 %1").arg(shownPiece(piece(st->targetChoice[static_cast<std::size_t>(i)]))),
                           small, tl + QPointF(2, kBoxH + 2), kPathEdge.darker(130));
            scene_->addItem(t);
            targetLabels_[static_cast<std::size_t>(i)] = t;
        }
    }
    bonusItem_ = box(bonus, Style{kBonusFill, kBonusBorder, 1.0}, Qt::DashLine, 2.0);
    const QPointF btl = topLeft(bonus);
    bonusLabel_ = text(bonusItem_, tr("bonus %1").arg(shownPiece(piece(st->bonusToken))), font(), btl + QPointF(6, 3), Qt::black);
    text(bonusItem_, tr("next step's root"), small, btl + QPointF(6, 22), QColor(0x40, 0x40, 0x40));
    bonusItem_->setToolTip(tr("Bonus token %1 %2: the target's choice after the last accepted node; it is committed and "
                              "becomes the next step's root").arg(st->bonusToken).arg(shownPiece(piece(st->bonusToken))));

    stepInfo_->setText(tr("Step %1 of %2 (budget %3, tau %4): %5 nodes, root at position %6, acceptance length %7, "
                          "bonus %8")
                           .arg(step_ + 1).arg(steps).arg(run->budget).arg(run->tau, 0, 'f', 3).arg(n - 1)
                           .arg(st->start).arg(len).arg(shownPiece(piece(st->bonusToken))));
    scene_->setSceneRect(scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20));
    fillTable();
    if (newStep && autoFit_ == AutoFit::Off) autoFit_ = AutoFit::Readable;  // the user's zoom was for another tree
    applyFit();
    emit treeStepChanged(run->budget, step_);
}

void AcceptanceTreeView::fillTable() {
    table_->clear();
    table_->setHorizontalHeaderLabels({tr("index"), tr("token id"), tr("piece"), tr("depth"), tr("parent"),
                                       tr("draft prob"), tr("target choice id"), tr("target choice piece"),
                                       tr("on path"), tr("state")});
    const TreeStep* st = currentTreeStep();
    if (!st) return;
    auto item = [](const QVariant& v) {
        auto* it = new QStandardItem;
        it->setData(v, Qt::DisplayRole);
        return it;
    };
    auto pieceItem = [this](std::int64_t id) {  // glyphs on screen, the raw text in exports
        auto* it = new QStandardItem(displayPiece(piece(id)));
        it->setData(piece(id), kExportRole);
        return it;
    };
    for (std::size_t i = 0; i < st->tokens.size(); ++i) {
        const bool hasChoice = i < st->targetChoice.size();
        const auto state = states_[i];
        table_->appendRow({item(static_cast<int>(i)), item(static_cast<qlonglong>(st->tokens[i])), pieceItem(st->tokens[i]),
                           item(st->depths[i]), item(st->parents[i]), item(static_cast<double>(st->drafterProbs[i])),
                           item(hasChoice ? QVariant(static_cast<qlonglong>(st->targetChoice[i])) : QVariant()),
                           hasChoice ? pieceItem(st->targetChoice[i]) : item(QString()),
                           item(state == TreeNodeState::Accepted), item(stateName(state))});
    }
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
    if (!whole && z <= kReadableZoom + 1e-9 && !nodeItems_.empty() && nodeItems_.front()) {
        const QRectF root = nodeItems_.front()->path().boundingRect();
        view_->centerOn(r.left() + view_->viewport()->width() / (2 * kReadableZoom), root.center().y());
    }
}

QStringList AcceptanceTreeView::exportAll(const QString& dir, QString* error) {
    QStringList written;
    for (const auto& fmt : figureFormats()) {
        const QString path = QDir(dir).filePath(exportName() + "." + fmt);
        if (!exportScene(scene_, path, error, 16, figureTitle())) return written;
        written << path;
    }
    for (const auto& fmt : tableFormats()) {
        const QString path = QDir(dir).filePath(QStringLiteral("ddtree_nodes.") + fmt);
        if (!exportTable(table_, path, error)) return written;
        written << path;
    }
    return written;
}

}  // namespace draftscope
