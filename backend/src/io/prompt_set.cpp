#include "draftscope/prompt_set.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

namespace draftscope {

namespace {

using nlohmann::json;

std::string idString(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
        return v.dump();
    }
    return {};
}

const char* typeName(const json& v) {
    return v.type_name();  // "string", "array", "object", "number", "boolean", "null"
}

}  // namespace

int PromptSetEntry::userTurns() const {
    if (!chat) return 1;
    int n = 0;
    for (const auto& m : messages) n += m.role == "user";
    return n;
}

std::string PromptSetEntry::firstUserText() const {
    if (!chat) return text;
    for (const auto& m : messages)
        if (m.role == "user") return m.content;
    return {};
}

std::vector<PromptSetEntry> parsePromptSet(const std::string& jsonl, const std::string& source) {
    std::vector<PromptSetEntry> out;
    std::istringstream in(jsonl);
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
        ++lineNo;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        const std::string where = "prompt set '" + source + "' line " + std::to_string(lineNo);
        auto fail = [&](const std::string& why) -> void { throw Error(where + ": " + why); };
        checkJsonDepth(line.data(), line.data() + line.size(), where, 64);
        json o;
        try {
            o = json::parse(line);
        } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
            fail("invalid JSON (" + escapeNonPrintable(e.what()) + ")");
        }
        if (!o.is_object()) fail(std::string("expected a JSON object, found ") + typeName(o));
        PromptSetEntry e;
        e.line = lineNo;
        for (const char* key : {"id", "task_id", "question_id"})
            if (o.contains(key) && !(e.id = idString(o[key])).empty()) break;
        if (e.id.empty()) e.id = std::to_string(lineNo);

        auto userTurns = [&](const json& list, const char* field) {
            if (list.empty()) fail(std::string("'") + field + "' is an empty list (expected at least one user turn)");
            for (std::size_t i = 0; i < list.size(); ++i) {
                if (!list[i].is_string())
                    fail(std::string("'") + field + "[" + std::to_string(i) + "]' is " + typeName(list[i]) +
                         ", expected a string");
                e.messages.push_back({"user", list[i].get<std::string>()});
            }
            e.chat = true;
        };
        if (o.contains("prompt") && o["prompt"].is_string()) {
            e.text = o["prompt"].get<std::string>();
            if (e.text.empty()) fail("'prompt' is an empty string");
        } else if (o.contains("prompt") && o["prompt"].is_array()) {
            userTurns(o["prompt"], "prompt");
        } else if (o.contains("prompt")) {
            fail(std::string("'prompt' is ") + typeName(o["prompt"]) + ", expected a string or a list of strings");
        } else if (o.contains("turns")) {
            if (!o["turns"].is_array()) fail(std::string("'turns' is ") + typeName(o["turns"]) + ", expected a list of strings");
            userTurns(o["turns"], "turns");
        } else if (o.contains("messages")) {
            const auto& ms = o["messages"];
            if (!ms.is_array() || ms.empty()) fail("'messages' must be a non-empty list of {\"role\", \"content\"} objects");
            for (std::size_t i = 0; i < ms.size(); ++i) {
                const auto& m = ms[i];
                const std::string at = "'messages[" + std::to_string(i) + "]'";
                if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
                    !m["content"].is_string())
                    fail(at + " must be an object with string fields 'role' and 'content'");
                const auto role = m["role"].get<std::string>();
                if (role != "system" && role != "user" && role != "assistant")
                    fail(at + " has role '" + role + "', expected system, user or assistant");
                e.messages.push_back({role, m["content"].get<std::string>()});
            }
            e.chat = true;
            if (e.userTurns() == 0) fail("'messages' has no message with role 'user'");
        } else {
            fail("no 'prompt', 'turns' or 'messages' field (expected one of them)");
        }
        out.push_back(std::move(e));
    }
    if (out.empty()) throw Error("prompt set '" + source + "' has no prompts (every line is empty)");
    return out;
}

std::vector<PromptSetEntry> loadPromptSetFile(const std::string& path) {
    return parsePromptSet(readFileToString(path), path);
}

PromptSpec promptSpecForTurn(const PromptSetEntry& entry, int turn, const std::vector<std::string>& answers,
                             bool thinking, bool chatWrapRaw) {
    const int turns = entry.userTurns();
    if (turn < 0 || turn >= turns)
        throw Error("prompt '" + entry.id + "' has " + std::to_string(turns) + " user turn(s); turn " +
                    std::to_string(turn + 1) + " does not exist");
    if (static_cast<int>(answers.size()) < turn)
        throw Error("prompt '" + entry.id + "' turn " + std::to_string(turn + 1) + " needs the answers to the " +
                    std::to_string(turn) + " earlier turn(s), got " + std::to_string(answers.size()));
    PromptSpec spec;
    spec.kind = PromptSpec::Kind::Text;
    spec.thinking = thinking;
    if (!entry.chat) {
        spec.text = entry.text;
        spec.chat = chatWrapRaw;
        return spec;
    }
    // The conversation up to and including user turn `turn`.
    std::vector<ChatMessage> conv;
    int seenUser = 0;
    for (std::size_t i = 0; i < entry.messages.size(); ++i) {
        const auto& m = entry.messages[i];
        conv.push_back(m);
        if (m.role != "user") continue;
        if (seenUser == turn) break;
        const bool fileHasReply = i + 1 < entry.messages.size() && entry.messages[i + 1].role == "assistant";
        if (!fileHasReply) conv.push_back({"assistant", answers[static_cast<std::size_t>(seenUser)]});
        ++seenUser;
    }
    if (conv.size() == 1) {  // one user message: the engine's own one-turn ChatML
        spec.text = conv.front().content;
        spec.chat = true;
        return spec;
    }
    spec.text = renderChatML(conv, /*addGenerationPrompt=*/true, thinking);
    spec.chat = false;
    return spec;
}

}  // namespace draftscope
