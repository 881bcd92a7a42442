#pragma once
// A plot legend in its own row under the axis rect, with as many entries per row as the
// plot's width allows: it never covers data and never runs past the plot's edge.

#include <functional>

class QCustomPlot;
class QString;

namespace draftscope {

/// Moves `plot`'s legend out of the axis rect into row `row` of the plot layout (under the
/// axis rect; row 2 when a title row is on top), borderless, entries filled row by row.
void placeLegendBelow(QCustomPlot* plot, int row = 2);

/// Sets how many legend entries share a row so that the widest entry fits a plot `width`
/// pixels wide: from 1 to `maxPerRow`. Re-flows the entries and queues a replot when that
/// changes. Call it when the plot is resized and before exporting at a fixed width.
void fitLegendRows(QCustomPlot* plot, int width, int maxPerRow);

/// Height in pixels of `plot`'s legend (margins included) with its rows fitted to a plot
/// `width` pixels wide, as fitLegendRows() would fit them; 0 when the legend is empty.
int legendHeightFor(QCustomPlot* plot, int width, int maxPerRow);

/// Calls fitLegendRows(plot, plot->width(), maxPerRow) whenever `plot` is resized (an event
/// filter owned by the plot). With `contentHeight` (the pixels the title and axis rect need),
/// the plot's minimum height becomes that plus the legend's height at the new width, so a
/// legend that wraps onto more rows is never clipped (the enclosing dock scrolls instead).
void fitLegendRowsOnResize(QCustomPlot* plot, int maxPerRow, std::function<int()> contentHeight = {});

/// Writes `plot` through exportPlot() at width x height (0: on-screen size) with its legend
/// rows fitted to that width (fitLegendRows), then fits them to the on-screen width again.
bool exportPlotFittingLegend(QCustomPlot* plot, const QString& path, QString* error, int width, int height,
                             const QString& title, int maxPerRow);

}  // namespace draftscope
