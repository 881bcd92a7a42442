#pragma once
// A DSpark confidence head's reliability diagram (draftscope/confidence_calibration.h): per
// confidence bin, the mean predicted acceptance probability against the share of slots the
// target accepted, one point series per drafter (A, B; point area ~ slots), the diagonal of a
// perfectly calibrated head, and Brier score and ECE in the summary. Hidden content (a note)
// when no run carries confidence.

#include "draftscope/confidence_calibration.h"
#include "summary_plot.h"

#include <vector>

namespace draftscope {

/// One drafter's calibration: its name as the window shows it, 0 = A / 1 = B, the statistics.
struct CalibrationSeries {
    QString name;
    int which = 0;
    ConfidenceCalibration calibration;
};

/// "412 tested slots: mean confidence 0.61, accepted 0.55; Brier 0.180, ECE 0.070"; "" when
/// not available.
QString describeCalibration(const ConfidenceCalibration& c);

class CalibrationView : public SummaryPlotView {
    Q_OBJECT
public:
    explicit CalibrationView(QWidget* parent = nullptr);
    void setSeries(const std::vector<CalibrationSeries>& series);
    void clear();
    /// Whether any series carries confidence (the view has something to show).
    bool hasData() const;
    /// calibration.{png,svg,pdf,csv,json}
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    void redraw();
    std::vector<CalibrationSeries> series_;
};

}  // namespace draftscope
