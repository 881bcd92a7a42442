#pragma once
// The table of a matrix view (MaskView, AttentionView): what their CSV/JSON exports write.

#include <QAbstractTableModel>
#include <QStringList>

#include <vector>

namespace draftscope {

/// A rows x cols matrix as a table: column 0, headed `firstHeader` (e.g. "query"), holds the
/// row labels, then one column per matrix column headed by its label. Cell (r, c + 1) =
/// values[r * cols + c], as an int when the matrix is integral (mask visibility codes), else
/// a double. A row label's exported text (kExportRole) can differ from the shown one (raw
/// token pieces vs whitespace glyphs). Vertical headers are the row indices.
class MatrixTableModel : public QAbstractTableModel {
public:
    explicit MatrixTableModel(const QString& firstHeader, QObject* parent = nullptr);
    /// Replaces the matrix. `rowLabels` and `exportRowLabels` (empty = the same) have one
    /// entry per row, `columnHeaders` one per column; values.size() == rows * cols.
    void setMatrix(const QStringList& rowLabels, const QStringList& exportRowLabels, const QStringList& columnHeaders,
                   std::vector<double> values, bool integral);
    /// Shows no rows and no columns.
    void clear();

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    QString firstHeader_;
    QStringList rowLabels_, exportRowLabels_, columnHeaders_;
    std::vector<double> values_;
    bool integral_ = false;
};

}  // namespace draftscope
