#include "hidden_stats_model.h"

#include "figure_export.h"
#include "token_display.h"

#include <QBrush>
#include <QColor>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace draftscope {

namespace {

/// The float's shortest round-trip decimal, read back as a double (0.1f -> 0.1, not 0.100000001).
double shortestDouble(float v) {
    if (!std::isfinite(v)) return static_cast<double>(v);
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof(buf) - 1, v);
    if (res.ec != std::errc()) return static_cast<double>(v);
    *res.ptr = '\0';
    return std::strtod(buf, nullptr);
}

const QColor kOutlierBackground(255, 208, 208);
const QColor kGeneratedBackground(228, 236, 246);  // generated positions (drafting happens there)

}  // namespace

QString hiddenStatLabel(HiddenStat stat) {
    switch (stat) {
    case HiddenStat::Rms: return QStringLiteral("rms");
    case HiddenStat::Mean: return QStringLiteral("mean");
    case HiddenStat::Std: return QStringLiteral("std");
    case HiddenStat::MaxAbs: return QStringLiteral("max|x|");
    }
    return {};
}

QString hiddenStatDefinition(HiddenStat stat) {
    switch (stat) {
    case HiddenStat::Rms:
        return QStringLiteral("Root mean square over the hidden dimension of this position: sqrt(Σₕ xₕ² / H).");
    case HiddenStat::Mean:
        return QStringLiteral("Mean over the hidden dimension of this position: Σₕ xₕ / H.");
    case HiddenStat::Std:
        return QStringLiteral("Standard deviation (population, 1/H) over the hidden dimension of this position: "
                              "sqrt(Σₕ (xₕ − mean)² / H).");
    case HiddenStat::MaxAbs:
        return QStringLiteral("Largest magnitude over the hidden dimension of this position: maxₕ |xₕ|.");
    }
    return {};
}

const std::vector<float>& hiddenStatValues(const HiddenSeriesStats& series, HiddenStat stat) {
    switch (stat) {
    case HiddenStat::Rms: return series.rms;
    case HiddenStat::Mean: return series.mean;
    case HiddenStat::Std: return series.std;
    case HiddenStat::MaxAbs: return series.maxAbs;
    }
    return series.rms;
}

QString hiddenSeriesLabel(const HiddenSeriesStats& series) {
    const QString name = QString::fromStdString(series.name);
    if (series.layerType.empty()) return name;
    return name + QStringLiteral(" · ") + QString::fromStdString(series.layerType);
}

HiddenStatsModel::HiddenStatsModel(QObject* parent) : QAbstractTableModel(parent) {}

void HiddenStatsModel::setStats(const HiddenStateStats& stats, const std::vector<QString>& tokenPieces) {
    beginResetModel();
    stats_ = stats;
    pieces_ = tokenPieces;
    std::size_t t = stats_.ids.size();
    for (const auto& s : stats_.series)
        t = std::max({t, s.rms.size(), s.mean.size(), s.std.size(), s.maxAbs.size()});
    positions_ = static_cast<int>(t);
    outlier_.assign(stats_.series.size(), std::vector<char>(t, 0));
    anyOutlier_.assign(t, 0);
    for (std::size_t si = 0; si < stats_.series.size(); ++si) {
        for (std::int64_t p : stats_.series[si].outlierPositions) {
            if (p < 0 || p >= static_cast<std::int64_t>(t)) continue;
            outlier_[si][static_cast<std::size_t>(p)] = 1;
            anyOutlier_[static_cast<std::size_t>(p)] = 1;
        }
    }
    endResetModel();
}

void HiddenStatsModel::clear() { setStats({}, {}); }

QString HiddenStatsModel::tokenPiece(int position) const {
    if (position < 0 || position >= positions_) return {};
    const auto p = static_cast<std::size_t>(position);
    if (p < pieces_.size()) return pieces_[p];
    if (p < stats_.ids.size()) return QStringLiteral("[%1]").arg(stats_.ids[p]);
    return {};
}

int HiddenStatsModel::promptLength() const {
    return stats_.promptLength < 0 ? positions_ : static_cast<int>(std::min<std::int64_t>(stats_.promptLength, positions_));
}

bool HiddenStatsModel::isOutlier(int series, int position) const {
    if (position < 0 || position >= positions_) return false;
    const auto p = static_cast<std::size_t>(position);
    if (series < 0) return anyOutlier_[p] != 0;
    if (series >= static_cast<int>(outlier_.size())) return false;
    return outlier_[static_cast<std::size_t>(series)][p] != 0;
}

int HiddenStatsModel::columnFor(int series, HiddenStat stat) const {
    if (series < 0 || series >= static_cast<int>(stats_.series.size())) return -1;
    return kFixedColumns + series * kHiddenStatCount + static_cast<int>(stat);
}

int HiddenStatsModel::seriesForColumn(int column) const {
    if (column < kFixedColumns || column >= columnCount()) return -1;
    return (column - kFixedColumns) / kHiddenStatCount;
}

HiddenStat HiddenStatsModel::statForColumn(int column) const {
    if (column < kFixedColumns) return HiddenStat::Rms;
    return static_cast<HiddenStat>((column - kFixedColumns) % kHiddenStatCount);
}

int HiddenStatsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : positions_; }

int HiddenStatsModel::columnCount(const QModelIndex& parent) const {
    if (parent.isValid()) return 0;
    return kFixedColumns + static_cast<int>(stats_.series.size()) * kHiddenStatCount;
}

QVariant HiddenStatsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.parent().isValid() || index.row() >= positions_ || index.column() >= columnCount())
        return {};
    const int row = index.row(), col = index.column();
    const auto p = static_cast<std::size_t>(row);
    const int si = seriesForColumn(col);

    if (role == SeriesIndexRole) return si;
    if (role == StatRole) return si < 0 ? -1 : static_cast<int>(statForColumn(col));
    if (role == TokenIdRole) return p < stats_.ids.size() ? QVariant(qlonglong(stats_.ids[p])) : QVariant();
    if (role == OutlierRole) return isOutlier(si, row);
    if (role == GeneratedRole) return stats_.isGenerated(row);
    if (role == Qt::BackgroundRole)
        return isOutlier(si, row)               ? QVariant(QBrush(kOutlierBackground))
               : stats_.isGenerated(row) ? QVariant(QBrush(kGeneratedBackground))
                                                : QVariant();
    if (role == Qt::TextAlignmentRole)
        return col == kTokenColumn ? QVariant(int(Qt::AlignLeft | Qt::AlignVCenter))
                                   : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));

    if (si < 0) {
        if (role == Qt::DisplayRole) return col == kPositionColumn ? QVariant(row) : QVariant(displayPiece(tokenPiece(row)));
        if (role == kExportRole && col == kTokenColumn) return tokenPiece(row);  // the raw text
        if (role == Qt::ToolTipRole) {
            QString tip = QStringLiteral("position %1 (%2)").arg(row).arg(stats_.isGenerated(row) ? "generated" : "prompt");
            if (p < stats_.ids.size()) tip += QStringLiteral(", token id %1").arg(stats_.ids[p]);
            if (p < pieces_.size()) tip += QStringLiteral(", piece \"%1\"").arg(displayPiece(pieces_[p]));
            QStringList in;
            for (std::size_t s = 0; s < stats_.series.size(); ++s)
                if (outlier_[s][p]) in << QString::fromStdString(stats_.series[s].name);
            if (!in.isEmpty())
                tip += QStringLiteral("\nRMS outlier (robust z > 5) in: ") + in.join(QStringLiteral(", "));
            return tip;
        }
        return {};
    }

    const auto& series = stats_.series[static_cast<std::size_t>(si)];
    const HiddenStat stat = statForColumn(col);
    const auto& values = hiddenStatValues(series, stat);
    const bool has = p < values.size();
    if (role == Qt::DisplayRole) return has ? QVariant(shortestDouble(values[p])) : QVariant();
    if (role == Qt::ToolTipRole) {
        QString tip = hiddenSeriesLabel(series);
        if (series.layerId >= 0) tip += QStringLiteral(" (target layer id %1)").arg(series.layerId);
        tip += QStringLiteral("\n%1 at %2 position %3").arg(hiddenStatLabel(stat))
                   .arg(stats_.isGenerated(row) ? QStringLiteral("generated") : QStringLiteral("prompt")).arg(row);
        const QString piece = tokenPiece(row);
        if (!piece.isEmpty()) tip += QStringLiteral(" (\"%1\")").arg(displayPiece(piece));
        tip += has ? QStringLiteral(" = %1").arg(static_cast<double>(values[p]), 0, 'g', 7)
                   : QStringLiteral(": no value");
        tip += QLatin1Char('\n') + hiddenStatDefinition(stat);
        if (isOutlier(si, row))
            tip += QStringLiteral("\nRMS outlier: RMS > median + 5 · 1.4826 · MAD of this series' RMS (robust z > 5).");
        return tip;
    }
    return {};
}

QVariant HiddenStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return QAbstractTableModel::headerData(section, orientation, role);
    if (section < 0 || section >= columnCount()) return {};
    const int si = seriesForColumn(section);
    if (role == Qt::DisplayRole) {
        if (section == kPositionColumn) return QStringLiteral("position");
        if (section == kTokenColumn) return QStringLiteral("token");
        return QString::fromStdString(stats_.series[static_cast<std::size_t>(si)].name) + QLatin1Char(' ') +
               hiddenStatLabel(statForColumn(section));
    }
    if (role == Qt::ToolTipRole) {
        if (section == kPositionColumn) return QStringLiteral("Position (0-based) in the committed sequence; shaded rows are generated tokens, the rest the prompt.");
        if (section == kTokenColumn) return QStringLiteral("Token piece at this position. %1.").arg(whitespaceLegend());
        const auto& series = stats_.series[static_cast<std::size_t>(si)];
        QString tip = hiddenSeriesLabel(series);
        if (series.layerId >= 0) tip += QStringLiteral(" (target layer id %1)").arg(series.layerId);
        tip += QLatin1Char('\n') + hiddenStatDefinition(statForColumn(section));
        tip += QStringLiteral("\nRed cells: RMS outliers of this series (robust z > 5).");
        return tip;
    }
    return {};
}

}  // namespace draftscope
