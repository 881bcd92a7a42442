#pragma once
// A DSpark confidence head's reliability diagram (draftscope/confidence_calibration.h): per
// confidence bin, the mean predicted acceptance probability against the share of slots the
// target accepted, one point series per drafter (A, B; point area ~ slots), the diagonal of a
// perfectly calibrated head, and Brier score and ECE in the summary. Hidden content (a note)
// when no run carries confidence.

#include "draftscope/confidence_calibration.h"
#include "exportable_view.h"

#include <QWidget>

#include <vector>

class QCustomPlot;
class QLabel;
class QStandardItemModel;

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

class CalibrationView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit CalibrationView(QWidget* parent = nullptr);
    void setSeries(const std::vector<CalibrationSeries>& series);
    void clear();
    /// Whether any series carries confidence (the view has something to show).
    bool hasData() const;
    QCustomPlot* plot() const { return plot_; }
    QStandardItemModel* table() const { return table_; }
    QString summaryText() const;

    QString exportName() const override { return QStringLiteral("calibration"); }
    QStringList exportAll(const QString& dir, QString* error) override;
    bool exportFigure(const QString& path, QString* error, int width = 0, int height = 0);

private:
    void redraw();
    QLabel* summary_;
    QCustomPlot* plot_;
    QStandardItemModel* table_;
    std::vector<CalibrationSeries> series_;
};

}  // namespace draftscope
