#include "matrix_table_model.h"

#include "figure_export.h"

namespace draftscope {

MatrixTableModel::MatrixTableModel(const QString& firstHeader, QObject* parent)
    : QAbstractTableModel(parent), firstHeader_(firstHeader) {}

void MatrixTableModel::setMatrix(const QStringList& rowLabels, const QStringList& exportRowLabels,
                                 const QStringList& columnHeaders, std::vector<double> values, bool integral) {
    beginResetModel();
    rowLabels_ = rowLabels;
    exportRowLabels_ = exportRowLabels.isEmpty() ? rowLabels : exportRowLabels;
    columnHeaders_ = columnHeaders;
    values_ = std::move(values);
    integral_ = integral;
    endResetModel();
}

void MatrixTableModel::clear() { setMatrix({}, {}, {}, {}, integral_); }

int MatrixTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || columnHeaders_.isEmpty() ? 0 : static_cast<int>(rowLabels_.size());
}

int MatrixTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() || rowLabels_.isEmpty() ? 0 : static_cast<int>(columnHeaders_.size() + 1);
}

QVariant MatrixTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    if (index.column() == 0 && role == kExportRole) return exportRowLabels_.value(index.row());
    if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
    if (index.column() == 0) return rowLabels_.value(index.row());
    const double v = values_[static_cast<std::size_t>(index.row()) * columnHeaders_.size() + index.column() - 1];
    return integral_ ? QVariant(static_cast<int>(v)) : QVariant(v);
}

QVariant MatrixTableModel::headerData(int section, Qt::Orientation o, int role) const {
    if (role != Qt::DisplayRole) return {};
    if (o == Qt::Vertical) return section;
    return section == 0 ? firstHeader_ : columnHeaders_.value(section - 1);
}

}  // namespace draftscope
