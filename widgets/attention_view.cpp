#include "attention_view.h"

#include "attention_heads_overview.h"
#include "figure_export.h"
#include "token_display.h"

#include "draftscope/errors.h"
#include "draftscope/masks.h"

#include <qcustomplot.h>

#include <QAbstractTableModel>
#include <QCheckBox>
#include <QDir>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace draftscope {

namespace {

const QColor kSeparator(120, 120, 120);
const QColor kMaskFill(96, 96, 96, 110);   ///< translucent grey over a masked cell
const QColor kMaskHatch(40, 40, 40, 200);  ///< its diagonal hatch lines
constexpr double kHatchSpacing = 6.0;      ///< pixels between hatch lines

}  // namespace

/// Shades and hatches the masked cells over the colour map. QCustomPlot draws it in every
/// replot and in every export (PNG, SVG and PDF all go through draw()). It draws only filled
/// rectangles and line segments computed inside the axis rect, so the figure needs neither
/// a clip path nor a pattern brush (which SVG output does not carry reliably).
class AttentionView::MaskShading : public QCPLayerable {
public:
    /// One row's run of masked keys k0..k1 (inclusive) of query row q.
    struct Run {
        int q, k0, k1;
    };
    explicit MaskShading(QCustomPlot* plot) : QCPLayerable(plot) {}
    /// Runs of consecutive masked cells per row of `masked` [rows * cols].
    void setCells(const std::vector<std::uint8_t>& masked, std::int64_t rows, std::int64_t cols) {
        runs_.clear();
        for (std::int64_t q = 0; q < rows; ++q)
            for (std::int64_t k = 0; k < cols; ++k) {
                if (!masked[static_cast<std::size_t>(q * cols + k)]) continue;
                const auto k0 = k;
                while (k + 1 < cols && masked[static_cast<std::size_t>(q * cols + k + 1)]) ++k;
                runs_.push_back({static_cast<int>(q), static_cast<int>(k0), static_cast<int>(k)});
            }
    }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override {
        applyAntialiasingHint(painter, false, QCP::aeOther);
    }
    QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }
    void draw(QCPPainter* painter) override {
        if (runs_.empty()) return;
        QCPAxis* x = parentPlot()->xAxis;
        QCPAxis* y = parentPlot()->yAxis;
        const QRectF area = parentPlot()->axisRect()->rect();
        QPen hatch(kMaskHatch, 1);
        hatch.setCosmetic(true);
        for (const Run& r : runs_) {
            const QRectF cell = QRectF(QPointF(x->coordToPixel(r.k0 - 0.5), y->coordToPixel(r.q - 0.5)),
                                       QPointF(x->coordToPixel(r.k1 + 0.5), y->coordToPixel(r.q + 0.5)))
                                    .normalized()
                                    .intersected(area);
            if (cell.isEmpty()) continue;
            painter->fillRect(cell, kMaskFill);
            // Lines x + y = c on one lattice of c for every run, so hatches continue across
            // neighbouring cells; each cut to the cell analytically.
            const double L = cell.left(), R = cell.right(), T = cell.top(), B = cell.bottom();
            painter->setPen(hatch);
            for (double c = std::ceil((L + T) / kHatchSpacing) * kHatchSpacing; c <= R + B; c += kHatchSpacing) {
                const double xa = std::max(L, c - B), xb = std::min(R, c - T);
                if (xb > xa) painter->drawLine(QLineF(xa, c - xa, xb, c - xb));
            }
        }
    }

private:
    std::vector<Run> runs_;
};

