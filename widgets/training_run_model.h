#pragma once
// The numbers the Training run dock draws from a run index (draftscope-cli track,
// draftscope/training_run.h), computed without a plot so tests can check them, and the
// per-checkpoint table (CSV/JSON export).

#include "draftscope/training_run.h"

#include <QAbstractTableModel>

#include <optional>
#include <vector>

namespace draftscope {

/// The series of the done checkpoints of an index, in step order.
struct TrainingRunSeries {
    std::vector<double> steps;                  ///< x of every series below
    std::vector<std::string> paths;             ///< each checkpoint's drafter path
    std::vector<double> tau;                    ///< chain tau
    std::vector<int> treeBudgets;
    std::vector<std::vector<double>> treeTau;   ///< [budget][checkpoint]
    std::vector<double> teacherForcedExpected;
    std::vector<double> gap;
    /// The trainer log's points (every logged step, not only checkpoints) and its metric.
    std::vector<double> logSteps, logValues;
    std::string logMetric;
    /// Per-position acceptance, [positions][checkpoints], position 1..B-1 (the anchor left
    /// out); 0 where a checkpoint has fewer positions.
    std::vector<std::vector<double>> positionAcceptance;
    int bestIndex = -1;  ///< into steps; -1 if none
    /// Findings by step: id ("regression", "gap-widening") and message.
    struct Marker {
        double step;
        std::string id, message;
    };
    std::vector<Marker> markers;
};

TrainingRunSeries trainingRunSeries(const TrackIndex& index);

/// One row per checkpoint of the index (failed and interrupted ones too): step, status, tau,
/// DDTree tau per budget, teacher-forced tau, teacher-forced expected acceptance, gap, the
/// trainer log's value at the step (the last logged at or before it), seconds, results file,
/// path, error. kExportRole holds full-precision numbers.
class TrainingRunModel : public QAbstractTableModel {
    Q_OBJECT
public:
    using QAbstractTableModel::QAbstractTableModel;
    void setIndex(const TrackIndex& index);
    const TrackIndex& trackIndex() const { return index_; }
    /// The checkpoint of row `row`.
    const TrackedCheckpoint& checkpoint(int row) const { return index_.checkpoints[static_cast<std::size_t>(row)]; }
    /// The row of the checkpoint at `step`, or -1.
    int rowOfStep(std::int64_t step) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    /// The trainer log's value at `step` (the last point at or before it).
    std::optional<double> loggedAt(std::int64_t step) const;
    TrackIndex index_;
};

}  // namespace draftscope
