// Qwen3 ChatML rendering: a line-by-line port of the Jinja chat_template shipped in Qwen3's
// tokenizer_config.json (the branch without `tools`). Python string semantics (split, strip)
// are reproduced exactly.

#include "draftscope/chat_template.h"

#include "draftscope/errors.h"

#include <string_view>

namespace draftscope {

namespace {

// Python str.lstrip('\n') / rstrip('\n') / strip('\n').
std::string_view lstripNl(std::string_view s) {
    const auto p = s.find_first_not_of('\n');
    return p == std::string_view::npos ? std::string_view{} : s.substr(p);
}
std::string_view rstripNl(std::string_view s) {
    const auto p = s.find_last_not_of('\n');
    return p == std::string_view::npos ? std::string_view{} : s.substr(0, p + 1);
}
std::string_view stripNl(std::string_view s) { return rstripNl(lstripNl(s)); }

// Python s.split(sep)[0] and s.split(sep)[-1].
std::string_view beforeFirst(std::string_view s, std::string_view sep) {
    const auto p = s.find(sep);
    return p == std::string_view::npos ? s : s.substr(0, p);
}
std::string_view afterLast(std::string_view s, std::string_view sep) {
    const auto p = s.rfind(sep);
    return p == std::string_view::npos ? s : s.substr(p + sep.size());
}

bool isToolResponse(std::string_view c) {
    constexpr std::string_view open = "<tool_response>", close = "</tool_response>";
    return c.size() >= open.size() && c.substr(0, open.size()) == open && c.size() >= close.size() &&
           c.substr(c.size() - close.size()) == close;
}

}  // namespace

std::string renderChatML(const std::vector<ChatMessage>& messages, bool addGenerationPrompt, bool enableThinking) {
    if (messages.empty())
        throw Error("chat template: the message list is empty (Qwen3's template needs at least one message)");
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const std::string& r = messages[i].role;
        if (r != "system" && r != "user" && r != "assistant" && r != "tool")
            throw Error("chat template: message " + std::to_string(i) + " has role \"" + r +
                        "\" (expected system, user, assistant or tool)");
    }

    std::string out;
    if (messages[0].role == "system") out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";

    // Index of the last user message that is not a wrapped tool response.
    const long n = static_cast<long>(messages.size());
    long lastQueryIndex = n - 1;
    for (long i = n - 1; i >= 0; --i) {
        if (messages[static_cast<std::size_t>(i)].role == "user" && !isToolResponse(messages[static_cast<std::size_t>(i)].content)) {
            lastQueryIndex = i;
            break;
        }
    }

    for (long i = 0; i < n; ++i) {
        const ChatMessage& m = messages[static_cast<std::size_t>(i)];
        const bool first = i == 0, last = i == n - 1;
        if (m.role == "user" || (m.role == "system" && !first)) {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            std::string_view content = m.content;
            std::string_view reasoning;
            if (m.content.find("</think>") != std::string::npos) {
                const std::string_view all = m.content;
                content = lstripNl(afterLast(all, "</think>"));
                reasoning = lstripNl(afterLast(rstripNl(beforeFirst(all, "</think>")), "<think>"));
            }
            out += "<|im_start|>assistant\n";
            if (i > lastQueryIndex && (last || !reasoning.empty())) {
                out += "<think>\n";
                out += stripNl(reasoning);
                out += "\n</think>\n\n";
                out += lstripNl(content);
            } else {
                out += content;
            }
            out += "<|im_end|>\n";
        } else if (m.role == "tool") {
            if (first || messages[static_cast<std::size_t>(i - 1)].role != "tool") out += "<|im_start|>user";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
            if (last || messages[static_cast<std::size_t>(i + 1)].role != "tool") out += "<|im_end|>\n";
        }
        // A first system message was rendered above.
    }

    if (addGenerationPrompt) {
        out += "<|im_start|>assistant\n";
        if (!enableThinking) out += "<think>\n\n</think>\n\n";
    }
    return out;
}

}  // namespace draftscope
