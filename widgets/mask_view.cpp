#include "mask_view.h"

#include "figure_export.h"
#include "heatmap_plot.h"
#include "matrix_table_model.h"
#include "mask_controls.h"
#include "token_display.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
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
                               "layers the band of the last W positions (docs/ENGINE.md, \"Drafter attention layouts\")"));
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
    convA_ = std::make_unique<MaskConventionBox>(boxA, formA, "a");
    convRow->addWidget(boxA);
    auto* boxB = boxB_ = new QGroupBox(tr("Diff against B"), this);
    boxB->setObjectName("diffBox");
    auto* formB = new QFormLayout(boxB);
    diffCheck_ = new QCheckBox(tr("Mark where A and B differ"), boxB);
    diffCheck_->setToolTip(tr("Show the cells where masks A and B disagree"));
    diffCheck_->setObjectName("diffCheck");
    formB->addRow(diffCheck_);
    convB_ = std::make_unique<MaskConventionBox>(boxB, formB, "b");
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
    errorLabel_ = newErrorLabel(this);
    outer->addWidget(errorLabel_);
    hoverLabel_ = new QLabel(this);
    hoverLabel_->setObjectName("hoverLabel");
    hoverLabel_->setWordWrap(true);  // a long cell description wraps instead of widening the dock
    outer->addWidget(hoverLabel_);

    // Plot.
    plot_ = new HeatmapPlot(this);
    plot_->setExportSizing({220, 220}, {480, 360});
    plot_->setObjectName("maskPlot");
    plot_->titleElement()->setObjectName("maskTitle");
    connect(plot_, &HeatmapPlot::cellHovered, this, &MaskView::updateHover);
    outer->addWidget(plot_, 1);

    table_ = new MatrixTableModel(QStringLiteral("query"), this);
    plot_->installExportMenu(exportName(), [this] { return figureTitle(); }, table_);

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
    for (MaskConventionBox* box : {convA_.get(), convB_.get()})
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
    in_.haveStep = true;
    in_.contextLength = contextLength;
    in_.blockSize = blockSize;
    in_.pieces = tokenPieces;
    if (mode() == Mode::Inference) rebuild();
}

void MaskView::setDrafterLayout(const std::vector<LayerAttention>& layers) {
    const int keep = selectedLayer();
    in_.layout = layers;
    updating_ = true;
    layerCombo_->clear();
    if (layers.empty()) layerCombo_->addItem(tr("all: full bidirectional (base layout)"));
    for (std::size_t i = 0; i < layers.size(); ++i)
        layerCombo_->addItem(tr("%1: %2").arg(i).arg(QString::fromStdString(describeLayerAttention(layers[i]))));
    layerCombo_->setCurrentIndex(std::clamp(keep, 0, layerCombo_->count() - 1));
    updating_ = false;
    if (mode() != Mode::TreeVerify) rebuild();
}

void MaskView::setSelectedLayer(int layer) { layerCombo_->setCurrentIndex(std::clamp(layer, 0, layerCombo_->count() - 1)); }

int MaskView::selectedLayer() const { return std::max(0, layerCombo_->currentIndex()); }

void MaskView::clearInferenceContext() {
    in_.haveStep = false;
    in_.pieces.clear();
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
    in_.haveTree = true;
    in_.tree = step;
    in_.treeBudget = budget;
    in_.treeStepIndex = stepIndex;
    in_.treePieces = nodePieces;
    if (mode() == Mode::TreeVerify) rebuild();
}

