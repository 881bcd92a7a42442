#include "probe_tau_plot.h"

#include "drafter_comparison.h"
#include "figure_export.h"
#include "plot_legend.h"

#include <qcustomplot.h>

#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace draftscope {

ProbeTauData probeTauData(const DiagnosisReport& report, const std::vector<int>& which, const QStringList& names) {
    ProbeTauData out;
    for (std::size_t i = 0; i < report.drafters.size(); ++i) {
        const auto& d = report.drafters[i];
        if (d.conventionProbes.empty()) continue;
        ProbeTauSeries s;
        s.which = i < which.size() ? which[i] : static_cast<int>(i);
        s.name = static_cast<int>(i) < names.size() ? names[static_cast<int>(i)] : QString::fromStdString(d.path);
        s.declaredTau = d.conventionProbes.front().expectedDeclaredTau;
        for (const auto& c : d.conventionProbes) {
            const QString label = QString::fromStdString(c.family + ": " + c.alternative);
            int k = static_cast<int>(out.categories.indexOf(label));
            if (k < 0) {
                k = static_cast<int>(out.categories.size());
                out.categories << label;
            }
            s.category << k;
            s.tau << c.expectedTau;
            s.lower << c.expectedDeclaredTau + c.expectedDifference.lower;
            s.upper << c.expectedDeclaredTau + c.expectedDifference.upper;
            s.finding << c.finding;
        }
        out.series.push_back(std::move(s));
    }
    return out;
}

ProbeTauPlot::ProbeTauPlot(QWidget* parent)
    : QWidget(parent), plot_(new QCustomPlot(this)), table_(new QStandardItemModel(this)) {
    setObjectName("ProbeTauPlot");
    plot_->setObjectName(exportName());
    plot_->setToolTip(tr("Expected acceptance of the teacher-forced probe (per anchor 1 + the sum over slots of the "
                         "product of the drafter's probabilities of the reference tokens up to that slot; the "
                         "statistic the findings are decided on) under each alternative convention. Bars: %1% "
                         "interval of the gain over the declared convention (paired bootstrap); a star marks an "
                         "alternative that raised a finding (mean gain above the margin %2, interval above 0).")
                          .arg(static_cast<int>(kConventionConfidence * 100 + 0.5))
                          .arg(kConventionMargin));
    plot_->xAxis->setLabel(tr("expected acceptance (probe)"));  // defined in the tooltip
    plot_->yAxis->setRangeReversed(true);  // the first alternative at the top
    plot_->yAxis->grid()->setZeroLinePen(Qt::NoPen);  // category 0 is not special
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(
        0, 0, new QCPTextElement(plot_, tr("Convention probes: expected acceptance per alternative (%1% interval of the gain)")
                                            .arg(static_cast<int>(kConventionConfidence * 100 + 0.5))));
    plot_->legend->setFont(QFont(font().family(), 8));
    placeLegendBelow(plot_);
    fitLegendRowsOnResize(plot_, kLegendPerRow, [this] { return contentHeight(); });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    installExportMenu(plot_, exportName(), [this](const QString& p, QString* e) { return exportFigure(p, e, 0, 0); }, table_);
    clear();
}

void ProbeTauPlot::clear() { setData({}); }

void ProbeTauPlot::setData(const ProbeTauData& data) {
    data_ = data;
    redraw();
}

