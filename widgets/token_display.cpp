#include "token_display.h"

#include <QCoreApplication>

namespace draftscope {

QString displayPiece(const QString& raw, int maxChars) {
    QString s;
    s.reserve(raw.size());
    for (const QChar c : raw) {
        switch (c.unicode()) {
        case ' ': s += QChar(0x00b7); break;
        case '\n': s += QChar(0x21b5); break;
        case '\t': s += QChar(0x21e5); break;
        case '\r': s += QChar(0x21e4); break;
        default: s += c;
        }
    }
    if (maxChars > 0 && s.size() > maxChars) s = s.left(maxChars - 1) + QChar(0x2026);
    return s;
}

QString quotedPiece(const QString& raw, int maxChars) {
    return QLatin1Char('\'') + displayPiece(raw, maxChars) + QLatin1Char('\'');
}

QString whitespaceLegend() {
    return QCoreApplication::translate("draftscope", "In pieces: \u00b7 space, \u21b5 newline, \u21e5 tab, \u21e4 carriage return");
}

}  // namespace draftscope
