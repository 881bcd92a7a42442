#pragma once
// Legends of the views as rich text for a word-wrapping QLabel: each entry (a colour mark
// and its text) stays on one line, lines break between entries only.

#include <QColor>
#include <QString>
#include <QStringList>

namespace draftscope {

/// A legend entry: a filled square in `color`, then `text` (HTML-escaped; its spaces do
/// not break).
QString legendSwatch(const QColor& color, const QString& text);

/// A legend entry for white (masked, empty) cells: an outlined grey square, then `text`.
QString legendHollow(const QString& text);

/// The entries (legendSwatch(), legendHollow(), or legendText() results) on a line that
/// wraps between entries, never inside one.
QString legendLine(const QStringList& entries);

/// A plain-text entry (HTML-escaped, spaces do not break).
QString legendText(const QString& text);

/// whitespaceLegend() as entries that wrap between the glyphs ("In pieces: · space",
/// "↵ newline", ...).
QString whitespaceLegendLine();

}  // namespace draftscope
