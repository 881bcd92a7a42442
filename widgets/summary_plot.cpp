#include "summary_plot.h"

#include "figure_export.h"
#include "plot_legend.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QStandardItemModel>
#include <QVBoxLayout>

namespace draftscope {

SummaryPlotView::SummaryPlotView(QWidget* parent, const QString& exportName, const QString& title,
                                 const QString& xLabel, const QString& yLabel, const QString& toolTip)
    : QWidget(parent),
      exportName_(exportName),
      summary_(new QLabel(this)),
      plot_(new QCustomPlot(this)),
      table_(new QStandardItemModel(this)),
      layout_(new QVBoxLayout(this)) {
    plot_->setObjectName(exportName);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    plot_->setToolTip(toolTip);
    plot_->xAxis->setLabel(xLabel);
    plot_->yAxis->setLabel(yLabel);
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, title));
    plot_->legend->setFont(QFont(font().family(), 8));
    placeLegendBelow(plot_);
    layout_->setContentsMargins(0, 0, 0, 0);
    layout_->addWidget(summary_);
    layout_->addWidget(plot_, 1);
    installExportMenu(
        plot_, exportName, [this](const QString& p, QString* e) { return exportFigure(p, e); }, table_);
}

QString SummaryPlotView::summaryText() const { return summary_->text(); }

QString SummaryPlotView::summaryFigureTitle() const {
    return figureTitle().isEmpty() ? summary_->text() : figureTitle() + '\n' + summary_->text();
}

bool SummaryPlotView::exportFigure(const QString& path, QString* error, int width, int height) {
    return exportPlot(plot_, path, error, width, height, summaryFigureTitle());
}

QStringList SummaryPlotView::exportFigureAndTable(const QString& dir, QString* error, int width, int height) {
    FigureSet set(dir, error);
    set.figure(exportName_, [&](const QString& path, QString* e) { return exportFigure(path, e, width, height); }) &&
        set.table(exportName_, table_);
    return set.written();
}

}  // namespace draftscope
