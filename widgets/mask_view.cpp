#include "mask_view.h"

#include "figure_export.h"
#include "legend_html.h"
#include "token_display.h"
#include "tree_steps.h"

#include "draftscope/errors.h"

#include <qcustomplot.h>

#include <QAbstractTableModel>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace draftscope {

using draftscope::MaskConventions;
using draftscope::MaskMatrix;

namespace {

// Colours: white = masked, dark = visible; diff: red = only A, blue = only B.
const QColor kMasked(255, 255, 255);
const QColor kVisible(38, 50, 82);
const QColor kBothVisible(178, 184, 196);
const QColor kOnlyA(214, 39, 40);
const QColor kOnlyB(31, 119, 230);
const QColor kSeparator(120, 120, 120);

/// Largest mask the view draws (cells); bigger ones are refused with a message.
constexpr std::int64_t kMaxDrawnCells = std::int64_t(4) << 20;

}  // namespace

/// The three selectors of one convention set.
struct MaskView::ConventionBox {
    QComboBox* context = nullptr;
    QComboBox* block = nullptr;
    QComboBox* offset = nullptr;

    ConventionBox(QWidget* parent, QFormLayout* form, const QString& prefix) {
        context = new QComboBox(parent);
        context->setObjectName(prefix + "Context");
        context->addItem(QObject::tr("kv < anchor (strict, reference)"));
        context->addItem(QObject::tr("kv \u2264 anchor (inclusive: anchor leak)"));
        block = new QComboBox(parent);
        block->setObjectName(prefix + "Block");
        block->addItem(QObject::tr("bidirectional (reference)"));
        block->addItem(QObject::tr("causal"));
        offset = new QComboBox(parent);
        offset->setObjectName(prefix + "Offset");
        offset->addItem(QObject::tr("anchor + 0 (reference)"));
        offset->addItem(QObject::tr("anchor + 1 (off by one)"));
        for (auto* c : {context, block, offset}) {  // may narrow in a narrow dock (full text in the list)
            c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
            c->setMinimumContentsLength(10);
        }
        form->addRow(QObject::tr("Context"), context);
        form->addRow(QObject::tr("Block"), block);
        form->addRow(QObject::tr("Block positions"), offset);
    }
    MaskConventions get() const {
        MaskConventions c;
        c.context = context->currentIndex() == 1 ? MaskConventions::Context::Inclusive : MaskConventions::Context::Strict;
        c.block = block->currentIndex() == 1 ? MaskConventions::Block::Causal : MaskConventions::Block::Bidirectional;
        c.positionOffset = offset->currentIndex();
        return c;
    }
    void set(const MaskConventions& c) {
        context->setCurrentIndex(c.context == MaskConventions::Context::Inclusive ? 1 : 0);
        block->setCurrentIndex(c.block == MaskConventions::Block::Causal ? 1 : 0);
        offset->setCurrentIndex(std::clamp(c.positionOffset, 0, 1));
    }
    void setEnabled(bool on) {
        context->setEnabled(on);
        block->setEnabled(on);
        offset->setEnabled(on);
    }
};

/// The shown matrix as a table: "query" column with the row labels, then one column per key.
class MaskView::TableModel : public QAbstractTableModel {
public:
    explicit TableModel(MaskView* view) : QAbstractTableModel(view), view_(view) {}
    void reset() {
        beginResetModel();
        endResetModel();
    }
    int rowCount(const QModelIndex& parent = {}) const override {
        return parent.isValid() ? 0 : static_cast<int>(view_->shown_.empty() ? 0 : view_->maskA_.rows);
    }
    int columnCount(const QModelIndex& parent = {}) const override {
        return parent.isValid() || view_->shown_.empty() ? 0 : static_cast<int>(view_->maskA_.cols + 1);
    }
    QVariant data(const QModelIndex& index, int role) const override {
        if (!index.isValid() || (role != Qt::DisplayRole && role != Qt::EditRole)) return {};
        const auto& m = view_->maskA_;
        if (index.column() == 0) return QString::fromStdString(m.rowLabels[static_cast<std::size_t>(index.row())]);
        return static_cast<int>(view_->shown_[static_cast<std::size_t>(index.row() * m.cols + index.column() - 1)]);
    }
    QVariant headerData(int section, Qt::Orientation o, int role) const override {
        if (role != Qt::DisplayRole) return {};
        if (o == Qt::Vertical) return section;
        if (section == 0) return QStringLiteral("query");
        return QString::fromStdString(view_->maskA_.colLabels[static_cast<std::size_t>(section - 1)]);
    }

private:
    MaskView* view_;
};

