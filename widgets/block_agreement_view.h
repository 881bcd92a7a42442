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

    /// Cell zoom: 1 fits every block position into the view's width (compact cells, at
    /// least kMinCellWidth px; wider cells up to the export's width when there is room);
    /// > 1 widens the cells by that factor (up to 4), with a horizontal scrollbar. Ctrl+wheel
    /// and the -, +, Fit buttons change it.
    void setZoom(double zoom);
    double zoom() const { return zoom_; }
    static constexpr int kMinCellWidth = 26;
    /// The anchor column (with the step headers) kept in view while the grid is scrolled
    /// horizontally: an overlay shown only then.
    QTableView* frozenAnchorView() const { return frozen_; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void updateColumnWidths();
    void updateFrozenAnchor();
    QTableView* frozen_;
    double zoom_ = 1.0;
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
