#include "token_display.h"

#include <QCoreApplication>

namespace draftscope {

namespace {

/// The glyph standing for whitespace character `c`, or a null QChar for any other.
QChar whitespaceGlyph(QChar c) {
    switch (c.unicode()) {
    case ' ': return QChar(0x00b7);
    case '\n': return QChar(0x21b5);
    case '\t': return QChar(0x21e5);
    case '\r': return QChar(0x21e4);
    default: return QChar();
    }
}

}  // namespace

QString displayPiece(const QString& raw, int maxChars) {
    QString s;
    s.reserve(raw.size());
    for (const QChar c : raw) {
        const QChar glyph = whitespaceGlyph(c);
        s += glyph.isNull() ? c : glyph;
    }
    if (maxChars > 0 && s.size() > maxChars) s = s.left(maxChars - 1) + QChar(0x2026);
    return s;
}

QString pieceHtml(const QString& raw) {
    QString s;
    for (const QChar c : raw) {
        if (c == QLatin1Char(' ')) s += QStringLiteral("&nbsp;");
        else if (c == QLatin1Char('\t')) s += QStringLiteral("&nbsp;&nbsp;&nbsp;&nbsp;");
        else if (const QChar glyph = whitespaceGlyph(c); !glyph.isNull()) s += glyph;
        else s += QString(c).toHtmlEscaped();
    }
    return s;
}

QString quotedPiece(const QString& raw, int maxChars) {
    return QLatin1Char('\'') + displayPiece(raw, maxChars) + QLatin1Char('\'');
}

QString whitespaceLegend() {
    return QCoreApplication::translate("draftscope", "In pieces: \u00b7 space, \u21b5 newline, \u21e5 tab, \u21e4 carriage return");
}

}  // namespace draftscope
