#pragma once
// Reading tokenizer.json and tokenizer_config.json: typed field access with messages that
// name the field, and a streaming parse that keeps the big model.vocab / model.merges out of
// the DOM. Private to the tokenizer.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace draftscope::text {

using json = nlohmann::json;

/// Largest token id + 1 that a tokenizer may use.
constexpr std::int64_t kMaxTokenId = std::int64_t{1} << 24;

/// Reads and parses a small JSON file (tokenizer_config.json). Throws Error naming the path.
json readJsonFile(const std::string& path);
/// JSON type name of `j` for messages ("string", "object", ...).
std::string typeName(const json& j);
/// obj[key] as a boolean, `def` when absent or null. Throws Error naming where.key otherwise.
bool getBool(const json& obj, const char* key, bool def, const std::string& where);
/// obj[key] as a string. Throws Error naming where.key if absent or not a string.
std::string getString(const json& obj, const char* key, const std::string& where);
/// `v` as a token id in 0..kMaxTokenId-1. Throws Error naming `where` otherwise.
std::int32_t getId(const json& v, const std::string& where);

/// tokenizer.json with model.vocab (an object) and model.merges (an array) streamed: they are
/// the bulk of the file (151k entries each for Qwen3) and are collected straight into vectors
/// instead of a DOM, which makes loading ~3x faster. Everything else is in `root`, where the
/// streamed vocab / merges are left as empty placeholders.
struct TokenizerJson {
    json root;
    bool vocabStreamed = false, mergesStreamed = false;
    std::vector<std::pair<std::string, std::int32_t>> vocab;   ///< in file order
    std::vector<std::pair<std::string, std::string>> merges;   ///< in file order
};

/// Parses the text of a tokenizer.json. Throws Error "<where> is not valid JSON: ..." on a
/// syntax error and "<where>: model.vocab[...] / model.merges[...]: ..." on a bad shape inside
/// the streamed parts.
TokenizerJson parseTokenizerJson(const std::string& text, const std::string& where);

}  // namespace draftscope::text
