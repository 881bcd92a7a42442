#pragma once
// Table model of the block agreement grid: rows = verify steps, columns = block positions
// 0..B-1 (0 = anchor, 1..B-1 = drafted tokens).

#include "draftscope/run_types.h"
#include "drafter_comparison.h"

#include <QAbstractTableModel>
#include <QString>

#include <functional>
#include <vector>

namespace draftscope {

/// Status of one cell of the grid.
enum class CellStatus {
    Anchor,    ///< position 0: the committed anchor (the previous step's bonus token)
    Accepted,  ///< drafted token equal to the target's, inside the accepted prefix
    Rejected,  ///< the first drafted token that differs from the target's
    AfterCut,  ///< drafted after the first rejection: never verified against a committed prefix
};

class BlockAgreementModel : public QAbstractTableModel {
    Q_OBJECT
public:
    /// Custom data roles (besides Display, ToolTip, Background, Foreground).
    enum Role {
        StatusRole = Qt::UserRole + 1,  ///< int(CellStatus)
        DraftTokenRole,                 ///< qint64 token id in the cell
        TargetTokenRole,                ///< qint64 target token at that position (-1 for the anchor)
        DraftProbRole,                  ///< float, drafter's probability of its token
        TargetProbRole,                 ///< float, target's probability of the drafted token
        TargetRankRole,                 ///< int, rank of the target's token in the draft top-k, -1 if absent
        AbsolutePositionRole,           ///< qint64 absolute sequence position
        DiffersRole,                    ///< bool, the cell where this run and the compared one part from the same anchor (partingPosition())
    };

    explicit BlockAgreementModel(QObject* parent = nullptr);

    /// Shows `run`. `pieces(tokenId)` gives a token's display text; if empty, ids are shown.
    void setRun(const RunResult& run, std::function<QString(std::int64_t)> pieces = {});
    void clear();
    const RunResult& run() const { return run_; }

    /// Compares with `other`, the other drafter's run on the same prompt (setRun() clears
    /// it): DiffersRole marks the cells cellDiffers() finds, and tooltips say what
    /// `otherName` did at that position. An empty `other` clears the comparison.
    void setComparison(const RunResult& other, const QString& otherName);
    bool hasComparison() const { return !otherDecided_.empty(); }
    /// Number of marked cells.
    int differingCellCount() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static CellStatus statusOf(const VerifyStep& step, int position);
    static QColor colorOf(CellStatus status);

private:
    QString piece(std::int64_t id) const;
    /// DFlash2 runs: a tooltip line saying whether the selector kept the drafter's argmax at
    /// drafted position k of `s` ("" for DFlash runs).
    QString selectorLine(const VerifyStep& s, std::size_t k) const;
    bool differs(int step, int position) const;
    RunResult run_;
    std::function<QString(std::int64_t)> pieces_;
    std::vector<DecidingDraft> otherDecided_;  ///< per absolute position, of the compared run
    std::vector<std::vector<bool>> differs_;   ///< [step][block position]
    QString otherName_;
};

}  // namespace draftscope