/// The shown matrix as a table: "query" then one column per key.
class AttentionView::TableModel : public QAbstractTableModel {
public:
    explicit TableModel(AttentionView* view) : QAbstractTableModel(view), view_(view) {}
    void reset() {
        beginResetModel();
        endResetModel();
    }
    int rowCount(const QModelIndex& parent = {}) const override {
        return parent.isValid() || view_->shown_.empty() ? 0 : static_cast<int>(view_->attn_.numQueries);
    }
    int columnCount(const QModelIndex& parent = {}) const override {
        return parent.isValid() || view_->shown_.empty() ? 0 : static_cast<int>(view_->attn_.numKeys + 1);
    }
    QVariant data(const QModelIndex& index, int role) const override {
        if (index.isValid() && index.column() == 0 && role == kExportRole) return view_->yExportLabels_.value(index.row());
        if (!index.isValid() || (role != Qt::DisplayRole && role != Qt::EditRole)) return {};
        if (index.column() == 0) return view_->yLabels_.value(index.row());
        const auto i = static_cast<std::size_t>(index.row() * view_->attn_.numKeys + index.column() - 1);
        return static_cast<double>(view_->shown_[i]);
    }
    QVariant headerData(int section, Qt::Orientation o, int role) const override {
        if (role != Qt::DisplayRole) return {};
        if (o == Qt::Vertical) return section;
        if (section == 0) return QStringLiteral("query");
        return QStringLiteral("key %1").arg(view_->attn_.keyPositions[static_cast<std::size_t>(section - 1)]);
    }

private:
    AttentionView* view_;
};

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
    errorLabel_ = new QLabel(this);
    errorLabel_->setObjectName("errorLabel");
    errorLabel_->setStyleSheet("QLabel { color: #b00020; font-weight: bold; }");
    errorLabel_->setWordWrap(true);
    errorLabel_->hide();
    outer->addWidget(errorLabel_);
    hoverLabel_ = new QLabel(this);
    hoverLabel_->setObjectName("hoverLabel");
    auto* row2 = new QHBoxLayout;  // a row of its own: the first row's width decides the dock's
    row2->addWidget(allHeadsCheck_);
    row2->addWidget(hoverLabel_, 1);
    outer->addLayout(row2);

    plot_ = new QCustomPlot(this);
    plot_->setObjectName("attentionPlot");
    plot_->setMinimumSize(320, 240);
    plot_->setFont(QFont("DejaVu Sans", 9));
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot_->plotLayout()->insertRow(0);
    title_ = new QCPTextElement(plot_, QString(), QFont("DejaVu Sans", 9));
    title_->setObjectName("attentionTitle");
    plot_->plotLayout()->addElement(0, 0, title_);
    map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
    map_->setInterpolate(false);
    map_->setTightBoundary(false);
    scale_ = new QCPColorScale(plot_);
    plot_->plotLayout()->addElement(1, 1, scale_);
    scale_->setType(QCPAxis::atRight);
    scale_->axis()->setLabel(tr("attention weight"));
    scale_->axis()->setLabelFont(QFont("DejaVu Sans", 9));
    scale_->axis()->setTickLabelFont(QFont("DejaVu Sans", 8));
    map_->setColorScale(scale_);  // the map takes the scale's gradient from here on
    shading_ = new MaskShading(plot_);  // created after the map: drawn over it
    scale_->setGradient(attentionWeightGradient());
    auto* group = new QCPMarginGroup(plot_);
    plot_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
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
    plot_->xAxis->setLabel(tr("key (position, token)"));
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

    table_ = new TableModel(this);
    draftscope::installExportMenu(
        plot_, exportName(),
        [this](const QString& path, QString* err) {
            const QSize s = exportSize();
            return draftscope::exportPlot(plot_, path, err, s.width(), s.height(), figureTitle());
        },
        table_);

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
    title_->setText(lines.join('\n'));
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
    errorLabel_->setText(error_);
    errorLabel_->setVisible(!error_.isEmpty());
    const auto& a = attn_;
    if (!error_.isEmpty() || a.numLayers == 0) {
        infoLabel_->setText(error_.isEmpty() ? tr("No drafter attention recorded for the selected step.") : QString());
        title_->setText(tr("Drafter attention (none)"));
        hoverLabel_->clear();
        table_->reset();
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
    title_->setText(tr("Drafter attention, verify step %1, layer %2, %3")
                        .arg(a.step + 1)
                        .arg(layerName)
                        .arg(avg ? tr("mean over %1 heads").arg(a.numHeads) : tr("head %1").arg(h)));
    hoverLabel_->setText(tr("Hover a cell for its weight; wheel zooms, drag pans, double-click resets."));
    table_->reset();
    draw();
}

void AttentionView::updateTicks(QCPAxis* axis, const QStringList& labels) {
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
        const int room = pixels > 60 ? std::max(4, pixels / 13) : 48;
        const int step = std::max(1, (visible + room - 1) / room);
        for (int i = 0; i < n; ++i)
            if (i % step == 0) ticks.insert(i, labels[i]);
    }
    ticker->setTicks(ticks);
}

