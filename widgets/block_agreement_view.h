#pragma once
// The block agreement grid: one row per verify step, one column per block position, each
// cell the drafted piece coloured accepted / rejected / after the cut.

#include "block_agreement_model.h"
#include "exportable_view.h"

#include <QWidget>

class QTableView;
class QLabel;
class QPainter;

namespace draftscope {

class StepSelection;

class BlockAgreementView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    BlockAgreementView(StepSelection* selection, QWidget* parent = nullptr);
    BlockAgreementModel* model() const { return model_; }
    QTableView* table() const { return table_; }

    QString exportName() const override { return "block_agreement"; }
    QStringList exportAll(const QString& dir, QString* error) override;
    /// Writes the whole grid (all rows, not just the visible ones) as png, svg or pdf.
    bool exportFigure(const QString& path, QString* error) const;

    /// Paints the whole grid with its legend at (0,0); returns the size used.
    QSize paintGrid(QPainter* painter) const;
    QSize gridSize() const;

private:
    void onSelectionChanged(int step, int position);
    StepSelection* selection_;
    BlockAgreementModel* model_;
    QTableView* table_;
    QLabel* summary_;
};

}  // namespace draftscope
