#include "text/tokenizer_json.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"

namespace draftscope::text {

json readJsonFile(const std::string& path) {
    const std::string text = readFileToString(path);
    checkJsonDepth(text.data(), text.data() + text.size(), path);
    try {
        return json::parse(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
        throw Error("'" + path + "' is not valid JSON: " + escapeNonPrintable(e.what()));
    }
}

std::string typeName(const json& j) { return j.type_name(); }

bool getBool(const json& obj, const char* key, bool def, const std::string& where) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return def;
    if (!it->is_boolean())
        throw Error(where + "." + key + ": expected a boolean, found " + typeName(*it));
    return it->get<bool>();
}

std::string getString(const json& obj, const char* key, const std::string& where) {
    const auto it = obj.find(key);
    if (it == obj.end()) throw Error(where + "." + key + " is missing (expected a string)");
    if (!it->is_string()) throw Error(where + "." + key + ": expected a string, found " + typeName(*it));
    return it->get<std::string>();
}

std::int32_t getId(const json& v, const std::string& where) {
    if (!v.is_number_integer())
        throw Error(where + ": expected a non-negative integer token id, found " + typeName(v));
    const auto id = v.get<std::int64_t>();
    if (id < 0 || id >= kMaxTokenId)
        throw Error(where + ": token id " + std::to_string(id) + " is out of range (expected 0.." +
                    std::to_string(kMaxTokenId - 1) + ")");
    return static_cast<std::int32_t>(id);
}

namespace {

// The SAX handler behind parseTokenizerJson. Shape errors inside the streamed parts abort the
// parse with `error` set; JSON syntax errors set `syntaxError`.
class TokenizerJsonReader final : public json::json_sax_t {
public:
    json root;
    bool vocabStreamed = false, mergesStreamed = false;
    std::vector<std::pair<std::string, std::int32_t>> vocab;
    std::vector<std::pair<std::string, std::string>> merges;
    std::string error;
    std::string syntaxError;

    bool null() override { return scalar(nullptr, "null"); }
    bool boolean(bool v) override { return scalar(v, "a boolean"); }
    bool number_integer(number_integer_t v) override {
        if (mode_ == Mode::Vocab) return vocabId(v);
        return scalar(v, "a number");
    }
    bool number_unsigned(number_unsigned_t v) override {
        if (mode_ == Mode::Vocab) {
            if (v >= static_cast<number_unsigned_t>(kMaxTokenId)) return idOutOfRange(std::to_string(v));
            return vocabId(static_cast<std::int64_t>(v));
        }
        return scalar(v, "a number");
    }
    bool number_float(number_float_t v, const string_t&) override { return scalar(v, "a number"); }
    bool binary(binary_t&) override { return scalar(nullptr, "binary data"); }
    bool string(string_t& v) override {
        if (mode_ == Mode::Merges) return mergeString(v);
        if (mode_ == Mode::MergePair) {
            pair_.push_back(std::move(v));
            return true;
        }
        return scalar(std::move(v), "a string");
    }

    bool start_object(std::size_t) override {
        if (mode_ != Mode::Dom) return bad("an object");
        if (stack_.size() == 2 && modelOpen_ && key_ == "vocab") {
            mode_ = Mode::Vocab;
            vocabStreamed = true;
            vocab.clear();
            insert(json::object());
            return true;
        }
        json* v = insert(json::object());
        if (stack_.size() == 1 && stack_[0]->is_object() && key_ == "model") modelOpen_ = true;
        stack_.push_back(v);
        return true;
    }
    bool key(string_t& k) override {
        key_ = std::move(k);
        return true;
    }
    bool end_object() override {
        if (mode_ == Mode::Vocab) {
            mode_ = Mode::Dom;
            return true;
        }
        stack_.pop_back();
        if (stack_.size() == 1) modelOpen_ = false;
        return true;
    }
    bool start_array(std::size_t) override {
        if (mode_ == Mode::Merges) {
            mode_ = Mode::MergePair;
            pair_.clear();
            return true;
        }
        if (mode_ != Mode::Dom) return bad("an array");
        if (stack_.size() == 2 && modelOpen_ && key_ == "merges") {
            mode_ = Mode::Merges;
            mergesStreamed = true;
            merges.clear();
            insert(json::array());
            return true;
        }
        stack_.push_back(insert(json::array()));
        return true;
    }
    bool end_array() override {
        if (mode_ == Mode::MergePair) {
            mode_ = Mode::Merges;
            if (pair_.size() != 2) return mergeError("a list of " + std::to_string(pair_.size()) + " strings");
            merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
            return true;
        }
        if (mode_ == Mode::Merges) {
            mode_ = Mode::Dom;
            return true;
        }
        stack_.pop_back();
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
        syntaxError = escapeNonPrintable(ex.what());
        return false;
    }

private:
    enum class Mode { Dom, Vocab, Merges, MergePair };
    Mode mode_ = Mode::Dom;
    std::vector<json*> stack_;
    std::string key_;
    bool modelOpen_ = false;  // inside the top-level "model" object
    std::vector<std::string> pair_;

    json* insert(json&& v) {
        if (stack_.empty()) {
            root = std::move(v);
            return &root;
        }
        json& top = *stack_.back();
        if (top.is_array()) {
            top.push_back(std::move(v));
            return &top.back();
        }
        json& slot = top[key_];
        slot = std::move(v);
        return &slot;
    }
    template <typename T>
    bool scalar(T&& v, const char* what) {
        if (mode_ != Mode::Dom) return bad(what);
        insert(json(std::forward<T>(v)));
        return true;
    }
    bool vocabId(std::int64_t v) {
        if (v < 0 || v >= kMaxTokenId) return idOutOfRange(std::to_string(v));
        vocab.emplace_back(std::move(key_), static_cast<std::int32_t>(v));
        return true;
    }
    bool idOutOfRange(const std::string& v) {
        error = "model.vocab[\"" + key_ + "\"]: token id " + v + " is out of range (expected 0.." +
                std::to_string(kMaxTokenId - 1) + ")";
        return false;
    }
    bool mergeString(const std::string& line) {
        const auto sp = line.find(' ');
        if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
            return mergeError("\"" + line + "\"");
        merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
        return true;
    }
    bool mergeError(const std::string& found) {
        error = "model.merges[" + std::to_string(merges.size()) +
                "]: expected [\"a\",\"b\"] or \"a b\" (two tokens separated by one space), found " + found;
        return false;
    }
    bool bad(const char* what) {
        if (mode_ == Mode::Vocab)
            error = "model.vocab[\"" + key_ + "\"]: expected a non-negative integer token id, found " + what;
        else
            mergeError(std::string(what) + (mode_ == Mode::MergePair ? " inside a pair" : ""));
        return false;
    }
};

}  // namespace

TokenizerJson parseTokenizerJson(const std::string& text, const std::string& where) {
    TokenizerJsonReader reader;
    if (!json::sax_parse(text, &reader)) {
        if (!reader.syntaxError.empty()) throw Error(where + " is not valid JSON: " + reader.syntaxError);
        throw Error(where + ": " + (reader.error.empty() ? std::string("malformed content") : reader.error));
    }
    TokenizerJson doc;
    doc.root = std::move(reader.root);
    doc.vocabStreamed = reader.vocabStreamed;
    doc.mergesStreamed = reader.mergesStreamed;
    doc.vocab = std::move(reader.vocab);
    doc.merges = std::move(reader.merges);
    return doc;
}

}  // namespace draftscope::text