void MaskView::clearTreeStep() {
    in_.haveTree = false;
    in_.tree = {};
    in_.treePieces.clear();
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
QCPColorMap* MaskView::colorMap() const { return plot_->colorMap(); }

// ---- building ------------------------------------------------------------------------

void MaskView::rebuild() {
    if (updating_) return;
    const bool tree = mode() == Mode::TreeVerify;
    in_.mode = mode();
    in_.layer = selectedLayer();
    in_.layerName = layerCombo_->currentText();
    in_.trainingContext = sSpin_->value();
    in_.trainingBlock = bSpin_->value();
    in_.anchors = anchorsEdit_->text();
    in_.window = windowSpin_->value();
    in_.pastColumn = pastCheck_->isChecked();
    in_.a = conventions();
    in_.b = diffConventions();
    in_.diff = diffEnabled();
    fig_ = buildMaskFigure(in_);

    boxA_->setEnabled(!tree);
    boxB_->setEnabled(!tree);
    layerBox_->setVisible(mode() == Mode::Inference || (mode() == Mode::Training && in_.trainsPerLayer()));
    windowSpin_->setEnabled(!in_.trainsPerLayer());
    plot_->setAxisLabels(tree ? tr("key (tree node @ position, or the past)") : tr("key (block row @ position, or context position)"),
                         tree ? tr("query (tree node @ position)") : tr("query (block row @ position)"));
    treeLabel_->setText(in_.haveTree ? tr("budget %1, step %2: %3 nodes, root at position %4")
                                           .arg(in_.treeBudget).arg(in_.treeStepIndex + 1)
                                           .arg(static_cast<int>(in_.tree.tokens.size()) - 1).arg(in_.tree.start)
                                     : tr("no DDTree step selected"));
    stepLabel_->setText(in_.haveStep ? tr("selected step: anchor at position %1, context %1 positions, block %2")
                                           .arg(in_.contextLength)
                                           .arg(in_.blockSize)
                                     : tr("no verify step selected"));
    showErrorText(errorLabel_, fig_.error);
    legendLabel_->setText(maskLegend(fig_.isDiff));
    summaryLabel_->setText(fig_.summary);
    plot_->setTitle(fig_.title);
    hoverLabel_->setText(tr("Hover a cell for its query, key and visibility; wheel zooms, drag pans, double-click resets."));

    const auto& m = fig_.maskA;
    const std::vector<double> values(fig_.shown.begin(), fig_.shown.end());
    QStringList rowNames, colNames;
    for (const auto& l : m.rowLabels) rowNames << QString::fromStdString(l);
    for (const auto& l : m.colLabels) colNames << QString::fromStdString(l);
    if (fig_.shown.empty()) table_->clear();
    else table_->setMatrix(rowNames, {}, colNames, values, true);
    draw();
    emit maskChanged();
}

void MaskView::draw() {
    const auto& m = fig_.maskA;
    HeatmapCells cells;
    cells.columnLabels = fig_.columnLabels;
    cells.rowLabels = fig_.rowLabels;
    if (m.rows > 0 && m.cols > 0) {
        cells.rows = static_cast<int>(m.rows);
        cells.cols = static_cast<int>(m.cols);
        cells.values.assign(fig_.shown.begin(), fig_.shown.end());
        // Separators: context | blocks (vertical), and between training blocks.
        if (m.contextCols > 0 && m.contextCols < m.cols) cells.columnSeparators.push_back(m.contextCols - 0.5);
        if (mode() == Mode::Training) {
            const std::int64_t B = bSpin_->value();
            for (std::int64_t c = m.contextCols + B; c < m.cols; c += B) cells.columnSeparators.push_back(c - 0.5);
            for (std::int64_t r = B; r < m.rows; r += B) cells.rowSeparators.push_back(r - 0.5);
        }
        plot_->colorMap()->setGradient(maskGradient(fig_.isDiff));
        plot_->colorMap()->setDataRange(QCPRange(0, fig_.isDiff ? 3 : 1));
    }
    plot_->setCells(cells);
}

void MaskView::updateHover(int r, int c) {
    static const char* const kWords[] = {"masked", "visible", "visible only in A", "visible only in B"};
    const int v = fig_.shown[static_cast<std::size_t>(r * fig_.maskA.cols + c)];
    QString word = QString::fromLatin1(kWords[v]);
    if (fig_.isDiff && v == 0) word = QStringLiteral("masked in both");
    if (fig_.isDiff && v == 1) word = QStringLiteral("visible in both");
    hoverLabel_->setText(tr("query %1  \u2192  key %2:  %3").arg(fig_.rowLabels[r], fig_.columnLabels[c], word));
}

QStringList MaskView::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    // Each mask sized to its own matrix and labels (HeatmapPlot::exportFigure).
    auto writeFiles = [&](const QString& base) {
        return set.figure(base, [this](const QString& path, QString* e) { return plot_->exportFigure(path, e, figureTitle()); }) &&
               set.table(base, table_);
    };
    if (!writeFiles(exportName())) return set.written();
    // The view shows one mask; the packed training mask (docs/ENGINE.md, "Training-time mask") and the
    // selected DDTree step's tree-verify mask (section 5) are exported beside it.
    const Mode shown = mode();
    if (shown != Mode::Training) {
        setMode(Mode::Training);
        if (errorText().isEmpty() && !writeFiles(exportName() + "_training")) {
            setMode(shown);
            return set.written();
        }
    }
    if (shown != Mode::TreeVerify && in_.haveTree) {
        setMode(Mode::TreeVerify);
        if (errorText().isEmpty()) writeFiles(exportName() + "_tree");
    }
    setMode(shown);
    return set.written();
}

}  // namespace draftscope
