#include "heatmap_plot.h"

#include "figure_export.h"

#include <QLabel>

#include <algorithm>
#include <cmath>

namespace draftscope {

namespace {

const QColor kSeparator(120, 120, 120);
const QColor kHatchFill(96, 96, 96, 110);  ///< translucent grey over a hatched cell
const QColor kHatchLine(40, 40, 40, 200);  ///< its diagonal hatch lines
constexpr double kHatchSpacing = 6.0;      ///< pixels between hatch lines

/// Cell centres at 0..n-1. QCPColorMap pads by half a cell only when n > 1, so a single
/// cell gets the range [-0.5, 0.5] to keep its width.
QCPRange cellRange(int n) { return n == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, double(n - 1)); }

}  // namespace

std::vector<int> thinnedTicks(int count, double lower, double upper, int pixels) {
    std::vector<int> ticks;
    if (count <= 0) return ticks;
    const int first = std::clamp(static_cast<int>(std::ceil(lower)), 0, count - 1);
    const int last = std::clamp(static_cast<int>(std::floor(upper)), 0, count - 1);
    const int visible = std::max(1, last - first + 1);
    const int room = pixels > 60 ? std::max(4, pixels / 13) : 48;
    const int step = std::max(1, (visible + room - 1) / room);
    for (int i = 0; i < count; i += step) ticks.push_back(i);
    return ticks;
}

std::vector<HatchRun> hatchRuns(const std::vector<std::uint8_t>& hatched, int rows, int cols) {
    std::vector<HatchRun> runs;
    if (hatched.size() < static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols)) return runs;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            if (!hatched[static_cast<std::size_t>(r) * cols + c]) continue;
            const int c0 = c;
            while (c + 1 < cols && hatched[static_cast<std::size_t>(r) * cols + c + 1]) ++c;
            runs.push_back({r, c0, c});
        }
    return runs;
}

QLabel* newErrorLabel(QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName("errorLabel");
    label->setStyleSheet("QLabel { color: #b00020; font-weight: bold; }");
    label->setWordWrap(true);
    label->hide();
    return label;
}

void showErrorText(QLabel* label, const QString& text) {
    label->setText(text);
    label->setVisible(!text.isEmpty());
}

/// Shades and hatches the hatched cells over the colour map. QCustomPlot draws it in every
/// replot and in every export (PNG, SVG and PDF all go through draw()). It draws only filled
/// rectangles and line segments computed inside the axis rect, so the figure needs neither
/// a clip path nor a pattern brush (which SVG output does not carry reliably).
class HeatmapPlot::Hatching : public QCPLayerable {
public:
    explicit Hatching(QCustomPlot* plot) : QCPLayerable(plot) {}
    void setRuns(std::vector<HatchRun> runs) { runs_ = std::move(runs); }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override {
        applyAntialiasingHint(painter, false, QCP::aeOther);
    }
    QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }
    void draw(QCPPainter* painter) override {
        if (runs_.empty()) return;
        QCPAxis* x = parentPlot()->xAxis;
        QCPAxis* y = parentPlot()->yAxis;
        const QRectF area = parentPlot()->axisRect()->rect();
        QPen hatch(kHatchLine, 1);
        hatch.setCosmetic(true);
        for (const HatchRun& r : runs_) {
            const QRectF cell = QRectF(QPointF(x->coordToPixel(r.first - 0.5), y->coordToPixel(r.row - 0.5)),
                                       QPointF(x->coordToPixel(r.last + 0.5), y->coordToPixel(r.row + 0.5)))
                                    .normalized()
                                    .intersected(area);
            if (cell.isEmpty()) continue;
            painter->fillRect(cell, kHatchFill);
            // Lines x + y = c on one lattice of c for every run, so hatches continue across
            // neighbouring cells; each cut to the cell analytically.
            const double L = cell.left(), R = cell.right(), T = cell.top(), B = cell.bottom();
            painter->setPen(hatch);
            for (double c = std::ceil((L + T) / kHatchSpacing) * kHatchSpacing; c <= R + B; c += kHatchSpacing) {
                const double xa = std::max(L, c - B), xb = std::min(R, c - T);
                if (xb > xa) painter->drawLine(QLineF(xa, c - xa, xb, c - xb));
            }
        }
    }

