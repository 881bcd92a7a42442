#include "figure_export.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <qcustomplot.h>

#include <QAbstractItemModel>
#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGraphicsScene>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QTextDocument>

#include <cmath>
#include <functional>
#include <memory>
#include <QWidget>

namespace draftscope {

namespace {

QString suffixOf(const QString& path) { return QFileInfo(path).suffix().toLower(); }

bool fail(QString* error, const QString& message) {
    if (error) *error = message;
    return false;
}

/// Writes one export file under the output-file policy (draftscope/file_io.h): `render`
/// writes a temporary file beside `path` by name (Qt's image, SVG and PDF writers open it
/// themselves) and returns false on failure; a non-empty result replaces `path` (a symlink's
/// target), anything else leaves `path` untouched and no temporary file behind.
bool writeAtomically(const QString& path, QString* error, const std::function<bool(const QString& temp)>& render) {
    try {
        AtomicOutputFile out(path.toStdString());
        const QString temp = QString::fromStdString(out.tempPath());
        if (!render(temp) || QFileInfo(temp).size() == 0)
            return fail(error, QStringLiteral("could not write '%1'").arg(path));
        out.commit();
        return true;
    } catch (const Error& e) {
        return fail(error, QString::fromStdString(e.what()));
    }
}

/// The value of a cell as exported: kExportRole if the model has it, else DisplayRole.
QVariant exportedValue(const QAbstractItemModel* model, int row, int col) {
    const QModelIndex i = model->index(row, col);
    const QVariant raw = i.data(kExportRole);
    return raw.isValid() ? raw : i.data(Qt::DisplayRole);
}

/// Compact JSON text of one value (QJsonDocument writes only arrays and objects).
QByteArray jsonText(const QJsonValue& v) {
    const QByteArray a = QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact);
    return a.mid(1, a.size() - 2);
}

QString csvField(QString s) {
    if (s.contains(',') || s.contains('"') || s.contains('\n') || s.contains('\r')) {
        s.replace('"', "\"\"");
        return '"' + s + '"';
    }
    return s;
}

}  // namespace

QStringList figureFormats() { return {"png", "svg", "pdf"}; }
QStringList tableFormats() { return {"csv", "json"}; }

bool exportPlot(QCustomPlot* plot, const QString& path, QString* error, int width, int height, const QString& title) {
    if (!title.isEmpty()) {
        // A row on top of the plot's layout for the time of the export.
        plot->plotLayout()->insertRow(0);
        auto* text = new QCPTextElement(plot, title, QFont(plot->font().family(), 9));
        text->setMargins(QMargins(4, 4, 4, 0));
        plot->plotLayout()->addElement(0, 0, text);
        const bool ok = exportPlot(plot, path, error, width, height);
        plot->plotLayout()->remove(text);
        plot->plotLayout()->simplify();
        plot->replot(QCustomPlot::rpQueuedReplot);
        return ok;
    }
    const QString fmt = suffixOf(path);
    if (!figureFormats().contains(fmt))
        return fail(error, QStringLiteral("unknown figure format '%1' for '%2' (use png, svg or pdf)").arg(fmt, path));
    return writeAtomically(path, error, [&](const QString& file) {
        if (fmt == "png") return plot->savePng(file, width, height, 2.0);
        if (fmt == "pdf") return plot->savePdf(file, width, height, QCP::epNoCosmetic, "draftscope");
        const int w = width > 0 ? width : plot->width();
        const int h = height > 0 ? height : plot->height();
        QSvgGenerator gen;
        gen.setFileName(file);
        gen.setSize(QSize(w, h));
        gen.setViewBox(QRect(0, 0, w, h));
        gen.setTitle(plot->objectName());
        QCPPainter painter;
        if (!painter.begin(&gen)) return false;
        plot->toPainter(&painter, w, h);
        painter.end();
        return true;
    });
}

bool exportPainted(const QSize& contentSize, const std::function<void(QPainter&)>& content, const QString& path,
                   QString* error, const QString& title) {
    constexpr int kTitleH = 22;
    const int band = title.isEmpty() ? 0 : kTitleH;
    const QSize size = contentSize + QSize(0, band);
    auto paint = [&](QPainter& p) {
        if (band > 0) {
            p.fillRect(QRect(0, 0, size.width(), band), Qt::white);
            QFont f = p.font();
            f.setPointSize(9);
            p.save();
            p.setFont(f);
            p.setPen(Qt::black);
            p.drawText(QRect(4, 0, size.width() - 8, band), Qt::AlignVCenter | Qt::AlignLeft, title);
            p.restore();
            p.translate(0, band);
        }
        content(p);
    };
    const QString fmt = suffixOf(path);
    if (!figureFormats().contains(fmt))
        return fail(error, QStringLiteral("unknown figure format '%1' for '%2' (use png, svg or pdf)").arg(fmt, path));
    return writeAtomically(path, error, [&](const QString& file) {
        if (fmt == "png") {
            QImage image(size * 2, QImage::Format_ARGB32);
            image.setDevicePixelRatio(2.0);
            image.fill(Qt::white);
            QPainter p(&image);
            paint(p);
            p.end();
            return image.save(file, "PNG");
        }
        if (fmt == "svg") {
            QSvgGenerator gen;
            gen.setFileName(file);
            gen.setSize(size);
            gen.setViewBox(QRect(QPoint(0, 0), size));
            QPainter p;
            if (!p.begin(&gen)) return false;
            paint(p);
            return p.end();
        }
        QPdfWriter pdf(file);
        pdf.setCreator("draftscope");
        pdf.setResolution(72);
        pdf.setPageSize(QPageSize(QSizeF(size), QPageSize::Point));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        QPainter p;
        if (!p.begin(&pdf)) return false;
        paint(p);
        return p.end();
    });
}

