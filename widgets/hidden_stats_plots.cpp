#include "hidden_stats_plots.h"

#include "figure_export.h"
#include "plot_legend.h"
#include "token_display.h"

#include <algorithm>
#include <cmath>

namespace draftscope {

namespace {

// Qualitative palette without red (red is reserved for the outlier markers).
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
const QColor kOutlierColor(214, 39, 40);
constexpr int kPointMarkersUpTo = 64;  // positions up to which every point gets a dot

QColor seriesColor(int i) { return QColor(kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))]); }

QString tr(const char* text) { return QCoreApplication::translate("draftscope::HiddenStatsView", text); }

/// A linear or logarithmic y axis with its ticker and number format.
void setLogScale(QCPAxis* y, bool log) {
    if (log) {
        y->setScaleType(QCPAxis::stLogarithmic);
        y->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        y->setNumberFormat(QStringLiteral("eb"));
        y->setNumberPrecision(0);
    } else {
        y->setScaleType(QCPAxis::stLinear);
        y->setTicker(QSharedPointer<QCPAxisTicker>::create());
        y->setNumberFormat(QStringLiteral("g"));
        y->setNumberPrecision(6);
    }
}

/// A title row above the axis rect, bold in the plot's font.
QCPTextElement* addTitleRow(QCustomPlot* p) {
    p->plotLayout()->insertRow(0);
    QFont titleFont = p->font();
    titleFont.setBold(true);
    auto* title = new QCPTextElement(p, QString(), titleFont);
    p->plotLayout()->addElement(0, 0, title);
    return title;
}

}  // namespace

// ---- line plot ------------------------------------------------------------------------

HiddenStatsLinePlot::HiddenStatsLinePlot(QWidget* parent) : QCustomPlot(parent) {
    title_ = addTitleRow(this);
    // Legend in its own row under the axis rect; fitLegend() fits as many entries per row as
    // the width allows.
    placeLegendBelow(this);
    legend->setWrap(1);

    xAxis->setLabel(tr("position"));
    xAxis->grid()->setVisible(false);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);

    marker_ = new QCPItemStraightLine(this);
    QPen mp(QColor(40, 40, 40));
    mp.setStyle(Qt::DashLine);
    mp.setWidthF(1.5);
    marker_->setPen(mp);
    marker_->setSelectable(false);
    marker_->setVisible(false);
    marker_->point1->setCoords(0, 0);
    marker_->point2->setCoords(0, 1);
    // Created after the marker (item 0). Generated positions: shaded, behind the graphs.
    generatedShade_ = new QCPItemRect(this);
    generatedShade_->setLayer(QStringLiteral("background"));
    generatedShade_->setPen(Qt::NoPen);
    generatedShade_->setBrush(QColor(70, 110, 170, 38));
    generatedShade_->setSelectable(false);
    generatedShade_->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    generatedShade_->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    boundary_ = new QCPItemStraightLine(this);
    boundary_->setPen(QPen(QColor(70, 110, 170), 1.2));
    boundary_->setSelectable(false);
    boundary_->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
    boundary_->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
    partLabel_ = new QCPItemText(this);
    partLabel_->setText(tr("prompt | generated"));
    partLabel_->setColor(QColor(40, 70, 120));
    partLabel_->setSelectable(false);
    partLabel_->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
    partLabel_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    for (QCPAbstractItem* item : {static_cast<QCPAbstractItem*>(generatedShade_), static_cast<QCPAbstractItem*>(boundary_),
                                  static_cast<QCPAbstractItem*>(partLabel_)})
        item->setVisible(false);
}

void HiddenStatsLinePlot::setSeries(const HiddenStatsModel& model) {
    const auto& stats = model.stats();
    // Graphs: one line per series, plus its outlier markers (one legend entry for all).
    clearGraphs();
    graphs_.clear();
    outlierGraphs_.clear();
    bool anyOutlier = false;
    for (std::size_t i = 0; i < stats.series.size(); ++i) {
        const auto& s = stats.series[i];
        auto* g = addGraph();
        QPen pen(seriesColor(int(i)));
        pen.setWidthF(1.6);
        if (s.layerId < 0) pen.setStyle(Qt::DashLine);  // the drafter's context
        g->setPen(pen);
        g->setName(hiddenSeriesLabel(s));
        if (model.positionCount() <= kPointMarkersUpTo)
            g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, seriesColor(int(i)), 4));
        graphs_.push_back(g);
        anyOutlier = anyOutlier || !s.outlierPositions.empty();
    }
    for (std::size_t i = 0; i < stats.series.size(); ++i) {
        auto* o = addGraph();
        o->setLineStyle(QCPGraph::lsNone);
        o->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(kOutlierColor, 2), Qt::NoBrush, 11));
        o->setName(tr("RMS outlier (robust z > 5)"));
        if (i > 0 || !anyOutlier) o->removeFromLegend();
        outlierGraphs_.push_back(o);
    }

    // x axis: token pieces as tick labels when there are few positions.
    const int t = model.positionCount();
    if (t > 0 && t <= kMaxTokenTicks) {
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        for (int pos = 0; pos < t; ++pos) {
            const QString piece = displayPiece(model.tokenPiece(pos), 12);
            ticker->addTick(pos, piece.isEmpty() ? QString::number(pos) : QStringLiteral("%1 %2").arg(pos).arg(piece));
        }
        xAxis->setTicker(ticker);
        xAxis->setTickLabelRotation(t > 8 ? 60 : 0);
        xAxis->setLabel(tr("position  token"));
    } else {
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        xAxis->setTicker(ticker);
        xAxis->setTickLabelRotation(0);
        xAxis->setLabel(tr("position"));
    }
    xAxis->setSubTicks(false);
    fitLegend(width());
}

