#pragma once
// Prompt sets: JSONL files with one prompt per line, shared by draftscope-cli eval and the
// GUI's prompt list. Torch-free and Qt-free.

#include "draftscope/chat_template.h"
#include "draftscope/run_types.h"

#include <string>
#include <vector>

namespace draftscope {

/// One line of a prompt set.
///
/// Mapping (docs: README "Prompt sets"):
/// - `prompt` string (raw completion, HumanEval style): `text`, not chat;
/// - `prompt` list of strings (HF `mt_bench_prompts`) or `turns` list of strings (MT-Bench
///   `question.jsonl`, the DFlash benchmark's cache files): chat, one user message per turn;
/// - `messages` list of {role, content} (OpenAI style): chat, the messages as given.
/// The id is `id`, else `task_id` (HumanEval), else `question_id` (MT-Bench), else the
/// 1-based line number; numbers are written without a fraction.
struct PromptSetEntry {
    std::string id;
    int line = 0;                        ///< 1-based line in the file
    bool chat = false;                   ///< false: `text` is the raw prompt
    std::string text;                    ///< raw prompt (chat == false)
    std::vector<ChatMessage> messages;   ///< chat == true: the conversation (at least one user message)

    /// Number of user messages (1 for raw prompts).
    int userTurns() const;
    /// The first user message's content (the raw text for raw prompts): what a one-turn
    /// view shows.
    std::string firstUserText() const;
};

/// Parses JSONL text (`source` names it in errors). Empty lines are skipped. Throws Error
/// naming `source`, the line and the field for invalid JSON, a line that is not an object,
/// a line without `prompt`, `turns` or `messages`, wrongly typed fields, a `messages` list
/// without a user message or with an unknown role, or a set without prompts.
std::vector<PromptSetEntry> parsePromptSet(const std::string& jsonl, const std::string& source);
/// Reads and parses a JSONL prompt set file (see parsePromptSet). Throws Error if unreadable.
std::vector<PromptSetEntry> loadPromptSetFile(const std::string& path);

/// The engine prompt for turn `turn` (0-based user turn) of `entry`.
/// - raw entries (turn 0 only): the text as is, or as one ChatML user turn if `chatWrapRaw`;
/// - chat entries, turn 0 with only that user message before it: a PromptSpec with
///   chat = true (identical to `draftscope-cli run --chat --prompt TEXT`);
/// - otherwise the conversation up to and including user turn `turn`, where user turn k < turn
///   is followed by `answers[k]` as the assistant reply (the model's own answers, as the
///   DFlash benchmark feeds them back) and messages given in the file are kept, rendered
///   with renderChatML (generation prompt added) into a raw-text PromptSpec.
/// `thinking` false appends Qwen3's empty think block (enable_thinking=False).
/// Throws Error if `turn` is out of range or fewer than `turn` answers are given.
PromptSpec promptSpecForTurn(const PromptSetEntry& entry, int turn, const std::vector<std::string>& answers,
                             bool thinking, bool chatWrapRaw = false);

}  // namespace draftscope
