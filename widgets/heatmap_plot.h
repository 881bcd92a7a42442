#pragma once
// The one heatmap figure of the matrix views (MaskView, AttentionView): a title row, a
// QCPColorMap with one cell per (row, column), text tickers thinned to the room there is,
// dashed separators, hatched cells, hover and zoom. The views compute a HeatmapCells (plain
// data, testable without a plot) and hand it over; colours (gradient, data range) stay
// theirs.

#include <qcustomplot.h>

#include <QSize>
#include <QString>
#include <QStringList>

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

class QAbstractItemModel;
class QLabel;

namespace draftscope {

/// What a heatmap shows: `values` [rows * cols] row-major, row 0 at the top, column 0 at the
/// left; one tick label per column (x axis, keys) and per row (y axis, queries); dashed
/// separators between cells (coordinates in cell units: a line at x = c - 0.5 runs between
/// columns c - 1 and c); `hatched` [rows * cols] (1 = drawn shaded and hatched over the
/// colour) or empty for none. rows == 0 or cols == 0 shows an empty plot.
struct HeatmapCells {
    int rows = 0, cols = 0;
    std::vector<double> values;
    QStringList columnLabels, rowLabels;
    std::vector<double> columnSeparators, rowSeparators;
    std::vector<std::uint8_t> hatched;

    double at(int row, int col) const { return values[static_cast<std::size_t>(row) * cols + col]; }
};

/// Tick positions for `count` labels of which the cells lower..upper (axis range, cell
/// units) are in view on an axis `pixels` long: every step-th label, step chosen so that
/// labels stand about 13 px apart (7 pt font); before the first layout (pixels <= 60) room
/// for 48 is assumed. Returns the indices labelled, ascending.
std::vector<int> thinnedTicks(int count, double lower, double upper, int pixels);

/// Runs of consecutive hatched cells per row of `hatched` [rows * cols]: {row, first
/// column, last column}, row by row, left to right.
struct HatchRun {
    int row, first, last;
    bool operator==(const HatchRun&) const = default;
};
std::vector<HatchRun> hatchRuns(const std::vector<std::uint8_t>& hatched, int rows, int cols);

/// The error line of a matrix view: red, bold, word-wrapped, object name "errorLabel",
/// hidden until showErrorText() gives it a message.
QLabel* newErrorLabel(QWidget* parent);
/// Shows `text` in `label` (an error line), hidden when empty.
void showErrorText(QLabel* label, const QString& text);

/// The heatmap plot. Fonts: DejaVu Sans 9 (title, axis labels), 7 (tick labels); x tick
/// labels rotated -90 degrees, y axis reversed (row 0 on top). Wheel zooms, drag pans,
/// double-click shows the whole matrix again.
class HeatmapPlot : public QCustomPlot {
    Q_OBJECT
public:
    explicit HeatmapPlot(QWidget* parent = nullptr);

    /// Shows `cells` (replaces what was shown, resets the zoom) and replots. Set the colour
    /// map's gradient and data range before or after; they are not touched here.
    void setCells(const HeatmapCells& cells);
    const HeatmapCells& cells() const { return cells_; }
    void setTitle(const QString& title);
    QString title() const;
    void setAxisLabels(const QString& columns, const QString& rows);

    QCPColorMap* colorMap() const { return map_; }
    QCPTextElement* titleElement() const { return title_; }

    /// Size for a figure export, from the matrix alone (never the dock's size): cells of
    /// 14..28 px (the matrix about 900 px over its larger side) plus exportMargins(), clamped
    /// to [minimum, 2400 x 2000] (setExportSizing; default minimum 480 x 360).
    QSize exportSize() const;
    /// Room the figure needs around the matrix: the longest tick label of each axis (x labels
    /// stand rotated), the axis titles, the title and a colour scale; at least half of
    /// setExportSizing's `extra`.
    QSize exportMargins() const;
    void setExportSizing(const QSize& extra, const QSize& minimum);
    /// Writes the figure at exportSize() with `title` above it (exportPlot(): png, svg, pdf),
    /// the tick labels thinned for the figure's axis lengths (about 13 px apart).
    bool exportFigure(const QString& path, QString* error, const QString& title);
    /// Tick labels the axis shows now (after thinning).
    int shownTickCount(Qt::Orientation axis) const;
    /// The last exportFigure's tick labels per axis and the axis lengths they were thinned
    /// for (px): {x labels, y labels, x px, y px}.
    std::array<int, 4> lastExportTicks() const { return lastExportTicks_; }
    /// The context menu: the figure as PNG/SVG/PDF (exportFigure with what `title` returns at
    /// export time) and `table` as CSV/JSON.
    void installExportMenu(const QString& baseName, const std::function<QString()>& title,
                           const QAbstractItemModel* table);

signals:
    /// The mouse is over cell (row, col) of the shown matrix.
    void cellHovered(int row, int col);

private:
    class Hatching;
    void resetView();
    void updateTicks(QCPAxis* axis, const QStringList& labels);

    HeatmapCells cells_;
    QSize exportExtra_{220, 220}, exportMinimum_{480, 360};
    QSize exportTicks_;  ///< axis lengths ticks are thinned for during an export (empty: on screen)
    std::array<int, 4> lastExportTicks_{};
    QCPColorMap* map_ = nullptr;
    QCPTextElement* title_ = nullptr;
    Hatching* hatching_ = nullptr;
    std::vector<QCPAbstractItem*> separators_;
};

}  // namespace draftscope
