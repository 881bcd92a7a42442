#include "plot_legend.h"

#include "figure_export.h"

#include <qcustomplot.h>

#include <QEvent>

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

namespace {
/// Re-fits the legend rows of the plot it filters on every resize.
class LegendFitter : public QObject {
public:
    LegendFitter(QCustomPlot* plot, int maxPerRow) : QObject(plot), plot_(plot), maxPerRow_(maxPerRow) {}
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == plot_ && event->type() == QEvent::Resize) fitLegendRows(plot_, plot_->width(), maxPerRow_);
        return false;
    }

private:
    QCustomPlot* plot_;
    int maxPerRow_;
};
}  // namespace

void fitLegendRowsOnResize(QCustomPlot* plot, int maxPerRow) { plot->installEventFilter(new LegendFitter(plot, maxPerRow)); }

bool exportPlotFittingLegend(QCustomPlot* plot, const QString& path, QString* error, int width, int height,
                             const QString& title, int maxPerRow) {
    fitLegendRows(plot, width > 0 ? width : plot->width(), maxPerRow);  // legend rows for the export width
    const bool ok = exportPlot(plot, path, error, width, height, title);
    fitLegendRows(plot, plot->width(), maxPerRow);
    return ok;
}

}  // namespace draftscope
