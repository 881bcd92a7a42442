#pragma once
// Qwen-style ChatML prompt rendering, reproducing Qwen3's Jinja chat template for plain
// messages (no tools) without a Jinja engine.

#include <string>
#include <vector>

namespace draftscope {

/// One chat turn. `role` is "system", "user", "assistant" or "tool".
struct ChatMessage {
    std::string role;
    std::string content;
};

/// Renders messages the way Qwen3's chat_template (tests/data/tokenizers/qwen3/
/// tokenizer_config.json, called without `tools`) does:
/// - a leading system message: `<|im_start|>system\n{content}<|im_end|>\n`;
/// - user turns (and system turns that are not first): `<|im_start|>{role}\n{content}<|im_end|>\n`;
/// - assistant turns: reasoning is split off the content at `</think>` (text before it, after the
///   last `<think>`, newlines trimmed); an assistant turn after the last real user query that is
///   the final message or has non-empty reasoning is rendered
///   `<|im_start|>assistant\n<think>\n{reasoning}\n</think>\n\n{content}<|im_end|>\n`, every other
///   assistant turn as `<|im_start|>assistant\n{content}<|im_end|>\n` (earlier reasoning dropped);
/// - consecutive tool turns are grouped in one user turn as `\n<tool_response>\n{content}\n</tool_response>`;
/// - then, if addGenerationPrompt, `<|im_start|>assistant\n`, followed by `<think>\n\n</think>\n\n`
///   when enableThinking is false.
/// Throws Error for an empty message list (the template indexes messages[0]) or an unknown role.
std::string renderChatML(const std::vector<ChatMessage>& messages, bool addGenerationPrompt, bool enableThinking);

}  // namespace draftscope