void HiddenStatsLinePlot::showStatistic(const HiddenStatsModel& model, HiddenStat stat, bool log) {
    const auto& stats = model.stats();
    const int t = model.positionCount();
    log = log && stat != HiddenStat::Mean;
    for (std::size_t i = 0; i < graphs_.size() && i < stats.series.size(); ++i) {
        const auto& values = hiddenStatValues(stats.series[i], stat);
        QVector<double> keys, vals;
        keys.reserve(int(values.size()));
        vals.reserve(int(values.size()));
        for (std::size_t p = 0; p < values.size(); ++p) {
            keys << double(p);
            vals << (std::isfinite(values[p]) ? double(values[p]) : qQNaN());  // non-finite: a gap
        }
        graphs_[i]->setData(keys, vals, true);
        QVector<double> ok, ov;
        for (std::int64_t p : stats.series[i].outlierPositions) {
            if (p < 0 || p >= std::int64_t(values.size()) || !std::isfinite(values[std::size_t(p)])) continue;
            ok << double(p);
            ov << double(values[std::size_t(p)]);
        }
        outlierGraphs_[i]->setData(ok, ov);
    }

    QCPAxis* y = yAxis;
    setLogScale(y, log);
    xAxis->setRange(-0.5, std::max(0, t - 1) + 0.5);
    const int promptLength = model.promptLength();
    const bool generated = promptLength < t;
    const double edge = promptLength - 0.5;  // between the last prompt and the first generated position
    generatedShade_->topLeft->setCoords(edge, 0);
    generatedShade_->bottomRight->setCoords(t - 0.5, 1);
    boundary_->point1->setCoords(edge, 0);
    boundary_->point2->setCoords(edge, 1);
    partLabel_->position->setCoords(edge, 0.01);
    generatedShade_->setVisible(generated);
    boundary_->setVisible(generated);
    partLabel_->setVisible(generated);
    bool found = false;
    QCPRange r;
    for (auto* g : graphs_) {
        bool f = false;
        const QCPRange gr = g->getValueRange(f, log ? QCP::sdPositive : QCP::sdBoth);
        if (!f) continue;
        r = found ? QCPRange(std::min(r.lower, gr.lower), std::max(r.upper, gr.upper)) : gr;
        found = true;
    }
    if (!found) {
        y->setRange(log ? QCPRange(0.1, 10) : QCPRange(0, 1));
    } else if (log) {
        y->setRange(r.lower / 1.6, r.upper * 1.6);
    } else {
        double lo = stat == HiddenStat::Mean ? r.lower : std::min(0.0, r.lower);
        double hi = r.upper;
        double pad = (hi - lo) * 0.06;
        if (pad <= 0) pad = std::max(std::fabs(hi) * 0.1, 1e-3);
        y->setRange(stat == HiddenStat::Mean || lo < 0 ? lo - pad : lo, hi + pad);
    }
    y->setLabel(tr("%1 over hidden dim").arg(hiddenStatLabel(stat)));
    title_->setText(t == 0 || stats.series.empty()
                        ? tr("Hidden-state statistics: no data")
                        : tr("Per-position %1 of the hidden states (%2 positions)").arg(hiddenStatLabel(stat)).arg(t));
    replot(QCustomPlot::rpQueuedReplot);
}

void HiddenStatsLinePlot::setMarker(int position) {
    marker_->setVisible(position >= 0);
    if (position >= 0) {
        marker_->point1->setCoords(position, 0);
        marker_->point2->setCoords(position, 1);
    }
    replot(QCustomPlot::rpQueuedReplot);
}