MaskView::MaskView(QWidget* parent) : QWidget(parent) {
    buildUi();
    setDrafterLayout({});
    rebuild();
}

MaskView::~MaskView() = default;

void MaskView::buildUi() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);

    // Mode row: Inference (step info) | Training (S, B, anchors, window).
    auto* modeRow = new QHBoxLayout;
    modeRow->addWidget(new QLabel(tr("Mode"), this));
    modeCombo_ = new QComboBox(this);
    modeCombo_->setObjectName("modeCombo");
    modeCombo_->addItem(tr("Inference (selected step)"));
    modeCombo_->addItem(tr("Training (packed blocks)"));
    modeCombo_->addItem(tr("Tree verify (DDTree step)"));
    modeRow->addWidget(modeCombo_);
    modeStack_ = new QStackedWidget(this);
    auto* infPage = new QWidget(this);
    auto* infRow = new QHBoxLayout(infPage);
    infRow->setContentsMargins(0, 0, 0, 0);
    stepLabel_ = new QLabel(infPage);
    stepLabel_->setObjectName("stepLabel");
    stepLabel_->setWordWrap(true);  // the dock stays free of a horizontal scroll bar
    // Layer selector: Inference mode always, Training mode when a drafter layout is set.
    layerBox_ = new QWidget(this);
    auto* layerRow = new QHBoxLayout(layerBox_);
    layerRow->setContentsMargins(0, 0, 0, 0);
    layerCombo_ = new QComboBox(layerBox_);
    layerCombo_->setObjectName("layerCombo");
    layerCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    layerCombo_->setMinimumContentsLength(16);  // "1: sliding 2048 causal"; the list shows it whole
    layerCombo_->setToolTip(tr("Drafter layer whose mask is drawn: causal layers add the triangle, sliding-window "
                               "layers the band of the last W positions (DFLASH.md section 9)"));
    infRow->addWidget(stepLabel_, 1);
    layerRow->addWidget(new QLabel(tr("Layer"), layerBox_));
    layerRow->addWidget(layerCombo_);
    modeStack_->addWidget(infPage);
    auto* train = new QWidget(this);
    auto* trainRow = new QHBoxLayout(train);
    trainRow->setContentsMargins(0, 0, 0, 0);
    sSpin_ = new QSpinBox(train);
    sSpin_->setObjectName("contextSpin");
    sSpin_->setRange(0, 65536);
    sSpin_->setValue(24);
    sSpin_->setToolTip(tr("Context length S (positions 0..S-1)"));
    bSpin_ = new QSpinBox(train);
    bSpin_->setObjectName("blockSpin");
    bSpin_->setRange(1, 256);
    bSpin_->setValue(4);
    bSpin_->setToolTip(tr("Block size B"));
    anchorsEdit_ = new QLineEdit(train);
    anchorsEdit_->setObjectName("anchorsEdit");
    anchorsEdit_->setText("3, 10, 17");
    anchorsEdit_->setPlaceholderText(tr("anchors, e.g. 3, 10, 17"));
    anchorsEdit_->setToolTip(tr("Anchor position of each block, comma separated, each in [0, S)"));
    windowSpin_ = new QSpinBox(train);
    windowSpin_->setObjectName("windowSpin");
    windowSpin_->setRange(0, 65536);
    windowSpin_->setSpecialValueText(tr("none"));
    windowSpin_->setToolTip(tr("Sliding-window size W of sliding-window layers (0 = full attention); with a "
                               "drafter layout the selected layer's window and causality apply instead"));
    trainRow->addWidget(new QLabel(tr("S"), train));
    trainRow->addWidget(sSpin_);
    trainRow->addWidget(new QLabel(tr("B"), train));
    trainRow->addWidget(bSpin_);
    trainRow->addWidget(new QLabel(tr("Anchors"), train));
    trainRow->addWidget(anchorsEdit_, 1);
    trainRow->addWidget(new QLabel(tr("Window"), train));
    trainRow->addWidget(windowSpin_);
    modeStack_->addWidget(train);
    auto* treePage = new QWidget(this);
    auto* treeRow = new QHBoxLayout(treePage);
    treeRow->setContentsMargins(0, 0, 0, 0);
    treeLabel_ = new QLabel(treePage);
    treeLabel_->setObjectName("treeLabel");
    pastCheck_ = new QCheckBox(tr("Past column"), treePage);
    pastCheck_->setObjectName("pastCheck");
    pastCheck_->setChecked(true);
    pastCheck_->setToolTip(tr("One column for all committed positions before the root; every tree node sees them"));
    treeRow->addWidget(treeLabel_, 1);
    treeRow->addWidget(pastCheck_);
    modeStack_->addWidget(treePage);
    modeRow->addWidget(layerBox_);
    modeRow->addStretch(1);
    outer->addLayout(modeRow);
    outer->addWidget(modeStack_);  // its own line: the dock stays narrow

    // Convention sets A and B.
    auto* convRow = new QHBoxLayout;
    auto* boxA = boxA_ = new QGroupBox(tr("Mask A (drawn)"), this);
    auto* formA = new QFormLayout(boxA);
    convA_ = std::make_unique<ConventionBox>(boxA, formA, "a");
    convRow->addWidget(boxA);
    auto* boxB = boxB_ = new QGroupBox(tr("Diff against B"), this);
    boxB->setObjectName("diffBox");
    auto* formB = new QFormLayout(boxB);
    diffCheck_ = new QCheckBox(tr("Mark where A and B differ"), boxB);
    diffCheck_->setToolTip(tr("Show the cells where masks A and B disagree"));
    diffCheck_->setObjectName("diffCheck");
    formB->addRow(diffCheck_);
    convB_ = std::make_unique<ConventionBox>(boxB, formB, "b");
    convB_->setEnabled(false);
    convRow->addWidget(boxB);
    outer->addLayout(convRow);

    // Legend, summary, error, hover: each on its own full-width line (the legend wraps
    // between its entries only).
    legendLabel_ = new QLabel(this);
    legendLabel_->setObjectName("legendLabel");
    legendLabel_->setTextFormat(Qt::RichText);
    legendLabel_->setWordWrap(true);
    summaryLabel_ = new QLabel(this);
    summaryLabel_->setObjectName("summaryLabel");
    summaryLabel_->setWordWrap(true);
    outer->addWidget(legendLabel_);
    outer->addWidget(summaryLabel_);
    errorLabel_ = new QLabel(this);
    errorLabel_->setObjectName("errorLabel");
    errorLabel_->setStyleSheet("QLabel { color: #b00020; font-weight: bold; }");
    errorLabel_->setWordWrap(true);
    errorLabel_->hide();
    outer->addWidget(errorLabel_);
    hoverLabel_ = new QLabel(this);
    hoverLabel_->setObjectName("hoverLabel");
    hoverLabel_->setWordWrap(true);  // a long cell description wraps instead of widening the dock
    outer->addWidget(hoverLabel_);

    // Plot.
    plot_ = new QCustomPlot(this);
    plot_->setObjectName("maskPlot");
    plot_->setMinimumSize(320, 240);
    plot_->setFont(QFont("DejaVu Sans", 9));
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot_->plotLayout()->insertRow(0);
    title_ = new QCPTextElement(plot_, QString(), QFont("DejaVu Sans", 9));
    title_->setObjectName("maskTitle");
    plot_->plotLayout()->addElement(0, 0, title_);
    map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
    map_->setInterpolate(false);
    map_->setTightBoundary(false);
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis}) {
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        ticker->setSubTickCount(0);
        axis->setTicker(ticker);
        axis->setTickLabelFont(QFont("DejaVu Sans", 7));
        axis->setLabelFont(QFont("DejaVu Sans", 9));
        axis->grid()->setVisible(false);
        axis->setTickLengthOut(axis->tickLengthIn());
        axis->setTickLengthIn(0);
    }
    plot_->xAxis->setTickLabelRotation(-90);
    plot_->xAxis->setLabel(tr("key (block row @ position, or context position)"));
    plot_->yAxis->setLabel(tr("query (block row @ position)"));
    plot_->yAxis->setRangeReversed(true);
    connect(plot_->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this] { updateTicks(plot_->xAxis, xLabels_); });
    connect(plot_->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this] { updateTicks(plot_->yAxis, yLabels_); });
    connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
        updateHover(plot_->xAxis->pixelToCoord(e->position().x()), plot_->yAxis->pixelToCoord(e->position().y()));
    });
    connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this] { draw(); });
    outer->addWidget(plot_, 1);

    table_ = new TableModel(this);
    draftscope::installExportMenu(
        plot_, exportName(),
        [this](const QString& path, QString* err) {
            const QSize s = exportSize();
            return draftscope::exportPlot(plot_, path, err, s.width(), s.height(), figureTitle());
        },
        table_);

    auto changed = [this] { rebuild(); };
    connect(modeCombo_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
        modeStack_->setCurrentIndex(i);
        rebuild();
    });
    connect(sSpin_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(bSpin_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(windowSpin_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(anchorsEdit_, &QLineEdit::textChanged, this, changed);
    connect(pastCheck_, &QCheckBox::toggled, this, changed);
    connect(layerCombo_, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    for (ConventionBox* box : {convA_.get(), convB_.get()})
        for (QComboBox* c : {box->context, box->block, box->offset})
            connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(diffCheck_, &QCheckBox::toggled, this, [this](bool on) {
        convB_->setEnabled(on);
        rebuild();
    });
}

// ---- inputs --------------------------------------------------------------------------

void MaskView::setInferenceContext(std::int64_t contextLength, std::int64_t blockSize,
                                   const std::vector<QString>& tokenPieces) {
    haveStep_ = true;
    infContext_ = contextLength;
    infBlock_ = blockSize;
    pieces_ = tokenPieces;
    if (mode() == Mode::Inference) rebuild();
}

void MaskView::setDrafterLayout(const std::vector<LayerAttention>& layers) {
    const int keep = selectedLayer();
    layout_ = layers;
    updating_ = true;
    layerCombo_->clear();
    if (layout_.empty()) layerCombo_->addItem(tr("all: full bidirectional (base layout)"));
    for (std::size_t i = 0; i < layout_.size(); ++i)
        layerCombo_->addItem(tr("%1: %2").arg(i).arg(QString::fromStdString(describeLayerAttention(layout_[i]))));
    layerCombo_->setCurrentIndex(std::clamp(keep, 0, layerCombo_->count() - 1));
    updating_ = false;
    if (mode() != Mode::TreeVerify) rebuild();
}

void MaskView::setSelectedLayer(int layer) { layerCombo_->setCurrentIndex(std::clamp(layer, 0, layerCombo_->count() - 1)); }

bool MaskView::trainsPerLayer() const {
    for (const auto& l : layout_)
        if (l.needsMask()) return true;
    return false;
}

int MaskView::selectedLayer() const { return std::max(0, layerCombo_->currentIndex()); }

void MaskView::clearInferenceContext() {
    haveStep_ = false;
    pieces_.clear();
    if (mode() == Mode::Inference) rebuild();
}

void MaskView::setTrainingExample(std::int64_t contextLength, std::int64_t blockSize,
                                  const std::vector<std::int64_t>& anchors, std::int64_t slidingWindow) {
    updating_ = true;
    sSpin_->setValue(static_cast<int>(std::clamp<std::int64_t>(contextLength, sSpin_->minimum(), sSpin_->maximum())));
    bSpin_->setValue(static_cast<int>(std::clamp<std::int64_t>(blockSize, bSpin_->minimum(), bSpin_->maximum())));
    windowSpin_->setValue(static_cast<int>(std::clamp<std::int64_t>(slidingWindow, 0, windowSpin_->maximum())));
    QStringList parts;
    for (auto a : anchors) parts << QString::number(a);
    anchorsEdit_->setText(parts.join(", "));
    updating_ = false;
    rebuild();
}

void MaskView::setTreeStep(const TreeStep& step, int budget, int stepIndex, const std::vector<QString>& nodePieces) {
    haveTree_ = true;
    tree_ = step;
    treeBudget_ = budget;
    treeStepIndex_ = stepIndex;
    treePieces_ = nodePieces;
    if (mode() == Mode::TreeVerify) rebuild();
}

void MaskView::clearTreeStep() {
    haveTree_ = false;
    tree_ = {};
    treePieces_.clear();
    if (mode() == Mode::TreeVerify) rebuild();
}

void MaskView::setPastColumnShown(bool shown) { pastCheck_->setChecked(shown); }

void MaskView::setMode(Mode m) {
    modeCombo_->setCurrentIndex(m == Mode::Training ? 1 : m == Mode::TreeVerify ? 2 : 0);
}
MaskView::Mode MaskView::mode() const {
    const int i = modeCombo_->currentIndex();
    return i == 1 ? Mode::Training : i == 2 ? Mode::TreeVerify : Mode::Inference;
}

void MaskView::setConventions(const MaskConventions& c) {
    updating_ = true;
    convA_->set(c);
    updating_ = false;
    rebuild();
}
MaskConventions MaskView::conventions() const { return convA_->get(); }

void MaskView::setDiffConventions(const MaskConventions& c) {
    updating_ = true;
    convB_->set(c);
    updating_ = false;
    rebuild();
}
MaskConventions MaskView::diffConventions() const { return convB_->get(); }

void MaskView::setDiffEnabled(bool on) { diffCheck_->setChecked(on); }
bool MaskView::diffEnabled() const { return diffCheck_->isChecked(); }

const QAbstractItemModel* MaskView::tableModel() const { return table_; }

// ---- building ------------------------------------------------------------------------

void MaskView::showError(const QString& message) {
    error_ = message;
    errorLabel_->setText(message);
    errorLabel_->setVisible(!message.isEmpty());
}

void MaskView::rebuild() {
    if (updating_) return;
    maskA_ = {};
    maskB_ = {};
    counts_ = {};
    shown_.clear();
    showError({});
    summary_.clear();

    const bool tree = mode() == Mode::TreeVerify;
    const bool diff = diffEnabled() && !tree;  // conventions and diff describe the drafter's masks only
    boxA_->setEnabled(!tree);
    boxB_->setEnabled(!tree);
    const bool layered = mode() == Mode::Inference || (mode() == Mode::Training && trainsPerLayer());
    layerBox_->setVisible(layered);
    windowSpin_->setEnabled(!trainsPerLayer());
    const auto layer = static_cast<std::size_t>(selectedLayer()) < layout_.size()
                           ? layout_[static_cast<std::size_t>(selectedLayer())]
                           : LayerAttention{};
    plot_->xAxis->setLabel(tree ? tr("key (tree node @ position, or the past)") : tr("key (block row @ position, or context position)"));
    plot_->yAxis->setLabel(tree ? tr("query (tree node @ position)") : tr("query (block row @ position)"));
    const MaskConventions a = conventions(), b = diffConventions();
    treeLabel_->setText(haveTree_ ? tr("budget %1, step %2: %3 nodes, root at position %4")
                                        .arg(treeBudget_).arg(treeStepIndex_ + 1)
                                        .arg(static_cast<int>(tree_.tokens.size()) - 1).arg(tree_.start)
                                  : tr("no DDTree step selected"));
    stepLabel_->setText(haveStep_ ? tr("selected step: anchor at position %1, context %1 positions, block %2")
                                        .arg(infContext_)
                                        .arg(infBlock_)
                                  : tr("no verify step selected"));
    try {
        if (tree) {
            if (haveTree_) maskA_ = treeVerifyMask(tree_, pastCheck_->isChecked());
            else summary_ = tr("No DDTree step selected: run with DDTree budgets (Prompt panel) and pick a step in the DDTree view.");
        } else if (mode() == Mode::Inference) {
            if (haveStep_) {
                const bool both = diff && (a.context == MaskConventions::Context::Inclusive ||
                                           b.context == MaskConventions::Context::Inclusive);
                maskA_ = draftscope::inferenceMask(infContext_, infBlock_, a, both, layer);
                if (diff) maskB_ = draftscope::inferenceMask(infContext_, infBlock_, b, both, layer);
            } else {
                summary_ = tr("No verify step selected: select a step, or switch to Training mode.");
            }
        } else {
            const auto anchors = draftscope::parseIndexList(anchorsEdit_->text().toStdString());
            const auto build = [&](const MaskConventions& c) {
                return !trainsPerLayer()
                           ? draftscope::trainingMask(sSpin_->value(), bSpin_->value(), anchors, c, windowSpin_->value())
                           : draftscope::trainingMask(sSpin_->value(), bSpin_->value(), anchors, c, layer);
            };
            maskA_ = build(a);
            if (diff) maskB_ = build(b);
        }
        if (maskA_.rows * maskA_.cols > kMaxDrawnCells)
            throw draftscope::Error("the mask has " + std::to_string(maskA_.rows) + " x " + std::to_string(maskA_.cols) +
                                    " cells, more than this view draws (" + std::to_string(kMaxDrawnCells) + ")");
        if (diff && maskA_.rows > 0) draftscope::maskDifference(maskA_, maskB_, &counts_);
    } catch (const std::exception& e) {
        maskA_ = {};
        maskB_ = {};
        counts_ = {};
        showError(QString::fromStdString(e.what()));
    }

    shownIsDiff_ = diff && maskB_.rows == maskA_.rows && maskB_.cols == maskA_.cols;
    shown_.resize(maskA_.visible.size());
    for (std::size_t i = 0; i < shown_.size(); ++i) {
        const bool va = maskA_.visible[i] != 0;
        if (!shownIsDiff_) {
            shown_[i] = va ? 1 : 0;
        } else {
            const bool vb = maskB_.visible[i] != 0;
            shown_[i] = va && vb ? 1 : va ? 2 : vb ? 3 : 0;
        }
    }

    if (shownIsDiff_) {
        legendLabel_->setText(legendLine({legendSwatch(kOnlyA, tr("only A sees")), legendSwatch(kOnlyB, tr("only B sees")),
                                          legendSwatch(kBothVisible, tr("both see")), legendHollow(tr("neither")),
                                          whitespaceLegendLine()}));
    } else {
        legendLabel_->setText(
            legendLine({legendSwatch(kVisible, tr("may attend")), legendHollow(tr("masked")), whitespaceLegendLine()}));
    }
    if (error_.isEmpty() && maskA_.rows > 0) {
        if (shownIsDiff_) {
            summary_ = tr("%1 cells differ: %2 visible only in A (red), %3 visible only in B (blue)")
                           .arg(counts_.total())
                           .arg(counts_.onlyA)
                           .arg(counts_.onlyB);
            if (counts_.positionMismatches > 0)
                summary_ += tr("; position ids differ in %1 rows/columns").arg(counts_.positionMismatches);
        } else {
            summary_ = tr("%1 queries x %2 keys, %3 visible cells")
                           .arg(maskA_.rows)
                           .arg(maskA_.cols)
                           .arg(maskA_.visibleCount());
        }
        if (mode() == Mode::Training && !trainsPerLayer() && windowSpin_->value() > 0)
            summary_ += tr(" (sliding window %1: block causal whatever the Block setting)").arg(windowSpin_->value());
    } else if (error_.isEmpty() && summary_.isEmpty()) {
        summary_ = tr("Empty mask (no blocks).");
    }
    summaryLabel_->setText(summary_);
    title_->setText(titleText());
    hoverLabel_->setText(tr("Hover a cell for its query, key and visibility; wheel zooms, drag pans, double-click resets."));

    xLabels_.clear();
    yLabels_.clear();
    for (std::int64_t c = 0; c < maskA_.cols; ++c) xLabels_ << tickLabel(false, c);
    for (std::int64_t r = 0; r < maskA_.rows; ++r) yLabels_ << tickLabel(true, r);

    table_->reset();
    draw();
    emit maskChanged();
}

namespace {
QString describe(const MaskConventions& c) {
    return QStringLiteral("%1, %2, block at anchor+%3")
        .arg(c.context == MaskConventions::Context::Inclusive ? "kv <= anchor" : "kv < anchor",
             c.block == MaskConventions::Block::Causal ? "causal block" : "bidirectional block")
        .arg(c.positionOffset);
}
}  // namespace

QString MaskView::titleText() const {
    QString what;
    if (mode() == Mode::TreeVerify)
        return haveTree_ ? tr("Target's tree-verify mask, DDTree budget %1, step %2 (root at position %3)\n"
                              "each node sees its ancestors and itself%4")
                               .arg(treeBudget_).arg(treeStepIndex_ + 1).arg(tree_.start)
                               .arg(pastCheck_->isChecked() ? tr(", plus all past positions") : QString()) +
                               (error_.isEmpty() ? QString() : QStringLiteral("\n") + error_)
                         : tr("Target's tree-verify mask (no DDTree step selected)");
    if (mode() == Mode::Inference)
        what = (haveStep_ ? tr("Drafter mask at inference (anchor at %1, block %2)").arg(infContext_).arg(infBlock_)
                          : tr("Drafter mask at inference (no step selected)")) +
               QStringLiteral(", ") + tr("layer %1").arg(layerCombo_->currentText());
    else
        what = tr("Training mask (S %1, B %2, anchors %3%4)")
                   .arg(sSpin_->value())
                   .arg(bSpin_->value())
                   .arg(anchorsEdit_->text().simplified())
                   .arg(trainsPerLayer()              ? tr(", layer %1").arg(layerCombo_->currentText())
                        : windowSpin_->value() > 0 ? tr(", window %1").arg(windowSpin_->value())
                                                   : QString());
    QString text = what + QStringLiteral("\nA: ") + describe(conventions());
    if (shownIsDiff_)
        text += QStringLiteral("\nB: ") + describe(diffConventions()) +
                tr("\n%1 cells differ: red = only A sees (%2), blue = only B sees (%3), grey = both")
                    .arg(counts_.total())
                    .arg(counts_.onlyA)
                    .arg(counts_.onlyB);
    if (!error_.isEmpty()) text += QStringLiteral("\n") + error_;
    return text;
}

QString MaskView::tickLabel(bool isRow, std::int64_t index) const {
    const auto& m = maskA_;
    const auto i = static_cast<std::size_t>(index);
    const std::int64_t pos = isRow ? m.rowPositions[i] : m.colPositions[i];
    const QString label = QString::fromStdString(isRow ? m.rowLabels[i] : m.colLabels[i]);
    const bool inference = mode() == Mode::Inference;
    const bool context = !isRow && index < m.contextCols;

    QString piece;
    if (mode() == Mode::TreeVerify) {
        if (context) return label;
        const std::int64_t node = isRow ? index : index - m.contextCols;
        QString text = label + QStringLiteral(" @") + QString::number(pos);
        if (node >= 0 && node < static_cast<std::int64_t>(treePieces_.size()))
            text += QLatin1Char(' ') + quotedPiece(treePieces_[static_cast<std::size_t>(node)], 12);
        return text;
    }
    if (inference) {
        // The token at a row/column: context j -> piece j; anchor feature -> the anchor's piece;
        // block row 0 -> the anchor's piece (at true position infContext_), rows > 0 -> MASK.
        std::int64_t tokenPos = -1;
        if (context) tokenPos = index < infContext_ ? index : infContext_;
        else {
            const std::int64_t k = isRow ? index : index - m.contextCols;
            tokenPos = k == 0 ? infContext_ : -2;
        }
        if (tokenPos == -2) piece = QStringLiteral("[M]");
        else if (tokenPos >= 0 && tokenPos < static_cast<std::int64_t>(pieces_.size()))
            piece = quotedPiece(pieces_[static_cast<std::size_t>(tokenPos)], 12);
    }

    QString text;
    if (context) {
        text = QString::number(pos);
        if (label.endsWith(QStringLiteral("(anchor feat)"))) text += tr(" anchor feat");
    } else {
        text = label + QStringLiteral(" @") + QString::number(pos);
        // Diff mode: show B's position id too where the conventions place the row elsewhere.
        if (shownIsDiff_) {
            const std::int64_t posB = isRow ? maskB_.rowPositions[i] : maskB_.colPositions[i];
            if (posB != pos) text += QStringLiteral(" (B @%1)").arg(posB);
        }
    }
    if (!piece.isEmpty()) text += QLatin1Char(' ') + piece;
    return text;
}

void MaskView::updateTicks(QCPAxis* axis, const QStringList& labels) {
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(axis->ticker());
    if (!ticker) return;
    const int n = static_cast<int>(labels.size());
    QMap<double, QString> ticks;
    if (n > 0) {
        const QCPRange r = axis->range();
        const int first = std::clamp(static_cast<int>(std::ceil(r.lower)), 0, n - 1);
        const int last = std::clamp(static_cast<int>(std::floor(r.upper)), 0, n - 1);
        const int visible = std::max(1, last - first + 1);
        const bool horizontal = axis->orientation() == Qt::Horizontal;
        const int pixels = horizontal ? axis->axisRect()->width() : axis->axisRect()->height();
        // One label per ~13 px (7 pt font); before the first layout assume room for 48.
        const int room = pixels > 60 ? std::max(4, pixels / 13) : 48;
        const int step = std::max(1, (visible + room - 1) / room);
        for (int i = 0; i < n; ++i)
            if (i % step == 0) ticks.insert(i, labels[i]);
    }
    ticker->setTicks(ticks);
}

void MaskView::draw() {
    for (QCPAbstractItem* item : separators_) plot_->removeItem(item);
    separators_.clear();
    const auto& m = maskA_;
    auto* data = map_->data();
    if (m.rows == 0 || m.cols == 0) {
        data->setSize(0, 0);
        map_->setVisible(false);
        plot_->xAxis->setRange(-0.5, 0.5);
        plot_->yAxis->setRange(-0.5, 0.5);
        updateTicks(plot_->xAxis, xLabels_);
        updateTicks(plot_->yAxis, yLabels_);
        plot_->replot();
        return;
    }
    map_->setVisible(true);
    data->setSize(static_cast<int>(m.cols), static_cast<int>(m.rows));
    // Cell centres at 0..n-1. QCPColorMap pads by half a cell only when n > 1, so a single
    // cell gets the range [-0.5, 0.5] to keep its width.
    auto cellRange = [](std::int64_t n) { return n == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, double(n - 1)); };
    data->setRange(cellRange(m.cols), cellRange(m.rows));
    for (std::int64_t r = 0; r < m.rows; ++r)
        for (std::int64_t c = 0; c < m.cols; ++c)
            data->setCell(static_cast<int>(c), static_cast<int>(r), shown_[static_cast<std::size_t>(r * m.cols + c)]);

    QCPColorGradient g;
    g.clearColorStops();
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    if (shownIsDiff_) {
        g.setLevelCount(4);
        g.setColorStopAt(0.0, kMasked);
        g.setColorStopAt(1.0 / 3.0, kBothVisible);
        g.setColorStopAt(2.0 / 3.0, kOnlyA);
        g.setColorStopAt(1.0, kOnlyB);
        map_->setDataRange(QCPRange(0, 3));
    } else {
        g.setLevelCount(2);
        g.setColorStopAt(0.0, kMasked);
        g.setColorStopAt(1.0, kVisible);
        map_->setDataRange(QCPRange(0, 1));
    }
    map_->setGradient(g);

    // Separators: context | blocks (vertical), and between training blocks.
    QPen pen(kSeparator, 1, Qt::DashLine);
    pen.setCosmetic(true);
    auto vline = [&](double x) {
        auto* l = new QCPItemStraightLine(plot_);
        l->point1->setCoords(x, 0);
        l->point2->setCoords(x, 1);
        l->setPen(pen);
        separators_.push_back(l);
    };
    auto hline = [&](double y) {
        auto* l = new QCPItemStraightLine(plot_);
        l->point1->setCoords(0, y);
        l->point2->setCoords(1, y);
        l->setPen(pen);
        separators_.push_back(l);
    };
    if (m.contextCols > 0 && m.contextCols < m.cols) vline(m.contextCols - 0.5);
    if (mode() == Mode::Training) {
        const std::int64_t B = bSpin_->value();
        for (std::int64_t c = m.contextCols + B; c < m.cols; c += B) vline(c - 0.5);
        for (std::int64_t r = B; r < m.rows; r += B) hline(r - 0.5);
    }

    plot_->xAxis->setRange(-0.5, m.cols - 0.5);
    plot_->yAxis->setRange(-0.5, m.rows - 0.5);
    updateTicks(plot_->xAxis, xLabels_);
    updateTicks(plot_->yAxis, yLabels_);
    plot_->replot();
}

void MaskView::updateHover(double x, double y) {
    const auto c = static_cast<std::int64_t>(std::llround(x));
    const auto r = static_cast<std::int64_t>(std::llround(y));
    if (maskA_.rows == 0 || c < 0 || r < 0 || c >= maskA_.cols || r >= maskA_.rows) return;
    static const char* const kWords[] = {"masked", "visible", "visible only in A", "visible only in B"};
    const int v = shown_[static_cast<std::size_t>(r * maskA_.cols + c)];
    QString word = QString::fromLatin1(kWords[v]);
    if (shownIsDiff_ && v == 0) word = QStringLiteral("masked in both");
    if (shownIsDiff_ && v == 1) word = QStringLiteral("visible in both");
    hoverLabel_->setText(tr("query %1  \u2192  key %2:  %3").arg(yLabels_[r], xLabels_[c], word));
}

QSize MaskView::exportSize() const {
    // On-screen size when the plot has been laid out, else a size that fits the matrix.
    if (plot_->isVisible() && plot_->width() >= 320 && plot_->height() >= 240) return {0, 0};
    const auto cols = static_cast<int>(std::max<std::int64_t>(1, maskA_.cols));
    const auto rows = static_cast<int>(std::max<std::int64_t>(1, maskA_.rows));
    const int cell = std::clamp(900 / std::max(cols, rows), 6, 28);
    return {std::clamp(cols * cell + 220, 480, 1800), std::clamp(rows * cell + 220, 360, 1400)};
}

QStringList MaskView::exportAll(const QString& dir, QString* error) {
    QStringList written;
    QDir d(dir);
    if (!d.exists() && !QDir().mkpath(dir)) {
        if (error) *error = tr("cannot create directory '%1'").arg(dir);
        return written;
    }
    const QSize s = exportSize();
    auto writeFiles = [&](const QString& base) {
        for (const QString& fmt : draftscope::figureFormats()) {
            const QString path = d.filePath(base + "." + fmt);
            if (!draftscope::exportPlot(plot_, path, error, s.width(), s.height(), figureTitle())) return false;
            written << path;
        }
        for (const QString& fmt : draftscope::tableFormats()) {
            const QString path = d.filePath(base + "." + fmt);
            if (!draftscope::exportTable(table_, path, error)) return false;
            written << path;
        }
        return true;
    };
    if (!writeFiles(exportName())) return written;
    // The view shows one mask; the packed training mask of DFLASH.md section 6 and the
    // selected DDTree step's tree-verify mask (section 5) are exported beside it.
    const Mode shown = mode();
    if (shown != Mode::Training) {
        setMode(Mode::Training);
        if (errorText().isEmpty() && !writeFiles(exportName() + "_training")) {
            setMode(shown);
            return written;
        }
    }
    if (shown != Mode::TreeVerify && haveTree_) {
        setMode(Mode::TreeVerify);
        if (errorText().isEmpty()) writeFiles(exportName() + "_tree");
    }
    setMode(shown);
    return written;
}

}  // namespace draftscope
