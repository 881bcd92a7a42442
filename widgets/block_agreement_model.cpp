#include "block_agreement_model.h"

#include "figure_export.h"
#include "token_display.h"

#include <QColor>
#include <QFont>

namespace draftscope {

BlockAgreementModel::BlockAgreementModel(QObject* parent) : QAbstractTableModel(parent) {}

void BlockAgreementModel::setRun(const RunResult& run, std::function<QString(std::int64_t)> pieces) {
    beginResetModel();
    run_ = run;
    pieces_ = std::move(pieces);
    otherDecided_.clear();
    differs_.clear();
    otherName_.clear();
    endResetModel();
}

void BlockAgreementModel::clear() { setRun(RunResult{}, pieces_); }

void BlockAgreementModel::setComparison(const RunResult& other, const QString& otherName) {
    beginResetModel();
    otherDecided_ = other.steps.empty() ? std::vector<DecidingDraft>{} : decidingDrafts(other);
    otherName_ = otherName;
    differs_.assign(run_.steps.size(), {});
    if (!otherDecided_.empty())
        for (std::size_t s = 0; s < run_.steps.size(); ++s) {
            differs_[s].assign(static_cast<std::size_t>(run_.blockSize), false);
            for (int j = 1; j < run_.blockSize; ++j)
                differs_[s][static_cast<std::size_t>(j)] = cellDiffers(run_, other, static_cast<int>(s), j);
        }
    endResetModel();
}

bool BlockAgreementModel::differs(int step, int j) const {
    const auto s = static_cast<std::size_t>(step);
    return s < differs_.size() && static_cast<std::size_t>(j) < differs_[s].size() && differs_[s][static_cast<std::size_t>(j)];
}

int BlockAgreementModel::differingCellCount() const {
    int n = 0;
    for (const auto& row : differs_)
        for (bool b : row) n += b;
    return n;
}

int BlockAgreementModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(run_.steps.size());
}

int BlockAgreementModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() || run_.steps.empty() ? 0 : static_cast<int>(run_.blockSize);
}

CellStatus BlockAgreementModel::statusOf(const VerifyStep& s, int j) {
    if (j == 0) return CellStatus::Anchor;
    if (j <= s.acceptedCount) return CellStatus::Accepted;
    if (j == s.acceptedCount + 1) return CellStatus::Rejected;
    return CellStatus::AfterCut;
}

QColor BlockAgreementModel::colorOf(CellStatus st) {
    switch (st) {
        case CellStatus::Anchor: return QColor(0xd6, 0xe4, 0xf5);
        case CellStatus::Accepted: return QColor(0xb7, 0xe4, 0xb0);
        case CellStatus::Rejected: return QColor(0xf4, 0xa6, 0xa0);
        case CellStatus::AfterCut: return QColor(0xee, 0xee, 0xee);
    }
    return Qt::white;
}

QString BlockAgreementModel::piece(std::int64_t id) const {
    return pieces_ ? pieces_(id) : QStringLiteral("#%1").arg(id);
}