void ProbeTauPlot::redraw() {
    plot_->clearPlottables();
    plot_->clearItems();
    table_->clear();
    table_->setHorizontalHeaderLabels({tr("drafter"), tr("family"), tr("alternative"), tr("declared tau"), tr("tau"),
                                       tr("gain"), tr("gain lower"), tr("gain upper"), tr("finding")});
    const int n = static_cast<int>(data_.categories.size());
    QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
    for (int k = 0; k < n; ++k) ticks->addTick(k, data_.categories[k]);
    plot_->yAxis->setTicker(ticks);
    plot_->yAxis->setTickLabelFont(QFont(font().family(), 8));
    plot_->yAxis->setRange(-0.7, std::max(0, n - 1) + 0.7);
    double lo = 1e9, hi = -1e9;
    const int count = static_cast<int>(data_.series.size());
    for (int s = 0; s < count; ++s) {
        const ProbeTauSeries& series = data_.series[static_cast<std::size_t>(s)];
        const QColor color = drafterColor(series.which);
        const bool second = series.which == 1;
        const double offset = count > 1 ? (s - (count - 1) / 2.0) * 0.3 : 0.0;
        QVector<double> keys, values, errMinus, errPlus, starKeys, starTau;
        // In category order: the graph keeps its points sorted by key, the error bars follow that order.
        std::vector<int> order(static_cast<std::size_t>(series.tau.size()));
        for (int i = 0; i < series.tau.size(); ++i) order[static_cast<std::size_t>(i)] = i;
        std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return series.category[x] < series.category[y]; });
        for (const int i : order) {
            values << series.tau[i];
            keys << series.category[i] + offset;
            errMinus << std::max(0.0, series.tau[i] - series.lower[i]);
            errPlus << std::max(0.0, series.upper[i] - series.tau[i]);
            if (series.finding[i]) {
                starKeys << keys.back();
                starTau << series.tau[i];
            }
            lo = std::min({lo, series.lower[i], series.tau[i]});
            hi = std::max({hi, series.upper[i], series.tau[i]});
            const QStringList cat = data_.categories[static_cast<int>(series.category[i])].split(QStringLiteral(": "));
            QList<QStandardItem*> row;
            for (const QVariant& v : {QVariant(series.name), QVariant(cat.value(0)), QVariant(cat.mid(1).join(": ")),
                                      QVariant(series.declaredTau), QVariant(series.tau[i]),
                                      QVariant(series.tau[i] - series.declaredTau),
                                      QVariant(series.lower[i] - series.declaredTau),
                                      QVariant(series.upper[i] - series.declaredTau),
                                      QVariant(series.finding[i] ? tr("yes") : QString())}) {
                auto* it = new QStandardItem;
                it->setData(v, Qt::DisplayRole);
                row << it;
            }
            table_->appendRow(row);
        }
        lo = std::min(lo, series.declaredTau);
        hi = std::max(hi, series.declaredTau);
        auto* g = plot_->addGraph(plot_->yAxis, plot_->xAxis);  // alternatives on the vertical axis
        g->setName(series.name);
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(second ? QCPScatterStyle::ssSquare : QCPScatterStyle::ssDisc, color, color, 7));
        g->setData(keys, values, true);
        auto* bars = new QCPErrorBars(plot_->yAxis, plot_->xAxis);
        bars->removeFromLegend();
        bars->setDataPlottable(g);
        bars->setData(errMinus, errPlus);
        bars->setPen(QPen(color, 1.2));
        if (!starKeys.isEmpty()) {
            auto* stars = plot_->addGraph(plot_->yAxis, plot_->xAxis);
            stars->setName(tr("%1: finding").arg(series.name));
            stars->setLineStyle(QCPGraph::lsNone);
            stars->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssStar, QPen(Qt::black, 1.5), Qt::NoBrush, 15));
            stars->setData(starKeys, starTau, true);
        }
        // The declared convention: a dashed vertical line (a two-point graph, so the legend names it).
        auto* declared = plot_->addGraph(plot_->yAxis, plot_->xAxis);
        declared->setName(tr("%1: declared %2").arg(series.name).arg(series.declaredTau, 0, 'f', 2));
        declared->setData(QVector<double>{-0.7, std::max(0, n - 1) + 0.7}, QVector<double>{series.declaredTau, series.declaredTau});
        declared->setPen(QPen(color.darker(120), 1.5, second ? Qt::DotLine : Qt::DashLine));
    }
    if (lo > hi) lo = 1, hi = 2;
    const double pad = std::max(0.05, (hi - lo) * 0.08);
    plot_->xAxis->setRange(lo - pad, hi + pad);
    fitLegendRows(plot_, plot_->width(), kLegendPerRow);
    plot_->setMinimumHeight(contentHeight() + legendHeightFor(plot_, plot_->width(), kLegendPerRow));
    plot_->replot();
}

int ProbeTauPlot::contentHeight() const {
    // Title, tick labels and axis label (about 110 px) and 22 px per alternative.
    return std::max(180, 110 + 22 * static_cast<int>(data_.categories.size()));
}

bool ProbeTauPlot::exportFigure(const QString& path, QString* error, int width, int height) {
    return exportPlotFittingLegend(plot_, path, error, width, height, figureTitle(), kLegendPerRow);
}

QStringList ProbeTauPlot::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    // Every label and every legend row inside the image (the legend wraps at 900 px).
    const int height = std::max(360, 140 + 24 * static_cast<int>(data_.categories.size()) +
                                         legendHeightFor(plot_, 900, kLegendPerRow));
    set.figure(exportName(), [this, height](const QString& path, QString* e) { return exportFigure(path, e, 900, height); }) &&
        set.table(exportName(), table_);
    return set.written();
}

}  // namespace draftscope
