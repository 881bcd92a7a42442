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

namespace {
/// Entries per legend row for a plot `width` pixels wide: as many as the widest fits.
int legendWrapFor(QCPLegend* legend, int width, int maxPerRow) {
    int widest = 1;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i)) widest = std::max(widest, item->minimumOuterSizeHint().width());
    const int available = width - legend->margins().left() - legend->margins().right() - 8;
    return std::clamp((available + legend->columnSpacing()) / (widest + legend->columnSpacing()), 1, maxPerRow);
}
}  // namespace

int legendHeightFor(QCustomPlot* plot, int width, int maxPerRow) {
    QCPLegend* legend = plot->legend;
    const int count = legend->itemCount();
    if (count == 0 || !legend->visible()) return 0;
    int tallest = 1;
    for (int i = 0; i < count; ++i)
        if (QCPAbstractLegendItem* item = legend->item(i)) tallest = std::max(tallest, item->minimumOuterSizeHint().height());
    const int wrap = legendWrapFor(legend, width, maxPerRow);
    const int rows = (count + wrap - 1) / wrap;
    return rows * tallest + (rows - 1) * legend->rowSpacing() + legend->margins().top() + legend->margins().bottom();
}

void fitLegendRows(QCustomPlot* plot, int width, int maxPerRow) {
    QCPLegend* legend = plot->legend;
    const int wrap = legendWrapFor(legend, width, maxPerRow);
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
    LegendFitter(QCustomPlot* plot, int maxPerRow, std::function<int()> contentHeight)
        : QObject(plot), plot_(plot), maxPerRow_(maxPerRow), contentHeight_(std::move(contentHeight)) {}
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == plot_ && event->type() == QEvent::Resize) {
            fitLegendRows(plot_, plot_->width(), maxPerRow_);
            if (contentHeight_) {
                const int need = contentHeight_() + legendHeightFor(plot_, plot_->width(), maxPerRow_);
                if (need != plot_->minimumHeight()) plot_->setMinimumHeight(need);
            }
        }
        return false;
    }

private:
    QCustomPlot* plot_;
    int maxPerRow_;
    std::function<int()> contentHeight_;
};
}  // namespace

void fitLegendRowsOnResize(QCustomPlot* plot, int maxPerRow, std::function<int()> contentHeight) {
    plot->installEventFilter(new LegendFitter(plot, maxPerRow, std::move(contentHeight)));
}

bool exportPlotFittingLegend(QCustomPlot* plot, const QString& path, QString* error, int width, int height,
                             const QString& title, int maxPerRow) {
    fitLegendRows(plot, width > 0 ? width : plot->width(), maxPerRow);  // legend rows for the export width
    const bool ok = exportPlot(plot, path, error, width, height, title);
    fitLegendRows(plot, plot->width(), maxPerRow);
    return ok;
}

}  // namespace draftscope