private:
    std::vector<HatchRun> runs_;
};

HeatmapPlot::HeatmapPlot(QWidget* parent) : QCustomPlot(parent) {
    setMinimumSize(320, 240);
    setFont(QFont("DejaVu Sans", 9));
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plotLayout()->insertRow(0);
    title_ = new QCPTextElement(this, QString(), QFont("DejaVu Sans", 9));
    plotLayout()->addElement(0, 0, title_);
    map_ = new QCPColorMap(xAxis, yAxis);
    map_->setInterpolate(false);
    map_->setTightBoundary(false);
    hatching_ = new Hatching(this);  // created after the map: drawn over it
    for (QCPAxis* axis : {xAxis, yAxis}) {
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        ticker->setSubTickCount(0);
        axis->setTicker(ticker);
        axis->setTickLabelFont(QFont("DejaVu Sans", 7));
        axis->setLabelFont(QFont("DejaVu Sans", 9));
        axis->grid()->setVisible(false);
        axis->setTickLengthOut(axis->tickLengthIn());
        axis->setTickLengthIn(0);
    }
    xAxis->setTickLabelRotation(-90);
    yAxis->setRangeReversed(true);
    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this] { updateTicks(xAxis, cells_.columnLabels); });
    connect(yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this] { updateTicks(yAxis, cells_.rowLabels); });
    connect(this, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
        const auto c = std::llround(xAxis->pixelToCoord(e->position().x()));
        const auto r = std::llround(yAxis->pixelToCoord(e->position().y()));
        if (c >= 0 && r >= 0 && c < cells_.cols && r < cells_.rows) emit cellHovered(static_cast<int>(r), static_cast<int>(c));
    });
    connect(this, &QCustomPlot::mouseDoubleClick, this, [this] {
        resetView();
        replot();
    });
}

void HeatmapPlot::setTitle(const QString& title) { title_->setText(title); }
QString HeatmapPlot::title() const { return title_->text(); }

void HeatmapPlot::setAxisLabels(const QString& columns, const QString& rows) {
    xAxis->setLabel(columns);
    yAxis->setLabel(rows);
}

void HeatmapPlot::setCells(const HeatmapCells& cells) {
    cells_ = cells;
    for (QCPAbstractItem* item : separators_) removeItem(item);
    separators_.clear();
    auto* data = map_->data();
    const bool empty = cells_.rows <= 0 || cells_.cols <= 0;
    if (empty) {
        data->setSize(0, 0);
        map_->setVisible(false);
        hatching_->setRuns({});
    } else {
        map_->setVisible(true);
        data->setSize(cells_.cols, cells_.rows);
        data->setRange(cellRange(cells_.cols), cellRange(cells_.rows));
        for (int r = 0; r < cells_.rows; ++r)
            for (int c = 0; c < cells_.cols; ++c) data->setCell(c, r, cells_.at(r, c));
        hatching_->setRuns(hatchRuns(cells_.hatched, cells_.rows, cells_.cols));
        QPen pen(kSeparator, 1, Qt::DashLine);
        pen.setCosmetic(true);
        auto line = [&](QPointF a, QPointF b) {
            auto* l = new QCPItemStraightLine(this);
            l->point1->setCoords(a);
            l->point2->setCoords(b);
            l->setPen(pen);
            separators_.push_back(l);
        };
        for (double x : cells_.columnSeparators) line({x, 0}, {x, 1});
        for (double y : cells_.rowSeparators) line({0, y}, {1, y});
    }
    resetView();
    replot();
}

void HeatmapPlot::resetView() {
    const bool empty = cells_.rows <= 0 || cells_.cols <= 0;
    xAxis->setRange(-0.5, empty ? 0.5 : cells_.cols - 0.5);
    yAxis->setRange(-0.5, empty ? 0.5 : cells_.rows - 0.5);
    updateTicks(xAxis, cells_.columnLabels);
    updateTicks(yAxis, cells_.rowLabels);
}

