#include "plot_legend.h"

#include "figure_export.h"

#include <qcustomplot.h>

#include <algorithm>

namespace draftscope {

void placeLegendBelow(QCustomPlot* plot, int row) {
    QCPLegend* legend = plot->legend;
    legend->setVisible(true);
    plot->axisRect()->insetLayout()->take(legend);
    plot->plotLayout()->addElement(row, 0, legend);
    plot->plotLayout()->setRowStretchFactor(row, 0.001);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    legend->setBorderPen(Qt::NoPen);
    legend->setMargins(QMargins(4, 0, 4, 2));
}

void fitLegendRows(QCustomPlot* plot, int width, int maxPerRow) {
    QCPLegend* legend = plot->legend;
    int widest = 1;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i)) widest = std::max(widest, item->minimumOuterSizeHint().width());
    const int available = width - legend->margins().left() - legend->margins().right() - 8;
    const int wrap = std::clamp((available + legend->columnSpacing()) / (widest + legend->columnSpacing()), 1, maxPerRow);
    if (wrap != legend->wrap()) {
        legend->setWrap(wrap);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // re-flows the entries
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

bool exportPlotFittingLegend(QCustomPlot* plot, const QString& path, QString* error, int width, int height,
                             const QString& title, int maxPerRow) {
    fitLegendRows(plot, width > 0 ? width : plot->width(), maxPerRow);  // legend rows for the export width
    const bool ok = exportPlot(plot, path, error, width, height, title);
    fitLegendRows(plot, plot->width(), maxPerRow);
    return ok;
}

}  // namespace draftscope
