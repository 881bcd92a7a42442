#pragma once
// The two figures of HiddenStatsView: the per-position line plot of one statistic and the
// value histogram of one series. Plain QCustomPlots fed from a HiddenStatsModel.

#include "hidden_stats_model.h"

#include <qcustomplot.h>

#include <QString>

#include <vector>

namespace draftscope {

/// Per-position line plot: one graph per series (the drafter's context dashed), RMS outlier
/// markers (one legend entry for all), generated positions shaded behind a "prompt |
/// generated" separator, a dashed marker at a clicked position, the legend in a row under
/// the axis rect with as many entries per row as the width allows. Up to kMaxTokenTicks
/// positions the x axis is labelled "position piece". Non-finite values are gaps.
class HiddenStatsLinePlot : public QCustomPlot {
    Q_OBJECT
public:
    /// Up to this many positions the x axis is labelled with "position piece" tick labels.
    static constexpr int kMaxTokenTicks = 48;
    /// Size of exported figures (fixed so scripted exports do not depend on the window).
    static constexpr int kExportWidth = 1000, kExportHeight = 520;

    explicit HiddenStatsLinePlot(QWidget* parent = nullptr);
    /// Rebuilds the graphs and x ticks for the stats of `model`.
    void setSeries(const HiddenStatsModel& model);
    /// Draws statistic `stat` of `model` (log y when `log`, never for the mean) and replots.
    void showStatistic(const HiddenStatsModel& model, HiddenStat stat, bool log);
    /// Marker at `position`; -1 hides it.
    void setMarker(int position);
    /// Entries per legend row for a plot `width` pixels wide (1 to 4).
    void fitLegend(int width);
    /// Writes the figure at the export size, without the marker (an on-screen state).
    bool exportFigure(const QString& path, QString* error, const QString& title);

    QCPGraph* seriesGraph(int series) const;
    QCPGraph* outlierGraph(int series) const;
    QCPItemRect* generatedShade() const { return generatedShade_; }
    QCPItemStraightLine* promptBoundary() const { return boundary_; }
    QCPItemText* partLabel() const { return partLabel_; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    QCPTextElement* title_ = nullptr;
    QCPItemStraightLine* marker_ = nullptr;
    QCPItemRect* generatedShade_ = nullptr;
    QCPItemStraightLine* boundary_ = nullptr;
    QCPItemText* partLabel_ = nullptr;
    std::vector<QCPGraph*> graphs_, outlierGraphs_;
};

/// The bars of one series' value histogram: bin centres, counts, the common bin width (1
/// when there are no bins) and the plot title ("Value histogram\n<series>", "...: none" with
/// no bins, "Value histogram: no data" for no series).
struct HiddenHistogram {
    QVector<double> centres, counts;
    double width = 1.0;
    QString title;
};
/// Computes the HiddenHistogram of `series` (nullptr: no data). Bins are the pairs of
/// consecutive histogramEdges that have a histogramCounts entry.
HiddenHistogram hiddenHistogram(const HiddenSeriesStats* series);
/// The routing histogram of `series` (a MoE target's tapped layer, issue 31): one bar per
/// expert 0..numExperts-1 at its index, the tokens its router sent there (a token counts
/// once per top-k slot), width 1; title "Experts chosen\n<series>: T tokens x k", or
/// "Experts chosen: none\n<series>" where the series has no router (nullptr: no data).
HiddenHistogram expertHistogram(const HiddenSeriesStats* series);

/// Value histogram of one series (optional log count axis).
class HiddenStatsHistogramPlot : public QCustomPlot {
    Q_OBJECT
public:
    static constexpr int kExportWidth = 760, kExportHeight = 460;
    explicit HiddenStatsHistogramPlot(QWidget* parent = nullptr);
    /// Shows hiddenHistogram(series), or expertHistogram(series) when `experts`, and replots.
    void showSeries(const HiddenSeriesStats* series, bool log, bool experts = false);
    QCPBars* bars() const { return bars_; }

private:
    QCPTextElement* title_ = nullptr;
    QCPBars* bars_ = nullptr;
};

}  // namespace draftscope
