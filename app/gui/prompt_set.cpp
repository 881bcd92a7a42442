#include "gui/prompt_set.h"

#include "draftscope/prompt_set.h"

namespace draftscope {

QVector<PromptEntry> loadPromptSet(const QString& path) {
    QVector<PromptEntry> out;
    for (const auto& e : loadPromptSetFile(path.toStdString())) {
        PromptEntry p;
        p.id = QString::fromStdString(e.id);
        p.text = QString::fromStdString(e.firstUserText());
        p.chat = e.chat;
        out.push_back(p);
    }
    return out;
}

}  // namespace draftscope