void AttentionView::draw() {
    for (QCPAbstractItem* item : separators_) plot_->removeItem(item);
    separators_.clear();
    auto* data = map_->data();
    const std::int64_t Q = shown_.empty() ? 0 : attn_.numQueries, K = shown_.empty() ? 0 : attn_.numKeys;
    if (Q == 0 || K == 0) {
        data->setSize(0, 0);
        map_->setVisible(false);
        shading_->setCells({}, 0, 0);
        plot_->xAxis->setRange(-0.5, 0.5);
        plot_->yAxis->setRange(-0.5, 0.5);
    } else {
        map_->setVisible(true);
        data->setSize(static_cast<int>(K), static_cast<int>(Q));
        auto cellRange = [](std::int64_t n) { return n == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, double(n - 1)); };
        data->setRange(cellRange(K), cellRange(Q));
        for (std::int64_t q = 0; q < Q; ++q)
            for (std::int64_t k = 0; k < K; ++k)
                data->setCell(static_cast<int>(k), static_cast<int>(q), shown_[static_cast<std::size_t>(q * K + k)]);
        const float maxW = *std::max_element(shown_.begin(), shown_.end());
        map_->setDataRange(fixedCheck_->isChecked() ? QCPRange(0, 1) : QCPRange(0, std::max(1e-6, double(maxW))));
        shading_->setCells(masked_, Q, K);
        const std::int64_t ctx = K - Q;
        if (ctx > 0) {
            QPen pen(kSeparator, 1, Qt::DashLine);
            pen.setCosmetic(true);
            auto* l = new QCPItemStraightLine(plot_);
            l->point1->setCoords(ctx - 0.5, 0);
            l->point2->setCoords(ctx - 0.5, 1);
            l->setPen(pen);
            separators_.push_back(l);
        }
        plot_->xAxis->setRange(-0.5, K - 0.5);
        plot_->yAxis->setRange(-0.5, Q - 0.5);
    }
    updateTicks(plot_->xAxis, xLabels_);
    updateTicks(plot_->yAxis, yLabels_);
    plot_->replot();
}

void AttentionView::updateHover(double x, double y) {
    const auto k = static_cast<std::int64_t>(std::llround(x));
    const auto q = static_cast<std::int64_t>(std::llround(y));
    if (shown_.empty() || k < 0 || q < 0 || k >= attn_.numKeys || q >= attn_.numQueries) return;
    const auto i = static_cast<std::size_t>(q * attn_.numKeys + k);
    QString text = tr("query %1  \u2192  key %2:  weight %3")
                       .arg(yLabels_[q], xLabels_[k])
                       .arg(static_cast<double>(shown_[i]), 0, 'g', 5);
    if (masked_[i])
        text += tr("  (masked: this layer is %1)").arg(QString::fromStdString(describeLayerAttention(shownLayerAttention())));
    hoverLabel_->setText(text);
}

QSize AttentionView::exportSize() const {
    if (plot_->isVisible() && plot_->width() >= 320 && plot_->height() >= 240) return {0, 0};
    const auto cols = static_cast<int>(std::max<std::int64_t>(1, attn_.numKeys));
    const auto rows = static_cast<int>(std::max<std::int64_t>(1, attn_.numQueries));
    const int cell = std::clamp(900 / std::max(cols, rows), 6, 28);
    return {std::clamp(cols * cell + 300, 520, 1800), std::clamp(rows * cell + 220, 360, 1400)};
}

QStringList AttentionView::exportAll(const QString& dir, QString* error) {
    QStringList written;
    QDir d(dir);
    if (!d.exists() && !QDir().mkpath(dir)) {
        if (error) *error = tr("cannot create directory '%1'").arg(dir);
        return written;
    }
    const QSize s = exportSize();
    for (const QString& fmt : draftscope::figureFormats()) {
        const QString path = d.filePath(exportName() + "." + fmt);
        if (!draftscope::exportPlot(plot_, path, error, s.width(), s.height(), figureTitle())) return written;
        written << path;
    }
    for (const QString& fmt : draftscope::tableFormats()) {
        const QString path = d.filePath(exportName() + "." + fmt);
        if (!draftscope::exportTable(table_, path, error)) return written;
        written << path;
    }
    return written;
}

}  // namespace draftscope
