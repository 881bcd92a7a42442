#include "attention_view.h"

#include "attention_heads_overview.h"
#include "figure_export.h"
#include "heatmap_plot.h"
#include "matrix_table_model.h"
#include "token_display.h"

#include "draftscope/errors.h"
#include "draftscope/masks.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace draftscope {

AttentionView::AttentionView(QWidget* parent) : QWidget(parent) {
    buildUi();
    recompute();
}

AttentionView::~AttentionView() = default;

void AttentionView::buildUi() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);
    auto* row = new QHBoxLayout;
    layerSpin_ = new QSpinBox(this);
    layerSpin_->setObjectName("layerSpin");
    layerSpin_->setRange(0, 0);
    headSpin_ = new QSpinBox(this);
    headSpin_->setObjectName("headSpin");
    headSpin_->setRange(0, 0);
    averageCheck_ = new QCheckBox(tr("Average over heads"), this);
    averageCheck_->setObjectName("averageCheck");
    fixedCheck_ = new QCheckBox(tr("Colour range 0\u20131"), this);
    fixedCheck_->setObjectName("fixedRangeCheck");
    fixedCheck_->setToolTip(tr("Off: the colour range is 0 to the largest shown weight"));
    row->addWidget(new QLabel(tr("Drafter layer"), this));
    row->addWidget(layerSpin_);
    row->addWidget(new QLabel(tr("Head"), this));
    row->addWidget(headSpin_);
    row->addWidget(averageCheck_);
    row->addWidget(fixedCheck_);
    allHeadsCheck_ = new QCheckBox(tr("All heads"), this);
    allHeadsCheck_->setObjectName("allHeadsCheck");
    allHeadsCheck_->setToolTip(tr("Show a thumbnail of every layer and head of this step; click one to show it"));
    row->addStretch(1);
    outer->addLayout(row);
    infoLabel_ = new QLabel(this);
    infoLabel_->setObjectName("infoLabel");
    infoLabel_->setWordWrap(true);
    outer->addWidget(infoLabel_);
    errorLabel_ = newErrorLabel(this);
    outer->addWidget(errorLabel_);
    hoverLabel_ = new QLabel(this);
    hoverLabel_->setObjectName("hoverLabel");
    auto* row2 = new QHBoxLayout;  // a row of its own: the first row's width decides the dock's
    row2->addWidget(allHeadsCheck_);
    row2->addWidget(hoverLabel_, 1);
    outer->addLayout(row2);

    plot_ = new HeatmapPlot(this);
    plot_->setExportSizing({300, 220}, {520, 360});
    plot_->setObjectName("attentionPlot");
    plot_->titleElement()->setObjectName("attentionTitle");
    plot_->setAxisLabels(tr("key (position, token)"), tr("query (block row @ position)"));
    scale_ = new QCPColorScale(plot_);
    plot_->plotLayout()->addElement(1, 1, scale_);
    scale_->setType(QCPAxis::atRight);
    scale_->axis()->setLabel(tr("attention weight"));
    scale_->axis()->setLabelFont(QFont("DejaVu Sans", 9));
    scale_->axis()->setTickLabelFont(QFont("DejaVu Sans", 8));
    plot_->colorMap()->setColorScale(scale_);  // the map takes the scale's gradient from here on
    scale_->setGradient(attentionWeightGradient());
    auto* group = new QCPMarginGroup(plot_);
    plot_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    connect(plot_, &HeatmapPlot::cellHovered, this, &AttentionView::updateHover);
    outer->addWidget(plot_, 1);
    overview_ = new AttentionHeadsOverview(this);
    overview_->setMinimumHeight(140);
    overview_->hide();
    outer->addWidget(overview_);
    connect(allHeadsCheck_, &QCheckBox::toggled, overview_, &QWidget::setVisible);
    connect(overview_, &AttentionHeadsOverview::cellClicked, this, [this](int layer, int head) {
        updating_ = true;
        averageCheck_->setChecked(false);
        layerSpin_->setValue(layer);
        headSpin_->setValue(head);
        updating_ = false;
        recompute();
    });

    table_ = new MatrixTableModel(QStringLiteral("query"), this);
    plot_->installExportMenu(exportName(), [this] { return figureTitle(); }, table_);

    auto changed = [this] {
        if (!updating_) recompute();
    };
    connect(layerSpin_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(headSpin_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(averageCheck_, &QCheckBox::toggled, this, [this, changed](bool on) {
        headSpin_->setEnabled(!on);
        changed();
    });
    connect(fixedCheck_, &QCheckBox::toggled, this, changed);
}

void AttentionView::setAttention(const draftscope::DrafterAttention& attention, const std::vector<QString>& tokenPieces,
                                 const std::vector<LayerAttention>& layout) {
    attn_ = attention;
    pieces_ = tokenPieces;
    layout_ = layout;
    validate();
    updating_ = true;
    const bool ok = error_.isEmpty() && attn_.numLayers > 0;
    layerSpin_->setRange(0, ok ? static_cast<int>(std::max<std::int64_t>(0, attn_.numLayers - 1)) : 0);
    headSpin_->setRange(0, ok ? static_cast<int>(std::max<std::int64_t>(0, attn_.numHeads - 1)) : 0);
    updating_ = false;
    overview_->setAttention(ok ? attn_ : DrafterAttention{});
    recompute();
}

void AttentionView::setShowAllHeads(bool on) { allHeadsCheck_->setChecked(on); }

void AttentionView::clear() { setAttention({}, {}); }

void AttentionView::setPlaceholder(const QString& reason) {
    setAttention({}, {});
    infoLabel_->setText(reason);
    // Wrapped so that exported figures show the whole reason.
    QStringList lines{tr("Drafter attention unavailable:")};
    QString line;
    for (const QString& word : reason.split(' ', Qt::SkipEmptyParts)) {
        if (!line.isEmpty() && line.size() + word.size() > 70) {
            lines << line;
            line.clear();
        }
        line += (line.isEmpty() ? QString() : QStringLiteral(" ")) + word;
    }
    if (!line.isEmpty()) lines << line;
    plot_->setTitle(lines.join('\n'));
    plot_->replot();
}

QString AttentionView::infoText() const { return infoLabel_->text(); }

void AttentionView::setLayer(int l) { layerSpin_->setValue(l); }
int AttentionView::layer() const { return layerSpin_->value(); }
void AttentionView::setHead(int h) { headSpin_->setValue(h); }
int AttentionView::head() const { return headSpin_->value(); }
void AttentionView::setAverageHeads(bool on) { averageCheck_->setChecked(on); }
bool AttentionView::averageHeads() const { return averageCheck_->isChecked(); }
void AttentionView::setFixedRange(bool on) { fixedCheck_->setChecked(on); }
const QAbstractItemModel* AttentionView::tableModel() const { return table_; }
QCPColorMap* AttentionView::colorMap() const { return plot_->colorMap(); }

LayerAttention AttentionView::shownLayerAttention() const {
    const auto l = static_cast<std::size_t>(std::max(0, layer()));
    return l < layout_.size() ? layout_[l] : LayerAttention{};
}

void AttentionView::validate() {
    error_.clear();
    const auto& a = attn_;
    if (a.numLayers == 0) return;
    const auto n = [](std::int64_t v) { return QString::number(v); };
    if (a.numLayers < 0 || a.numHeads < 1 || a.numQueries < 1 || a.numKeys < 1) {
        error_ = tr("drafter attention: bad shape layers=%1 heads=%2 queries=%3 keys=%4")
                     .arg(n(a.numLayers), n(a.numHeads), n(a.numQueries), n(a.numKeys));
    } else if (static_cast<std::int64_t>(a.weights.size()) != a.numLayers * a.numHeads * a.numQueries * a.numKeys) {
        error_ = tr("drafter attention: expected %1 weights (layers %2 x heads %3 x queries %4 x keys %5), got %6")
                     .arg(n(a.numLayers * a.numHeads * a.numQueries * a.numKeys), n(a.numLayers), n(a.numHeads),
                          n(a.numQueries), n(a.numKeys), n(static_cast<std::int64_t>(a.weights.size())));
    } else if (static_cast<std::int64_t>(a.queryPositions.size()) != a.numQueries) {
        error_ = tr("drafter attention: expected %1 query positions, got %2")
                     .arg(n(a.numQueries), n(static_cast<std::int64_t>(a.queryPositions.size())));
    } else if (static_cast<std::int64_t>(a.keyPositions.size()) != a.numKeys) {
        error_ = tr("drafter attention: expected %1 key positions, got %2")
                     .arg(n(a.numKeys), n(static_cast<std::int64_t>(a.keyPositions.size())));
    } else if (a.numKeys < a.numQueries) {
        error_ = tr("drafter attention: %1 keys cannot hold the %2 block rows").arg(n(a.numKeys), n(a.numQueries));
    }
}

void AttentionView::recompute() {
    overview_->setSelected(averageHeads() ? -1 : layer(), head());
    shown_.clear();
    masked_.clear();
    xLabels_.clear();
    yLabels_.clear();
    yExportLabels_.clear();
    showErrorText(errorLabel_, error_);
    const auto& a = attn_;
    if (!error_.isEmpty() || a.numLayers == 0) {
        infoLabel_->setText(error_.isEmpty() ? tr("No drafter attention recorded for the selected step.") : QString());
        plot_->setTitle(tr("Drafter attention (none)"));
        hoverLabel_->clear();
        table_->clear();
        draw();
        return;
    }
    const int l = std::clamp(layer(), 0, static_cast<int>(a.numLayers - 1));
    const int h = std::clamp(head(), 0, static_cast<int>(a.numHeads - 1));
    const bool avg = averageHeads();
    const std::int64_t Q = a.numQueries, K = a.numKeys;
    shown_.assign(static_cast<std::size_t>(Q * K), 0.0f);
    for (std::int64_t q = 0; q < Q; ++q)
        for (std::int64_t k = 0; k < K; ++k) {
            double v = 0;
            if (avg) {
                for (std::int64_t hh = 0; hh < a.numHeads; ++hh) v += a.at(l, hh, q, k);
                v /= static_cast<double>(a.numHeads);
            } else {
                v = a.at(l, h, q, k);
            }
            shown_[static_cast<std::size_t>(q * K + k)] = static_cast<float>(v);
        }
    // The cells this layer cannot see: the drafter forward's own mask (layerVisibility).
    const LayerAttention layerLayout = shownLayerAttention();
    masked_.assign(static_cast<std::size_t>(Q * K), 0);
    QString maskNote;
    if (layerLayout.needsMask()) {
        try {
            const auto visible = layerVisibility(layerLayout, a.queryPositions, a.keyPositions);
            std::int64_t hidden = 0;
            for (std::size_t i = 0; i < visible.size(); ++i) {
                masked_[i] = visible[i] ? 0 : 1;
                hidden += masked_[i];
            }
            maskNote = tr("; hatched: the %1 cells this layer's layout masks").arg(hidden);
        } catch (const Error& e) {
            maskNote = tr("; masked cells not shaded: %1").arg(QString::fromUtf8(e.what()));
        }
    }
    const QString layerName = layout_.empty()
                                  ? QString::number(l)
                                  : QStringLiteral("%1 (%2)").arg(l).arg(
                                        QString::fromStdString(describeLayerAttention(layerLayout)));

    const bool havePieces = static_cast<std::int64_t>(pieces_.size()) == K;
    const std::int64_t ctx = K - Q;
    for (std::int64_t k = 0; k < K; ++k) {
        QString t = k < ctx ? QString::number(a.keyPositions[static_cast<std::size_t>(k)])
                            : QStringLiteral("b+%1 @%2").arg(k - ctx).arg(a.keyPositions[static_cast<std::size_t>(k)]);
        if (havePieces) t += QLatin1Char(' ') + quotedPiece(pieces_[static_cast<std::size_t>(k)], 12);
        xLabels_ << t;
    }
    for (std::int64_t q = 0; q < Q; ++q) {
        const QString t = QStringLiteral("b+%1 @%2").arg(q).arg(a.queryPositions[static_cast<std::size_t>(q)]);
        const QString piece = havePieces ? pieces_[static_cast<std::size_t>(ctx + q)] : QString();
        yLabels_ << (havePieces ? t + QLatin1Char(' ') + quotedPiece(piece, 12) : t);
        yExportLabels_ << (havePieces ? t + QLatin1Char(' ') + piece : t);
    }
    const float maxW = *std::max_element(shown_.begin(), shown_.end());
    // Steps are numbered from 1 in every view, as in the grid and the CLI.
    QString info = tr("verify step %1, layer %2, %3: %4 queries x %5 keys (%6 context + block); max weight %7")
                       .arg(a.step + 1)
                       .arg(layerName)
                       .arg(avg ? tr("mean of %1 heads").arg(a.numHeads) : tr("head %1").arg(h))
                       .arg(Q)
                       .arg(K)
                       .arg(ctx)
                       .arg(static_cast<double>(maxW), 0, 'g', 4) +
                   maskNote;
    if (!pieces_.empty() && !havePieces)
        info += tr("; token pieces ignored (%1 given for %2 keys)").arg(pieces_.size()).arg(K);
    if (havePieces) info += QStringLiteral(". ") + whitespaceLegend();
    infoLabel_->setText(info);
    plot_->setTitle(tr("Drafter attention, verify step %1, layer %2, %3")
                        .arg(a.step + 1)
                        .arg(layerName)
                        .arg(avg ? tr("mean over %1 heads").arg(a.numHeads) : tr("head %1").arg(h)));
    hoverLabel_->setText(tr("Hover a cell for its weight; wheel zooms, drag pans, double-click resets."));
    QStringList keyHeaders;
    for (const std::int64_t pos : a.keyPositions) keyHeaders << QStringLiteral("key %1").arg(pos);
    table_->setMatrix(yLabels_, yExportLabels_, keyHeaders, {shown_.begin(), shown_.end()}, false);
    draw();
}

void AttentionView::draw() {
    HeatmapCells cells;
    cells.columnLabels = xLabels_;
    cells.rowLabels = yLabels_;
    if (!shown_.empty()) {
        cells.rows = static_cast<int>(attn_.numQueries);
        cells.cols = static_cast<int>(attn_.numKeys);
        cells.values.assign(shown_.begin(), shown_.end());
        cells.hatched = masked_;
        if (const std::int64_t ctx = attn_.numKeys - attn_.numQueries; ctx > 0) cells.columnSeparators = {ctx - 0.5};
        const float maxW = *std::max_element(shown_.begin(), shown_.end());
        plot_->colorMap()->setDataRange(fixedCheck_->isChecked() ? QCPRange(0, 1)
                                                                 : QCPRange(0, std::max(1e-6, double(maxW))));
    }
    plot_->setCells(cells);
}

void AttentionView::updateHover(int q, int k) {
    if (shown_.empty()) return;
    const auto i = static_cast<std::size_t>(q * attn_.numKeys + k);
    QString text = tr("query %1  \u2192  key %2:  weight %3")
                       .arg(yLabels_[q], xLabels_[k])
                       .arg(static_cast<double>(shown_[i]), 0, 'g', 5);
    if (masked_[i])
        text += tr("  (masked: this layer is %1)").arg(QString::fromStdString(describeLayerAttention(shownLayerAttention())));
    hoverLabel_->setText(text);
}

QStringList AttentionView::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.figure(exportName(), [this](const QString& path, QString* e) { return plot_->exportFigure(path, e, figureTitle()); }) &&
        set.table(exportName(), table_);
    return set.written();
}

}  // namespace draftscope
