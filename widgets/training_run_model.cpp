#include "training_run_model.h"

#include "figure_export.h"

#include <QBrush>
#include <QColor>
#include <QFileInfo>
#include <QFont>

#include <cmath>

namespace draftscope {

namespace {
enum Column { Step, Status, Tau, FirstTree };  // then trees, TfTau, TfExpected, Gap, Logged, Seconds, File, Path, Error
const char* const kTail[] = {"teacher-forced tau", "teacher-forced expected", "gap", "logged", "seconds",
                             "results file", "path", "error"};
}  // namespace

TrainingRunSeries trainingRunSeries(const TrackIndex& x) {
    TrainingRunSeries s;
    s.treeBudgets = x.settings.ddtreeBudgets;
    s.treeTau.resize(s.treeBudgets.size());
    std::size_t positions = 0;
    for (const auto& c : x.checkpoints)
        if (c.status == "done") positions = std::max(positions, c.positionAcceptance.size());
    s.positionAcceptance.assign(positions > 1 ? positions - 1 : 0, {});
    for (const auto& c : x.checkpoints) {
        if (c.status != "done") continue;
        if (c.checkpoint.step == x.bestStep) s.bestIndex = static_cast<int>(s.steps.size());
        s.steps.push_back(static_cast<double>(c.checkpoint.step));
        s.paths.push_back(c.checkpoint.path);
        s.tau.push_back(c.tau);
        for (std::size_t b = 0; b < s.treeBudgets.size(); ++b)
            s.treeTau[b].push_back(b < c.treeTaus.size() ? c.treeTaus[b] : NAN);
        s.teacherForcedExpected.push_back(c.teacherForcedExpected);
        s.gap.push_back(c.gap);
        for (std::size_t j = 1; j < positions; ++j)
            s.positionAcceptance[j - 1].push_back(j < c.positionAcceptance.size() ? c.positionAcceptance[j] : 0.0);
    }
    if (x.trainerLog) {
        s.logMetric = x.trainerLog->metric;
        for (const auto& [step, v] : x.trainerLog->points) {
            s.logSteps.push_back(static_cast<double>(step));
            s.logValues.push_back(v);
        }
    }
    for (const auto& f : x.findings) s.markers.push_back({static_cast<double>(f.step), f.id, f.message});
    return s;
}

void TrainingRunModel::setIndex(const TrackIndex& index) {
    beginResetModel();
    index_ = index;
    endResetModel();
}

int TrainingRunModel::rowOfStep(std::int64_t step) const {
    for (std::size_t i = 0; i < index_.checkpoints.size(); ++i)
        if (index_.checkpoints[i].checkpoint.step == step) return static_cast<int>(i);
    return -1;
}

int TrainingRunModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(index_.checkpoints.size());
}

int TrainingRunModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : FirstTree + static_cast<int>(index_.settings.ddtreeBudgets.size()) + 8;
}

std::optional<double> TrainingRunModel::loggedAt(std::int64_t step) const {
    if (!index_.trainerLog) return std::nullopt;
    std::optional<double> v;
    for (const auto& [s, value] : index_.trainerLog->points)
        if (s <= step) v = value;
    return v;
}

QVariant TrainingRunModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const auto& c = checkpoint(index.row());
    const int trees = static_cast<int>(index_.settings.ddtreeBudgets.size());
    const int col = index.column();
    const bool done = c.status == "done";
    auto number = [&](double v) -> QVariant {
        if (!done || !std::isfinite(v)) return role == Qt::DisplayRole ? QVariant(QStringLiteral("-")) : QVariant();
        if (role == kExportRole) return v;
        return QString::number(v, 'f', 3);
    };
    if (role == Qt::ForegroundRole && c.status == "failed") return QBrush(QColor(0xb0, 0x20, 0x20));
    if (role == Qt::FontRole && c.checkpoint.step == index_.bestStep) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::ToolTipRole) return QString::fromStdString(c.error.empty() ? c.checkpoint.path : c.error);
    if (role != Qt::DisplayRole && role != kExportRole) return {};
    if (col == Step) return static_cast<qlonglong>(c.checkpoint.step);
    if (col == Status)
        return QString::fromStdString(c.status) + (c.checkpoint.step == index_.bestStep ? QStringLiteral(" (best)") : QString());
    if (col == Tau) return number(c.tau);
    if (col < FirstTree + trees) {
        const auto b = static_cast<std::size_t>(col - FirstTree);
        return number(b < c.treeTaus.size() ? c.treeTaus[b] : NAN);
    }
    switch (col - FirstTree - trees) {
        case 0: return number(c.teacherForcedTau);
        case 1: return number(c.teacherForcedExpected);
        case 2: return number(c.gap);
        case 3: {
            const auto v = loggedAt(c.checkpoint.step);
            if (!v) return role == Qt::DisplayRole ? QVariant(QStringLiteral("-")) : QVariant();
            return role == kExportRole ? QVariant(*v) : QVariant(QString::number(*v, 'g', 4));
        }
        case 4: return role == kExportRole ? QVariant(c.seconds) : QVariant(QString::number(c.seconds, 'f', 1));
        case 5: return QString::fromStdString(c.resultsFile);
        case 6: return QString::fromStdString(c.checkpoint.path);
        case 7: return QString::fromStdString(c.error);
    }
    return {};
}

QVariant TrainingRunModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
    const int trees = static_cast<int>(index_.settings.ddtreeBudgets.size());
    if (section == Step) return tr("step");
    if (section == Status) return tr("status");
    if (section == Tau) return tr("tau");
    if (section < FirstTree + trees)
        return tr("DDTree %1").arg(index_.settings.ddtreeBudgets[static_cast<std::size_t>(section - FirstTree)]);
    const int t = section - FirstTree - trees;
    if (t == 3 && index_.trainerLog) return tr("logged %1").arg(QString::fromStdString(index_.trainerLog->metric));
    return t >= 0 && t < 8 ? tr(kTail[t]) : QVariant();
}

}  // namespace draftscope
