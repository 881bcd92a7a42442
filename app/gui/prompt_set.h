#pragma once
// Prompt sets: JSONL files with one prompt per line.

#include <QString>
#include <QVector>

namespace draftscope {

/// One prompt of a set. `chat` prompts carry turns: user turns in `text` joined for display;
/// the engine receives the first user turn as a ChatML user message.
struct PromptEntry {
    QString id;
    QString text;
    bool chat = false;
};

/// Reads a JSONL prompt set: each non-empty line is an object with `prompt` (raw text) or
/// `turns` (list of user strings, MT-Bench style) or `messages` (list of {role, content});
/// optional `id` (string or number; default: the line number). Throws draftscope::Error
/// naming the file and line for unreadable files, invalid JSON or a line without a prompt.
QVector<PromptEntry> loadPromptSet(const QString& path);

}  // namespace draftscope
