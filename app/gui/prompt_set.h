#pragma once
// Prompt sets for the GUI's prompt list: the backend's JSONL parser
// (draftscope/prompt_set.h, shared with draftscope-cli eval) as Qt strings.

#include <QString>
#include <QVector>

namespace draftscope {

/// One prompt of a set as the prompt panel shows it. `chat` prompts show their first user
/// message, which the engine receives as a ChatML user turn (later turns and system
/// messages are used by `draftscope-cli eval`, not by the one-prompt workbench).
struct PromptEntry {
    QString id;
    QString text;
    bool chat = false;
};

/// Reads a JSONL prompt set with draftscope::loadPromptSetFile (mapping of `prompt`,
/// `turns`, `messages`, `id`/`task_id`/`question_id`: README, "Prompt sets"). Throws
/// draftscope::Error naming the file, line and field for an unreadable file, invalid JSON
/// or a line without a prompt.
QVector<PromptEntry> loadPromptSet(const QString& path);

}  // namespace draftscope
