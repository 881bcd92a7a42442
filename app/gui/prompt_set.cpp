#include "gui/prompt_set.h"

#include "draftscope/errors.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace draftscope {

QVector<PromptEntry> loadPromptSet(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw Error(QStringLiteral("cannot open prompt set '%1': %2").arg(path, f.errorString()).toStdString());
    QVector<PromptEntry> out;
    int lineNo = 0;
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        ++lineNo;
        if (line.isEmpty()) continue;
        QJsonParseError err{};
        const auto doc = QJsonDocument::fromJson(line, &err);
        auto fail = [&](const QString& why) {
            throw Error(QStringLiteral("'%1' line %2: %3").arg(path).arg(lineNo).arg(why).toStdString());
        };
        if (err.error != QJsonParseError::NoError) fail(QStringLiteral("invalid JSON (%1)").arg(err.errorString()));
        if (!doc.isObject()) fail("expected a JSON object");
        const auto o = doc.object();
        PromptEntry e;
        const auto id = o.value("id");
        e.id = id.isString() ? id.toString() : id.isDouble() ? QString::number(id.toDouble()) : QString::number(lineNo);
        if (o.value("prompt").isString()) {
            e.text = o.value("prompt").toString();
        } else if (o.value("turns").isArray()) {
            const auto turns = o.value("turns").toArray();
            if (turns.isEmpty() || !turns.first().isString()) fail("'turns' must be a non-empty list of strings");
            e.text = turns.first().toString();
            e.chat = true;
        } else if (o.value("messages").isArray()) {
            for (const auto& m : o.value("messages").toArray())
                if (m.toObject().value("role").toString() == "user") {
                    e.text = m.toObject().value("content").toString();
                    break;
                }
            if (e.text.isEmpty()) fail("'messages' has no user message with content");
            e.chat = true;
        } else {
            fail("no 'prompt', 'turns' or 'messages' field");
        }
        out.push_back(e);
    }
    if (out.isEmpty()) throw Error(QStringLiteral("prompt set '%1' has no prompts").arg(path).toStdString());
    return out;
}

}  // namespace draftscope