void HeatmapPlot::updateTicks(QCPAxis* axis, const QStringList& labels) {
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(axis->ticker());
    if (!ticker) return;
    const QCPRange r = axis->range();
    const bool horizontal = axis->orientation() == Qt::Horizontal;
    const int pixels = !exportTicks_.isEmpty() ? (horizontal ? exportTicks_.width() : exportTicks_.height())
                                               : horizontal ? axis->axisRect()->width() : axis->axisRect()->height();
    QMap<double, QString> ticks;
    for (int i : thinnedTicks(static_cast<int>(labels.size()), r.lower, r.upper, pixels)) ticks.insert(i, labels[i]);
    ticker->setTicks(ticks);
}

QSize HeatmapPlot::exportMargins() const {
    // Room around the matrix: the longest tick label of each axis (x labels stand rotated),
    // the axis titles, the plot title and, where present, a colour scale on the right.
    const QFontMetrics ticks(xAxis->tickLabelFont());
    int rowLabel = 0, colLabel = 0;
    for (const auto& l : cells_.rowLabels) rowLabel = std::max(rowLabel, ticks.horizontalAdvance(l));
    for (const auto& l : cells_.columnLabels) colLabel = std::max(colLabel, ticks.horizontalAdvance(l));
    const QFontMetrics axisFont(xAxis->labelFont());
    bool scale = false;
    for (int i = 0; i < plotLayout()->elementCount(); ++i)
        scale = scale || qobject_cast<QCPColorScale*>(plotLayout()->elementAt(i)) != nullptr;
    const int width = std::min(rowLabel, 360) + axisFont.height() + 40 + (scale ? 110 : 0);
    const int height = std::min(colLabel, 360) + axisFont.height() + 40 + 2 * axisFont.height();
    return {std::max(width, exportExtra_.width() / 2), std::max(height, exportExtra_.height() / 2)};
}

QSize HeatmapPlot::exportSize() const {
    // Cells of 14..28 px (a 7 pt label fits in 14), the matrix about 900 px on its larger
    // side, plus the margins its labels need: the matrix fills the figure, whatever the size
    // of the dock it is shown in.
    const int cols = std::max(1, cells_.cols), rows = std::max(1, cells_.rows);
    const int cell = std::clamp(900 / std::max(cols, rows), 14, 28);
    const QSize m = exportMargins();
    return {std::clamp(cols * cell + m.width(), exportMinimum_.width(), 2400),
            std::clamp(rows * cell + m.height(), exportMinimum_.height(), 2000)};
}

void HeatmapPlot::setExportSizing(const QSize& extra, const QSize& minimum) {
    exportExtra_ = extra;
    exportMinimum_ = minimum;
}

bool HeatmapPlot::exportFigure(const QString& path, QString* error, const QString& title) {
    const QSize s = exportSize();
    // Thin the tick labels for the figure's axis lengths (not the dock's), so none overlap.
    const QSize m = exportMargins();
    exportTicks_ = {std::max(60, s.width() - m.width()), std::max(60, s.height() - m.height())};
    updateTicks(xAxis, cells_.columnLabels);
    updateTicks(yAxis, cells_.rowLabels);
    lastExportTicks_ = {shownTickCount(Qt::Horizontal), shownTickCount(Qt::Vertical), exportTicks_.width(),
                        exportTicks_.height()};
    const bool ok = exportPlot(this, path, error, s.width(), s.height(), title);
    exportTicks_ = {};
    updateTicks(xAxis, cells_.columnLabels);
    updateTicks(yAxis, cells_.rowLabels);
    replot(QCustomPlot::rpQueuedReplot);
    return ok;
}

int HeatmapPlot::shownTickCount(Qt::Orientation axis) const {
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>((axis == Qt::Horizontal ? xAxis : yAxis)->ticker());
    return ticker ? ticker->ticks().size() : 0;
}

void HeatmapPlot::installExportMenu(const QString& baseName, const std::function<QString()>& title,
                                    const QAbstractItemModel* table) {
    draftscope::installExportMenu(
        this, baseName, [this, title](const QString& path, QString* error) { return exportFigure(path, error, title()); },
        table);
}

}  // namespace draftscope
