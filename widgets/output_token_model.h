#pragma once
// Table model of the committed output: one row per token with where it came from.

#include "draftscope/run_types.h"
#include "drafter_comparison.h"

#include <QAbstractTableModel>
#include <QColor>

#include <vector>

namespace draftscope {

/// Where a committed token came from.
enum class TokenOrigin {
    Prompt,          ///< part of the prompt
    AcceptedDraft,   ///< a drafted token the target accepted
    Bonus,           ///< the target's own token committed at the end of a step (includes the first anchor)
};

/// Rows = output tokens (prompt + generated). Columns: index, token id, piece, origin, step.
class OutputTokenModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { IndexColumn, TokenColumn, PieceColumn, OriginColumn, StepColumn, ColumnCount };
    /// AcceptedByColumn exists only while a comparison is set (setAcceptedBy()).
    enum Column2 { AcceptedByColumn = ColumnCount };
    enum Role { OriginRole = Qt::UserRole + 1, StepRole, AcceptedByRole };

    explicit OutputTokenModel(QObject* parent = nullptr);
    /// `pieces[i]` is the display text of run.outputIds[i] (may be shorter: ids are shown).
    void setRun(const RunResult& run, const std::vector<QString>& pieces);
    void clear();
    /// Which drafter accepted each token (acceptedBy() of this run and the compared run),
    /// shown in an extra column "accepted_by"; empty = no comparison. setRun() clears it.
    void setAcceptedBy(const std::vector<AcceptedBy>& acceptedBy);
    bool hasComparison() const { return !acceptedBy_.empty(); }
    AcceptedBy acceptedByOf(int tokenIndex) const;

    /// Verify step (0-based) that committed token i, -1 for prompt tokens and the first
    /// anchor, which the prefill committed.
    int stepOf(int tokenIndex) const;
    TokenOrigin originOf(int tokenIndex) const;
    QString pieceOf(int tokenIndex) const;
    static QColor colorOf(TokenOrigin origin);
    static QString nameOf(TokenOrigin origin);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        std::int64_t token;
        TokenOrigin origin;
        int step;
    };
    std::vector<Row> rows_;
    std::vector<QString> pieces_;
    std::vector<AcceptedBy> acceptedBy_;
};

}  // namespace draftscope