QVariant BlockAgreementModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
    const auto& s = run_.steps[static_cast<std::size_t>(index.row())];
    const int j = index.column();
    if (j > static_cast<int>(s.drafted.size())) return {};  // past a clipped last block (current loop)
    const auto st = statusOf(s, j);
    const std::int64_t token = j == 0 ? s.anchor : s.drafted[static_cast<std::size_t>(j - 1)];
    const std::size_t k = static_cast<std::size_t>(j - 1);
    switch (role) {
        case Qt::DisplayRole: return displayPiece(piece(token));
        case kExportRole: return piece(token);
        case Qt::BackgroundRole: return colorOf(st);
        case Qt::ForegroundRole: return st == CellStatus::AfterCut ? QColor(0x80, 0x80, 0x80) : QColor(Qt::black);
        case StatusRole: return static_cast<int>(st);
        case DraftTokenRole: return static_cast<qint64>(token);
        case TargetTokenRole: return j == 0 ? qint64(-1) : static_cast<qint64>(s.targetTokens[k]);
        case DraftProbRole: return j == 0 ? QVariant() : QVariant(s.draftProb[k]);
        case TargetProbRole: return j == 0 ? QVariant() : QVariant(s.targetProbOfDraft[k]);
        case TargetRankRole: return j == 0 ? QVariant() : QVariant(s.targetRankInDraft[k]);
        case AbsolutePositionRole: return static_cast<qint64>(s.start + j);
        case DiffersRole: return differs(index.row(), j);
        case Qt::ToolTipRole: {
            if (j == 0)
                return tr("Step %1, block position 0 (absolute %2): anchor '%3' (id %4)\n"
                          "The anchor is the target's own token: the bonus token of the previous step, or for "
                          "the first step the target's prediction after the prompt (prefill).")
                    .arg(index.row() + 1).arg(s.start).arg(displayPiece(piece(token))).arg(token);
            const char* what = st == CellStatus::Accepted ? "accepted"
                               : st == CellStatus::Rejected ? "rejected (first mismatch)"
                                                            : "after the cut (not committed; the target's token and "
                                                              "probabilities here are conditioned on the rejected prefix)";
            const int rank = s.targetRankInDraft[k];
            QString other;
            const auto pos = static_cast<std::size_t>(s.start + j);
            if (hasComparison() && pos < otherDecided_.size() && otherDecided_[pos].step >= 0) {
                const auto& o = otherDecided_[pos];
                other = o.accepted ? tr("\n%1: accepted '%2' at its step %3").arg(otherName_, displayPiece(piece(o.drafted))).arg(o.step + 1)
                        : o.drafted < 0 ? tr("\n%1: no draft here (bonus token of its step %2)").arg(otherName_).arg(o.step + 1)
                                        : tr("\n%1: drafted '%2', rejected at its step %3 (bonus token)")
                                              .arg(otherName_, displayPiece(piece(o.drafted))).arg(o.step + 1);
                if (differs(index.row(), j))
                    other += tr("\n[the drafters part here: from the same anchor, one drafted the target's token and "
                                "the other did not]");
            }
            return tr("Step %1, block position %2 (absolute %3): %4\n"
                      "drafted '%5' (id %6), drafter probability %7\n"
                      "target token '%8' (id %9), target probability of the drafted token %10,\n"
                      "of its own token %11\n"
                      "target token's rank in the draft top-%12: %13")
                .arg(index.row() + 1).arg(j).arg(s.start + j).arg(what)
                .arg(displayPiece(piece(token))).arg(token).arg(s.draftProb[k], 0, 'f', 4)
                .arg(displayPiece(piece(s.targetTokens[k]))).arg(s.targetTokens[k]).arg(s.targetProbOfDraft[k], 0, 'f', 4)
                .arg(s.targetProbOfTarget[k], 0, 'f', 4)
                .arg(s.draftTopIds.empty() ? 0 : static_cast<int>(s.draftTopIds[k].size()))
                .arg(rank < 0 ? tr("not in the top-k") : QString::number(rank)) + selectorLine(s, k) + other;
        }
        default: return {};
    }
}

QString BlockAgreementModel::selectorLine(const VerifyStep& s, std::size_t k) const {
    if (k >= s.drafterArgmax.size()) return {};
    const auto argmax = s.drafterArgmax[k];
    const QString p = k < s.selectorProb.size() ? QString::number(s.selectorProb[k], 'f', 4) : QStringLiteral("?");
    // DFlash2's selector or DSpark's Markov walk (a DSpark step may carry its confidence).
    const QString confidence = k < s.confidence.size()
                                   ? tr("; confidence head %1").arg(static_cast<double>(s.confidence[k]), 0, 'f', 3)
                                   : QString();
    if (argmax == s.drafted[k])
        return tr("\nSelector / Markov walk: kept the drafter's argmax (probability %1%2)").arg(p, confidence);
    return tr("\nSelector / Markov walk: chose this over the drafter's argmax '%1' (id %2; probability %3%4)")
        .arg(displayPiece(piece(argmax))).arg(argmax).arg(p, confidence);
}

QVariant BlockAgreementModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Horizontal) {
        if (role == Qt::DisplayRole) return section == 0 ? tr("anchor") : QString::number(section);
        if (role == Qt::ToolTipRole)
            return section == 0 ? tr("Block position 0: the anchor") : tr("Block position %1: drafted token %1").arg(section);
        return {};
    }
    if (section < 0 || section >= rowCount()) return {};
    const auto& s = run_.steps[static_cast<std::size_t>(section)];
    if (role == Qt::DisplayRole) return tr("%1  @%2  len %3").arg(section + 1).arg(s.start).arg(s.acceptanceLength());
    if (role == Qt::ToolTipRole)
        return tr("Verify step %1 at absolute position %2: %3 of %4 drafted tokens accepted; acceptance length %5 "
                  "(accepted + bonus token)")
            .arg(section + 1).arg(s.start).arg(s.acceptedCount).arg(s.drafted.size()).arg(s.acceptanceLength());
    return {};
}

}  // namespace draftscope
