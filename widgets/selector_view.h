#pragma once
// What a drafter's proposal step did in a run (draftscope/selector_stats.h): DFlash2's
// candidate selector or DSpark's Markov bias. Per block position the share of verify steps
// whose drafted token is not the drafter's argmax, one bar series per drafter (A, B), and a
// line counting the steps where that choice gained or lost accepted tokens (greedy runs);
// below it, for DSpark drafters with a confidence head, the CalibrationView. Empty, with a
// note, for DFlash drafters.

#include "draftscope/confidence_calibration.h"
#include "draftscope/selector_stats.h"
#include "summary_plot.h"

#include <vector>

namespace draftscope {

/// One drafter's series: its name as the window shows it, 0 = A / 1 = B (its colour), the stats,
/// what drafts its tokens ("candidate selector", "Markov bias"; proposerOf) and, for DSpark,
/// its confidence head's calibration.
struct SelectorSeries {
    QString name;
    int which = 0;
    SelectorStats stats;
    QString proposer;
    ConfidenceCalibration calibration;
};

/// What picks the drafted tokens of a drafter of `family` (ModelSummary::family):
/// "candidate selector" (DFlash2), "Markov bias" (DSpark), "" otherwise.
QString proposerOf(const std::string& family);

class CalibrationView;

/// "changed 12 of 40 steps; gained 5 (+9 tokens), lost 3, neutral 4" (greedy) or "changed 12 of
/// 40 steps (sampled: no counterfactual)"; "" when stats are not available.
QString describeSelectorStats(const SelectorStats& stats);

class SelectorView : public SummaryPlotView {
    Q_OBJECT
public:
    explicit SelectorView(QWidget* parent = nullptr);
    /// Shows the series that have selector data (others are named in the note).
    void setSeries(const std::vector<SelectorSeries>& series);
    void clear();
    CalibrationView* calibration() const { return calibration_; }
    /// selector.{png,svg,pdf,csv,json}, and calibration.* when a series has confidence.
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    void redraw();
    CalibrationView* calibration_;
    std::vector<SelectorSeries> series_;
};

}  // namespace draftscope
