#include "legend_html.h"

#include "token_display.h"

namespace draftscope {

QString legendText(const QString& text) {
    return text.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;"));
}

QString legendSwatch(const QColor& color, const QString& text) {
    return QStringLiteral("<span style='color:%1; font-size:large'>&#9632;</span>&nbsp;%2").arg(color.name(), legendText(text));
}

QString legendHollow(const QString& text) {
    return QStringLiteral("<span style='color:#606060; font-size:large'>&#9633;</span>&nbsp;%1").arg(legendText(text));
}

QString legendLine(const QStringList& entries) {
    // Two non-breaking spaces keep entries apart; the ordinary space after them is where a
    // line may break.
    return entries.join(QStringLiteral("&nbsp;&nbsp; "));
}

QString whitespaceLegendLine() {
    QStringList parts;
    for (const QString& part : whitespaceLegend().split(QStringLiteral(", "))) parts << legendText(part);
    return parts.join(QStringLiteral(", "));
}

}  // namespace draftscope
