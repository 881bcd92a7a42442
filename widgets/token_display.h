#pragma once
// The one way every view writes a token piece on screen (block grid, DDTree boxes and
// table, hidden-state table and axis, attention and mask labels): whitespace becomes a
// visible glyph. Exports (CSV/JSON) keep the raw text (figure_export.h kExportRole).

#include <QString>

namespace draftscope {

/// `raw` with whitespace made visible: space U+00B7 '·', newline U+21B5 '↵', tab U+21E5
/// '⇥', carriage return U+21E4 '⇤'. With maxChars > 0, a longer result is cut to
/// maxChars - 1 characters plus U+2026 '…'. Other characters (including the tokenizer's
/// `\xNN` escapes of partial UTF-8 bytes) are kept.
QString displayPiece(const QString& raw, int maxChars = 0);

/// A piece inside running HTML text (the output strip): HTML-escaped, spaces as &nbsp;, a
/// tab as four, newline U+21B5 '↵' and carriage return U+21E4 '⇤' (the caller breaks the
/// line after a piece with a newline). Like displayPiece(), one table of glyphs.
QString pieceHtml(const QString& raw);

/// A piece in a label or node box: displayPiece(raw, maxChars) in single quotes.
QString quotedPiece(const QString& raw, int maxChars = 0);

/// The legend line naming the glyphs of displayPiece(), for every view that shows pieces.
QString whitespaceLegend();

}  // namespace draftscope