void HiddenStatsLinePlot::resizeEvent(QResizeEvent* event) {
    QCustomPlot::resizeEvent(event);
    fitLegend(width());
}

void HiddenStatsLinePlot::fitLegend(int plotWidth) { fitLegendRows(this, plotWidth, 4); }

bool HiddenStatsLinePlot::exportFigure(const QString& path, QString* error, const QString& title) {
    fitLegend(kExportWidth);  // legend rows fitted to the export width
    // The clicked-position marker is an on-screen state, not part of the figure.
    const bool marked = marker_->visible();
    marker_->setVisible(false);
    const bool ok = exportPlot(this, path, error, kExportWidth, kExportHeight, title);
    marker_->setVisible(marked);
    fitLegend(width());
    return ok;
}

QCPGraph* HiddenStatsLinePlot::seriesGraph(int series) const {
    return series >= 0 && series < int(graphs_.size()) ? graphs_[std::size_t(series)] : nullptr;
}

QCPGraph* HiddenStatsLinePlot::outlierGraph(int series) const {
    return series >= 0 && series < int(outlierGraphs_.size()) ? outlierGraphs_[std::size_t(series)] : nullptr;
}

// ---- histogram ------------------------------------------------------------------------

HiddenHistogram hiddenHistogram(const HiddenSeriesStats* s) {
    HiddenHistogram h;
    h.title = tr("Value histogram: no data");
    if (!s) return h;
    const std::size_t bins = std::min(s->histogramCounts.size(), s->histogramEdges.empty() ? 0 : s->histogramEdges.size() - 1);
    for (std::size_t b = 0; b < bins; ++b) {
        h.centres << 0.5 * (s->histogramEdges[b] + s->histogramEdges[b + 1]);
        h.counts << double(s->histogramCounts[b]);
    }
    if (bins > 0) h.width = (s->histogramEdges[bins] - s->histogramEdges[0]) / double(bins);
    h.title = bins > 0 ? tr("Value histogram\n%1").arg(hiddenSeriesLabel(*s))
                       : tr("Value histogram: none\n%1").arg(hiddenSeriesLabel(*s));
    return h;
}

HiddenHistogram expertHistogram(const HiddenSeriesStats* s) {
    HiddenHistogram h;
    h.title = tr("Experts chosen: no data");
    if (!s) return h;
    if (s->numExperts <= 0 || s->expertChoices.empty()) {
        h.title = tr("Experts chosen: none (no router)\n%1").arg(hiddenSeriesLabel(*s));
        return h;
    }
    const auto counts = s->expertCounts();
    for (std::size_t e = 0; e < counts.size(); ++e) {
        h.centres << double(e);
        h.counts << double(counts[e]);
    }
    const auto T = std::max<std::size_t>(1, s->rms.size());
    h.title = tr("Experts chosen\n%1: %2 tokens × %3").arg(hiddenSeriesLabel(*s)).arg(T).arg(s->expertChoices.size() / T);
    return h;
}

HiddenStatsHistogramPlot::HiddenStatsHistogramPlot(QWidget* parent) : QCustomPlot(parent) {
    title_ = addTitleRow(this);
    bars_ = new QCPBars(xAxis, yAxis);
    bars_->setWidthType(QCPBars::wtPlotCoords);
    bars_->setPen(QPen(QColor(31, 119, 180).darker(130), 0.5));
    bars_->setBrush(QColor(31, 119, 180, 190));
    xAxis->setLabel(tr("value"));
    yAxis->setLabel(tr("count (all positions × hidden dims)"));
    xAxis->grid()->setVisible(false);
}

void HiddenStatsHistogramPlot::showSeries(const HiddenSeriesStats* series, bool log, bool experts) {
    const HiddenHistogram h = experts ? expertHistogram(series) : hiddenHistogram(series);
    xAxis->setLabel(experts ? tr("expert") : tr("value"));
    yAxis->setLabel(experts ? tr("tokens routed (all positions × top-k)") : tr("count (all positions × hidden dims)"));
    bars_->setWidth(h.width > 0 ? h.width : 1.0);
    bars_->setData(h.centres, h.counts, true);
    title_->setText(h.title);
    double maxCount = 0;
    for (double c : h.counts) maxCount = std::max(maxCount, c);
    setLogScale(yAxis, log);
    if (log) yAxis->setRange(0.5, std::max(10.0, maxCount * 2.0));
    else yAxis->setRange(0, maxCount > 0 ? maxCount * 1.08 : 1.0);
    if (!h.centres.isEmpty()) xAxis->setRange(h.centres.first() - h.width, h.centres.last() + h.width);
    else xAxis->setRange(0, 1);
    replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace draftscope
