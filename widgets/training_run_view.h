#pragma once
// The Training run dock (docs/TRACK.md, "In the GUI"): tau over training steps for the chain
// and each DDTree budget, the teacher-forced expected acceptance and the trainer's logged
// metric, the train-vs-inference gap, per-position acceptance as a heatmap (block position x
// step), the findings as markers on the step axis, the best checkpoint, and the table of
// every checkpoint. Clicking a checkpoint asks to open it as drafter A (Shift: B).

#include "draftscope/training_run.h"
#include "exportable_view.h"
#include "training_run_model.h"

#include <QWidget>

class QCustomPlot;
class QLabel;
class QStandardItemModel;
class QTableView;

namespace draftscope {

class HeatmapPlot;

class TrainingRunView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit TrainingRunView(QWidget* parent = nullptr);

    /// Shows `index` (replacing what was shown); `source` names where it was read from.
    void setIndex(const TrackIndex& index, const QString& source = {});
    void clear();
    bool hasIndex() const { return model_->rowCount() > 0; }

    const TrainingRunSeries& series() const { return series_; }
    TrainingRunModel* model() const { return model_; }
    QStandardItemModel* findings() const { return findings_; }
    QCustomPlot* tauPlot() const { return tau_; }
    QCustomPlot* gapPlot() const { return gap_; }
    HeatmapPlot* positionPlot() const { return positions_; }
    QTableView* tableView() const { return table_; }
    QString summaryText() const;

    /// Asks to open the checkpoint at series() index `i` (as drafter B when `asB`); what a
    /// click on a point, a heatmap column or a table row does.
    void activate(int i, bool asB);

    QString exportName() const override { return "training_run"; }
    /// training_run_tau, training_run_gap, training_run_positions (.png/.svg/.pdf) and the
    /// tables training_run, training_run_findings (.csv/.json).
    QStringList exportAll(const QString& dir, QString* error) override;

signals:
    /// A checkpoint to open: its drafter path, as drafter B or A; the run's target and prompt set.
    void checkpointActivated(const QString& drafterPath, bool asDrafterB, const QString& targetDir,
                             const QString& promptSetPath);

private:
    QCustomPlot* makePlot(const QString& name, const QString& title, const QString& yLabel, const QString& tip);
    void plotTau();
    void plotGap();
    void plotPositions();
    void addMarkers(QCustomPlot* plot);

    QLabel* summary_;
    QCustomPlot* tau_;
    QCustomPlot* gap_;
    HeatmapPlot* positions_;
    QTableView* table_;
    TrainingRunModel* model_;
    QStandardItemModel* findings_;
    TrainingRunSeries series_;
    TrackIndex index_;
};

}  // namespace draftscope