bool exportWidget(QWidget* widget, const QString& path, QString* error, const QString& title) {
    const QSize size = widget->size().isEmpty() ? widget->sizeHint() : widget->size();
    return exportPainted(size, [&](QPainter& p) { widget->render(&p); }, path, error,
                         title);
}

bool exportScene(QGraphicsScene* scene, const QString& path, QString* error, int margin, const QString& title) {
    const QRectF source = scene->itemsBoundingRect().adjusted(-margin, -margin, margin, margin);
    const QSize size = source.size().toSize().expandedTo(QSize(1, 1));
    auto paint = [&](QPainter& p) {
        p.setRenderHint(QPainter::Antialiasing);
        p.setRenderHint(QPainter::TextAntialiasing);
        p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
        scene->render(&p, QRectF(QPointF(0, 0), QSizeF(size)), source, Qt::KeepAspectRatio);
    };
    return exportPainted(size, paint, path, error, title);
}

bool exportDocument(const QTextDocument& source, const QString& path, QString* error, int width, const QString& title) {
    std::unique_ptr<QTextDocument> doc(source.clone());
    doc->setTextWidth(width);
    const QSize size(width, static_cast<int>(std::ceil(doc->size().height())));
    auto paint = [&](QPainter& p) {
        p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
        doc->drawContents(&p);
    };
    return exportPainted(size, paint, path, error, title);
}

bool exportTable(const QAbstractItemModel* model, const QString& path, QString* error) {
    const QString fmt = suffixOf(path);
    const int rows = model->rowCount(), cols = model->columnCount();
    QStringList headers;
    for (int c = 0; c < cols; ++c) headers << model->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    QByteArray bytes;
    if (fmt == "csv") {
        QStringList lines;
        QStringList h;
        for (const auto& s : headers) h << csvField(s);
        lines << h.join(',');
        for (int r = 0; r < rows; ++r) {
            QStringList fields;
            for (int c = 0; c < cols; ++c) fields << csvField(exportedValue(model, r, c).toString());
            lines << fields.join(',');
        }
        bytes = (lines.join("\r\n") + "\r\n").toUtf8();
    } else if (fmt == "json") {
        // Written by hand: QJsonObject sorts its keys, a table's columns have an order.
        bytes = "[\n";
        for (int r = 0; r < rows; ++r) {
            bytes += "    {\n";
            for (int c = 0; c < cols; ++c)
                bytes += "        " + jsonText(headers[c]) + ": " +
                         jsonText(QJsonValue::fromVariant(exportedValue(model, r, c))) + (c + 1 < cols ? ",\n" : "\n");
            bytes += r + 1 < rows ? "    },\n" : "    }\n";
        }
        bytes += "]\n";
    } else {
        return fail(error, QStringLiteral("unknown table format '%1' for '%2' (use csv or json)").arg(fmt, path));
    }
    try {
        writeFileAtomically(path.toStdString(), bytes.toStdString());
    } catch (const Error& e) {
        return fail(error, QString::fromStdString(e.what()));
    }
    return true;
}

FigureSet::FigureSet(const QString& dir, QString* error) : dir_(dir), error_(error) {
    if (!QDir().mkpath(dir)) {
        ok_ = false;
        fail(error_, QObject::tr("cannot create directory '%1'").arg(dir));
    }
}

bool FigureSet::write(const QString& base, const QStringList& formats,
                      const std::function<bool(const QString&, QString*)>& one) {
    for (const QString& fmt : formats) {
        if (!ok_) return false;
        const QString path = QDir(dir_).filePath(base + QLatin1Char('.') + fmt);
        QString err;
        ok_ = one(path, &err);
        if (!ok_) return fail(error_, err);
        written_ << path;
    }
    return ok_;
}

bool FigureSet::figure(const QString& base, const FigureRenderer& render) { return write(base, figureFormats(), render); }

bool FigureSet::plot(const QString& base, QCustomPlot* plot, int width, int height, const QString& title) {
    return write(base, figureFormats(),
                 [&](const QString& path, QString* err) { return exportPlot(plot, path, err, width, height, title); });
}

bool FigureSet::table(const QString& base, const QAbstractItemModel* model) {
    return write(base, tableFormats(), [&](const QString& path, QString* err) { return exportTable(model, path, err); });
}

void installExportMenu(QWidget* view, const QString& baseName, const FigureRenderer& render,
                       const QAbstractItemModel* table) {
    view->setContextMenuPolicy(Qt::ActionsContextMenu);
    // One action per format: ask for a path, write it with `write`, report a failure.
    auto addActions = [view, baseName](const QStringList& formats, const QString& label, const FigureRenderer& write) {
        for (const QString& fmt : formats) {
            auto* a = new QAction(label.arg(fmt.toUpper()), view);
            QObject::connect(a, &QAction::triggered, view, [=] {
                const QString path =
                    QFileDialog::getSaveFileName(view, QObject::tr("Export %1").arg(baseName), baseName + "." + fmt,
                                                 QStringLiteral("%1 (*.%2)").arg(fmt.toUpper(), fmt));
                if (path.isEmpty()) return;
                QString err;
                if (!write(path, &err)) QMessageBox::warning(view, QObject::tr("Export failed"), err);
            });
            view->addAction(a);
        }
    };
    addActions(figureFormats(), QObject::tr("Export as %1..."), render);
    if (table)
        addActions(tableFormats(), QObject::tr("Export table as %1..."),
                   [table](const QString& path, QString* err) { return exportTable(table, path, err); });
}

}  // namespace draftscope
