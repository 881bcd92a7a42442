#pragma once
// Export of views and tables: every figure to PNG, SVG and PDF, every table to CSV and JSON,
// each file written atomically (draftscope/file_io.h, docs/RELIABILITY.md "Output files").

#include <QSize>
#include <QtCore/qnamespace.h>
#include <QString>

#include <functional>
#include <QStringList>

class QAbstractItemModel;
class QCustomPlot;
class QGraphicsScene;
class QTextDocument;
class QWidget;

class QPainter;

namespace draftscope {

/// Formats a figure can be written in, by file suffix.
QStringList figureFormats();  // {"png", "svg", "pdf"}
/// Formats a table can be written in, by file suffix.
QStringList tableFormats();   // {"csv", "json"}

/// Writes `plot` to `path`; the format follows the suffix (png, svg or pdf). SVG and PDF are
/// vector output. width/height 0 keep the on-screen size. A non-empty `title` is drawn as
/// a line above the plot (inside width x height). Returns false and sets *error (naming
/// the path) on failure or an unknown suffix. Every export here (figures and tables) is
/// written atomically under the output-file policy of draftscope/file_io.h: a temporary file
/// renamed over `path`, a symlink written through, a directory or device refused; a failed
/// export leaves `path` as it was and no temporary file.
bool exportPlot(QCustomPlot* plot, const QString& path, QString* error, int width = 0, int height = 0,
                const QString& title = {});

/// Writes what `paint` draws on a `size` canvas (white background) to `path`: png raster
/// (2x), svg and pdf vector, by suffix. The one place the three formats are set up; every
/// export of custom-painted content goes through it. A non-empty `title` adds a line above
/// the content (the canvas grows by its height). Same error contract as exportPlot.
bool exportPainted(const QSize& size, const std::function<void(QPainter&)>& paint, const QString& path,
                   QString* error, const QString& title = {});

/// Renders any widget to `path` (png raster, svg and pdf vector where the widget paints
/// vector primitives). Same error contract as exportPlot.
bool exportWidget(QWidget* widget, const QString& path, QString* error, const QString& title = {});

/// Renders the whole of `scene` (its items' bounding rect plus a margin, on white, at 1:1
/// scale) to `path`: png raster (2x), svg and pdf vector. Same error contract as exportPlot.
bool exportScene(QGraphicsScene* scene, const QString& path, QString* error, int margin = 16, const QString& title = {});

/// Writes a rich-text document laid out at `width` pixels (its full height, not just what a
/// scroll area shows) as png, svg or pdf. Same error contract as exportPlot.
bool exportDocument(const QTextDocument& document, const QString& path, QString* error, int width = 1000,
                    const QString& title = {});

/// Item data role a model gives when the exported value differs from the shown one: a
/// token piece is shown with whitespace glyphs (displayPiece()) but exported as its raw
/// text.
constexpr int kExportRole = Qt::UserRole + 1000;

/// Writes the model's cells (with headers) to `path`: CSV (RFC 4180 quoting) or JSON (array
/// of objects, keys in column order). A cell's kExportRole data is written when the model
/// has it, else its DisplayRole. Same error contract as exportPlot.
bool exportTable(const QAbstractItemModel* model, const QString& path, QString* error);

/// One figure file written by `render` to `path` (format by suffix); false and *error on failure.
using FigureRenderer = std::function<bool(const QString& path, QString* error)>;

/// The files of one ExportableView::exportAll(): every figure as <dir>/<base>.{png,svg,pdf},
/// every table as <dir>/<base>.{csv,json}, in the order asked for. The one place the format
/// loops live. The constructor creates `dir` (a failure is the first error). The first
/// failure stops the set: *error gets its message and later calls write nothing and return
/// false; written() lists the files written before it.
class FigureSet {
public:
    FigureSet(const QString& dir, QString* error);
    /// Writes <base>.{png,svg,pdf} with `render`.
    bool figure(const QString& base, const FigureRenderer& render);
    /// Writes `plot` as <base>.{png,svg,pdf} through exportPlot() (width/height 0 = on-screen size).
    bool plot(const QString& base, QCustomPlot* plot, int width, int height, const QString& title);
    /// Writes `model` as <base>.{csv,json} through exportTable().
    bool table(const QString& base, const QAbstractItemModel* model);
    bool ok() const { return ok_; }
    const QStringList& written() const { return written_; }

private:
    bool write(const QString& base, const QStringList& formats,
               const std::function<bool(const QString& path, QString* error)>& one);
    QString dir_;
    QString* error_;
    bool ok_ = true;
    QStringList written_;
};

/// Adds "Export as PNG/SVG/PDF..." (and, if `table` is given, "Export table as CSV/JSON...")
/// to `view`'s context menu (Qt::ActionsContextMenu). `render` writes one figure file.
void installExportMenu(QWidget* view, const QString& baseName, const FigureRenderer& render,
                       const QAbstractItemModel* table = nullptr);

}  // namespace draftscope
