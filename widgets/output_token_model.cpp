#include "output_token_model.h"

namespace draftscope {

OutputTokenModel::OutputTokenModel(QObject* parent) : QAbstractTableModel(parent) {}

void OutputTokenModel::setRun(const RunResult& run, const std::vector<QString>& pieces) {
    beginResetModel();
    rows_.clear();
    acceptedBy_.clear();
    pieces_ = pieces;
    const auto P = run.promptIds.size();
    for (std::size_t i = 0; i < run.outputIds.size(); ++i)
        rows_.push_back({run.outputIds[i], i < P ? TokenOrigin::Prompt : TokenOrigin::Bonus, -1});
    // The prefill commits the first anchor (index P); step s commits positions
    // start+1 .. start+acc (accepted drafts) and start+acc+1 (its bonus token).
    for (std::size_t s = 0; s < run.steps.size(); ++s) {
        const auto& st = run.steps[s];
        for (int j = 1; j <= st.acceptedCount + 1; ++j) {
            const auto pos = static_cast<std::size_t>(st.start + j);
            if (pos >= rows_.size()) break;
            rows_[pos].origin = j <= st.acceptedCount ? TokenOrigin::AcceptedDraft : TokenOrigin::Bonus;
            rows_[pos].step = static_cast<int>(s);
        }
    }
    endResetModel();
}

void OutputTokenModel::clear() {
    beginResetModel();
    rows_.clear();
    pieces_.clear();
    acceptedBy_.clear();
    endResetModel();
}

void OutputTokenModel::setAcceptedBy(const std::vector<AcceptedBy>& acceptedBy) {
    beginResetModel();
    acceptedBy_ = acceptedBy;
    acceptedBy_.resize(acceptedBy.empty() ? 0 : rows_.size(), AcceptedBy::Prompt);
    endResetModel();
}

AcceptedBy OutputTokenModel::acceptedByOf(int i) const {
    const auto k = static_cast<std::size_t>(i);
    return k < acceptedBy_.size() ? acceptedBy_[k] : AcceptedBy::Prompt;
}

int OutputTokenModel::stepOf(int i) const { return i >= 0 && i < rowCount() ? rows_[static_cast<std::size_t>(i)].step : -1; }
TokenOrigin OutputTokenModel::originOf(int i) const { return rows_.at(static_cast<std::size_t>(i)).origin; }
QString OutputTokenModel::pieceOf(int i) const {
    const auto k = static_cast<std::size_t>(i);
    return k < pieces_.size() ? pieces_[k] : QStringLiteral("#%1").arg(rows_.at(k).token);
}

QColor OutputTokenModel::colorOf(TokenOrigin o) {
    switch (o) {
        case TokenOrigin::Prompt: return QColor(0xe4, 0xe4, 0xe4);
        case TokenOrigin::AcceptedDraft: return QColor(0xb7, 0xe4, 0xb0);
        case TokenOrigin::Bonus: return QColor(0xfd, 0xd8, 0x9c);
    }
    return Qt::white;
}

QString OutputTokenModel::nameOf(TokenOrigin o) {
    switch (o) {
        case TokenOrigin::Prompt: return tr("prompt");
        case TokenOrigin::AcceptedDraft: return tr("accepted draft");
        case TokenOrigin::Bonus: return tr("bonus (target)");
    }
    return {};
}

int OutputTokenModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int OutputTokenModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount + (hasComparison() ? 1 : 0);
}

QVariant OutputTokenModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
    const auto& r = rows_[static_cast<std::size_t>(index.row())];
    if (role == OriginRole) return static_cast<int>(r.origin);
    if (role == AcceptedByRole) return hasComparison() ? QVariant(static_cast<int>(acceptedByOf(index.row()))) : QVariant();
    if (role == StepRole) return r.step;
    if (role == Qt::BackgroundRole) return colorOf(r.origin);
    if (role == Qt::ToolTipRole)
        return tr("token %1 (id %2) '%3': %4%5").arg(index.row()).arg(r.token).arg(pieceOf(index.row()), nameOf(r.origin))
            .arg(r.step >= 0 ? tr(", committed by verify step %1").arg(r.step + 1) : QString());
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
        case IndexColumn: return index.row();
        case TokenColumn: return static_cast<qint64>(r.token);
        case PieceColumn: return pieceOf(index.row());
        case OriginColumn: return nameOf(r.origin);
        case StepColumn: return r.step >= 0 ? QVariant(r.step + 1) : QVariant(QString());
        case AcceptedByColumn: return draftscope::nameOf(acceptedByOf(index.row()));
    }
    return {};
}

QVariant OutputTokenModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case IndexColumn: return tr("index");
        case TokenColumn: return tr("token_id");
        case PieceColumn: return tr("piece");
        case OriginColumn: return tr("origin");
        case StepColumn: return tr("step");
        case AcceptedByColumn: return hasComparison() ? tr("accepted_by") : QVariant();
    }
    return {};
}

}  // namespace draftscope
