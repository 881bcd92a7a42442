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

    /// A line above the grid and its figure naming the drafter (e.g. "Drafter A: name,
    /// tau 3.1"); empty = none. Used when two drafters are compared.
    void setCaption(const QString& caption);
    QString caption() const { return caption_; }
    /// File base name of the exports (default "block_agreement").
    void setExportName(const QString& name) { exportName_ = name; }

    QString exportName() const override { return exportName_; }
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
    void updateSummary();
    QLabel* summary_;
    QString caption_;
    QString exportName_ = QStringLiteral("block_agreement");
};

}  // namespace draftscope
