#pragma once
// Table model of the per-position hidden-state statistics of a prompt (one row per position,
// four statistic columns per series).

#include <draftscope/run_types.h>

#include <QAbstractTableModel>
#include <QString>

#include <vector>

namespace draftscope {

/// One per-position statistic of a hidden-state series, computed over the hidden dimension.
enum class HiddenStat { Rms = 0, Mean = 1, Std = 2, MaxAbs = 3 };

/// Number of HiddenStat values (statistic columns per series).
inline constexpr int kHiddenStatCount = 4;

/// Short column label of a statistic: "rms", "mean", "std", "max|x|".
QString hiddenStatLabel(HiddenStat stat);
/// One-sentence definition of a statistic (over the hidden dimension H of one position).
QString hiddenStatDefinition(HiddenStat stat);
/// The [T] values of `stat` in `series` (rms, mean, std or maxAbs).
const std::vector<float>& hiddenStatValues(const HiddenSeriesStats& series, HiddenStat stat);
/// Legend/summary label of a series: "<name> · <layerType>" (just the name without a type).
QString hiddenSeriesLabel(const HiddenSeriesStats& series);

/// Rows are the positions 0..T-1 of the committed sequence (prompt, then generated tokens). Columns: "position", "token", then for each series s, in
/// order, "<s.name> rms", "<s.name> mean", "<s.name> std", "<s.name> max|x|".
/// DisplayRole of a statistic cell is the float value as a double (shortest decimal of the
/// float, so CSV/JSON exports read "0.1", not "0.100000001"); a missing value is an invalid
/// QVariant. ToolTipRole (cells and horizontal headers) explains the statistic. OutlierRole
/// is true for cells of positions in the series' outlierPositions (robust z > 5 on RMS;
/// for the position/token columns: in any series); those cells also get a BackgroundRole.
/// GeneratedRole is true on rows at or after stats.promptLength (generated tokens); rows
/// without an outlier there get a light grey-blue BackgroundRole, and tooltips say "generated".
class HiddenStatsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Role {
        OutlierRole = Qt::UserRole + 1,  ///< bool: this position is an RMS outlier (see above)
        SeriesIndexRole,                 ///< int: series index of the column, -1 for position/token
        StatRole,                        ///< int: HiddenStat of the column, -1 for position/token
        TokenIdRole,                     ///< qlonglong: token id of the row, invalid if unknown
        GeneratedRole,                   ///< bool: the row is a generated (not a prompt) position
    };
    /// Columns before the first series' statistics.
    static constexpr int kFixedColumns = 2;
    static constexpr int kPositionColumn = 0;
    static constexpr int kTokenColumn = 1;

    explicit HiddenStatsModel(QObject* parent = nullptr);

    /// Replaces the statistics (a model reset). T = the longest of stats.ids and every
    /// series' per-position vectors. tokenPieces[p] labels position p; positions without a
    /// piece show "[id]" (or nothing without an id).
    void setStats(const HiddenStateStats& stats, const std::vector<QString>& tokenPieces);
    /// Empties the model (a model reset).
    void clear();

    const HiddenStateStats& stats() const { return stats_; }
    /// Number of positions T (= rowCount()).
    int positionCount() const { return positions_; }
    /// Raw (unescaped) token piece of a position, or "[id]" / "" as described in setStats.
    QString tokenPiece(int position) const;
    /// Number of prompt positions (T when every position is a prompt position).
    int promptLength() const;
    /// True if `position` is a generated position (see HiddenStateStats::promptLength).
    bool isGenerated(int position) const { return stats_.isGenerated(position); }
    /// True if `position` is in series `series`' outlierPositions (any series for series = -1).
    bool isOutlier(int series, int position) const;
    /// Column of (series, stat), or -1 when series is out of range.
    int columnFor(int series, HiddenStat stat) const;
    /// Series index of a column, -1 for the position/token columns or out of range.
    int seriesForColumn(int column) const;
    /// Statistic of a column (only meaningful when seriesForColumn(column) >= 0).
    HiddenStat statForColumn(int column) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    HiddenStateStats stats_;
    std::vector<QString> pieces_;
    std::vector<std::vector<char>> outlier_;  // [series][T]
    std::vector<char> anyOutlier_;            // [T]
    int positions_ = 0;
};

}  // namespace draftscope
