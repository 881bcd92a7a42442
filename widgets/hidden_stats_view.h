#pragma once
// Hidden-state statistics of a committed sequence (prompt + generated tokens): per-position line plot (one graph per tapped layer and
// the drafter's context), value histogram of one series, and the per-position table.

#include "exportable_view.h"
#include "hidden_stats_model.h"
#include "hidden_stats_plots.h"

#include <draftscope/run_types.h>

#include <QWidget>

#include <vector>

class QCheckBox;
class QSplitter;
class QComboBox;
class QCPGraph;
class QCPBars;
class QCPItemRect;
class QCPItemStraightLine;
class QCPItemText;
class QCPTextElement;
class QCustomPlot;
class QLabel;
class QMouseEvent;
class QSortFilterProxyModel;
class QStackedWidget;
class QTableView;

namespace draftscope {

/// Shows a HiddenStateStats (the figures: hidden_stats_plots.h): (a) a line plot of one per-position statistic (rms, mean, std or
/// max|x|, chosen in a combo box) with one graph per series and RMS outliers marked, (b) the
/// value histogram of the series chosen in a second combo box (optional log y), (c) the
/// per-position table (HiddenStatsModel). A click in the line plot emits positionClicked();
/// highlightPosition() draws a vertical marker. Empty stats show a placeholder text.
/// When the statistics cover generated positions (stats.promptLength < T), the line plot
/// shades them, draws a separator at the prompt boundary labelled "prompt | generated", and
/// the summary counts both parts; the table shades generated rows (HiddenStatsModel).
/// exportName() is "hidden_stats"; exportAll() writes hidden_stats.{png,svg,pdf} (line plot),
/// hidden_stats_histogram.{png,svg,pdf} and hidden_stats.{csv,json} (table, position order),
/// figures at a fixed size (1000x520 and 760x460) so scripted exports do not depend on the
/// window; an empty view exports empty "no data" figures and a header-only table.
/// Non-finite statistics (inf/NaN) are drawn as gaps and reported in the summary line.
class HiddenStatsView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    /// Up to this many positions the x axis is labelled with "position piece" tick labels.
    static constexpr int kMaxTokenTicks = HiddenStatsLinePlot::kMaxTokenTicks;

    explicit HiddenStatsView(QWidget* parent = nullptr);

    /// Shows `stats`; tokenPieces[p] labels position p (see HiddenStatsModel::setStats).
    /// Keeps the selected statistic, and the histogram series when it still exists.
    void setStats(const HiddenStateStats& stats, const std::vector<QString>& tokenPieces);
    /// Shows the placeholder (same as setStats with empty stats).
    void clear();

    /// Statistic drawn in the line plot.
    /// The statistic of the line plot; the table shows its column of every series (unless
    /// allStatisticsShown()).
    HiddenStat statistic() const;
    void setStatistic(HiddenStat stat);
    /// The table's "all statistics" box: every series' four statistic columns.
    bool allStatisticsShown() const;
    void setAllStatisticsShown(bool on);
    /// Series whose histogram is shown (-1 when there is none).
    int histogramSeries() const;
    void setHistogramSeries(int series);
    /// Whether the histogram shows the experts the series' router chose (MoE targets)
    /// instead of the values; only offered for a series that has a router.
    bool histogramShowsExperts() const;
    void setHistogramShowsExperts(bool experts);
    bool histogramLogScale() const;
    void setHistogramLogScale(bool log);
    /// Log-scaled y axis of the line plot (ignored, and the box disabled, for "mean").
    bool lineLogScale() const;
    void setLineLogScale(bool log);

    /// Position of the vertical marker, -1 when none.
    int highlightedPosition() const { return highlighted_; }
    /// True while the placeholder (no statistics) is shown.
    bool isShowingPlaceholder() const;
    QString placeholderText() const;
    /// Replaces the placeholder's text (e.g. to say how to compute the statistics).
    void setPlaceholderText(const QString& text);
    /// A note above the plots (e.g. which of two compared drafters the series belong to);
    /// empty hides it.
    void setCaption(const QString& text);
    QString caption() const;

    HiddenStatsLinePlot* linePlot() const { return linePlot_; }
    HiddenStatsHistogramPlot* histogramPlot() const { return histPlot_; }
    QTableView* table() const { return table_; }
    HiddenStatsModel* model() const { return model_; }
    /// Graph of series `series` in the line plot (nullptr if out of range).
    QCPGraph* seriesGraph(int series) const;
    /// Outlier markers of series `series` (x = outlier positions, y = the shown statistic).
    QCPGraph* outlierGraph(int series) const;
    QCPBars* histogramBars() const;
    /// Shading over the generated positions (hidden when there are none).
    QCPItemRect* generatedShade() const;
    /// Separator at the prompt boundary, x = promptLength - 0.5 (hidden when none generated).
    QCPItemStraightLine* promptBoundary() const;
    /// The "prompt | generated" label at the boundary.
    QCPItemText* partLabel() const;

    QString exportName() const override { return QStringLiteral("hidden_stats"); }
    QStringList exportAll(const QString& dir, QString* error) override;

public slots:
    /// Draws a vertical marker at `position` in the line plot and selects its table row;
    /// -1 (or a position outside 0..T-1) removes it. Emits nothing.
    void highlightPosition(int position);

signals:
    /// The user clicked the line plot (nearest position to the click) or a table row.
    void positionClicked(int position);

private:
    void refreshLinePlot();
    void refreshHistogram();
    void refreshSummary();
    void onLinePress(QMouseEvent* event);
    void onLineRelease(QMouseEvent* event);

    HiddenStatsModel* model_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QLabel* placeholder_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* caption_ = nullptr;
    QComboBox* statCombo_ = nullptr;
    QComboBox* seriesCombo_ = nullptr;
    QCheckBox* lineLog_ = nullptr;
    QCheckBox* histLog_ = nullptr;
    QComboBox* histKind_ = nullptr;  ///< values | experts chosen
    HiddenStatsLinePlot* linePlot_ = nullptr;
    HiddenStatsHistogramPlot* histPlot_ = nullptr;
    QTableView* table_ = nullptr;
    QCheckBox* allStats_ = nullptr;
    QSplitter* hsplit_ = nullptr;  ///< histogram | table (stacked when the view is narrow)
    /// Narrower than this, the histogram and the table stack.
    static constexpr int kSideBySideWidth = 900;
    void updateTableColumns();
    void resizeEvent(QResizeEvent* e) override;
    QPoint pressPos_;
    bool pressed_ = false;
    int highlighted_ = -1;
};

}  // namespace draftscope
