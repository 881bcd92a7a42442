// Loading a tokenizer: tokenizer.json section by section (model, added_tokens, normalizer,
// pre_tokenizer) and tokenizer_config.json's special tokens.

#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "text/tokenizer_impl.h"
#include "text/tokenizer_json.h"

namespace draftscope {

using namespace text;
namespace fs = std::filesystem;

void Tokenizer::Impl::loadTokenizerJson(const fs::path& file) {
    path = file.string();
    const std::string where = "'" + path + "'";
    TokenizerJson doc;
    {
        const std::string text = readFileToString(path);
        checkJsonDepth(text.data(), text.data() + text.size(), path);
        doc = parseTokenizerJson(text, where);
    }
    const json& j = doc.root;
    if (!j.is_object()) throw Error(where + ": expected a JSON object at the top level, found " + typeName(j));

    const auto model = j.find("model");
    if (model == j.end() || !model->is_object())
        throw Error(where + ": 'model' is missing (expected an object with type BPE, vocab and merges)");
    try {
        loadModel(*model, doc);
    } catch (const Error& e) {
        throw Error(where + ": " + e.what());
    }

    if (const auto at = j.find("added_tokens"); at != j.end() && !at->is_null()) {
        if (!at->is_array()) throw Error(where + ": added_tokens: expected an array, found " + typeName(*at));
        try {
            loadAddedTokens(*at);
        } catch (const Error& e) {
            throw Error(where + ": " + e.what());
        }
    }

    try {
        if (const auto n = j.find("normalizer"); n != j.end()) loadNormalizer(*n, "normalizer");
        bool sawByteLevel = false;
        const auto p = j.find("pre_tokenizer");
        if (p == j.end() || p->is_null())
            throw Error("pre_tokenizer is missing (expected ByteLevel or a Sequence containing ByteLevel)");
        loadPreTokenizer(*p, "pre_tokenizer", sawByteLevel);
        if (!sawByteLevel)
            throw Error("pre_tokenizer has no ByteLevel step; only byte-level BPE tokenizers are supported");
    } catch (const Error& e) {
        throw Error(where + ": " + e.what());
    }

    try {
        finishAddedTokens();
    } catch (const Error& e) {
        throw Error(where + ": added_tokens: " + e.what());
    }
}

void Tokenizer::Impl::loadConfig(const fs::path& file) {
    const std::string f = file.string();
    const json j = readJsonFile(f);
    if (!j.is_object()) throw Error("'" + f + "': expected a JSON object at the top level, found " + typeName(j));
    auto tokenField = [&](const char* key) -> std::optional<std::int64_t> {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return std::nullopt;
        std::string content;
        if (it->is_string()) content = it->get<std::string>();
        else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
            content = (*it)["content"].get<std::string>();
        else
            throw Error("'" + f + "': " + key + ": expected a string, {\"content\": string} or null, found " + it->dump());
        const auto id = lookup(content);
        if (!id)
            throw Error("'" + f + "': " + key + " \"" + content + "\" is not a token of '" + path + "'");
        return id;
    };
    eosId = tokenField("eos_token");
    padId = tokenField("pad_token");
    if (const auto ct = j.find("chat_template"); ct != j.end())
        chatTemplate = (ct->is_string() && !ct->get<std::string>().empty()) || (ct->is_array() && !ct->empty());
}

}  // namespace draftscope
