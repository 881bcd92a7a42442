#pragma once
// The base of summary-over-plot views (SelectorView, CalibrationView): a selectable,
// word-wrapped summary above a titled QCustomPlot whose legend sits under it, a table model
// beside it, an export menu, and the summary carried into exported figures as their title.

#include "exportable_view.h"

#include <QWidget>

class QCustomPlot;
class QLabel;
class QStandardItemModel;
class QVBoxLayout;

namespace draftscope {

class SummaryPlotView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    QCustomPlot* plot() const { return plot_; }
    QStandardItemModel* table() const { return table_; }
    QString summaryText() const;
    QString exportName() const override { return exportName_; }
    /// The figure at width x height (0: on-screen size), titled summaryFigureTitle().
    bool exportFigure(const QString& path, QString* error, int width = 0, int height = 0);

protected:
    /// `exportName` names the files and the plot object; `title`, the axis labels and the
    /// tooltip describe the plot.
    SummaryPlotView(QWidget* parent, const QString& exportName, const QString& title, const QString& xLabel,
                    const QString& yLabel, const QString& toolTip);
    /// Writes the figure (width x height) and the table as <exportName>.{png,svg,pdf,csv,json}.
    QStringList exportFigureAndTable(const QString& dir, QString* error, int width, int height);
    /// The view's figure title (if any) over its summary lines.
    QString summaryFigureTitle() const;

    QString exportName_;
    QLabel* summary_;
    QCustomPlot* plot_;
    QStandardItemModel* table_;
    QVBoxLayout* layout_;  ///< summary, plot; subclasses may add below
};

}  // namespace draftscope
