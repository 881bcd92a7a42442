// Byte-level BPE tokenizer reproducing HuggingFace `tokenizers` (Rust) for GPT-2 / Qwen style
// tokenizer.json files. Semantics follow tokenizers' AddedVocabulary (added-token splitting),
// normalizers (NFC ...), pre_tokenizers (Split, ByteLevel), models::bpe (rank-ordered merges,
// Word::merge_all) and decoders::ByteLevel (byte-level inverse + from_utf8_lossy).

#include "draftscope/tokenizer.h"

#include "draftscope/file_io.h"

#include "draftscope/errors.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace draftscope {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// UTF-8 helpers

struct Utf8Step {
    std::size_t len;  // bytes consumed: the sequence, or the maximal invalid subpart (>= 1)
    bool valid;
    char32_t cp;
};

// Decodes one UTF-8 sequence at s[i]. Invalid input consumes its "maximal subpart" (Unicode
// ch. 3, the rule Rust's String::from_utf8_lossy and WHATWG use for U+FFFD substitution).
Utf8Step utf8Next(const unsigned char* s, std::size_t n, std::size_t i) {
    const unsigned char b0 = s[i];
    if (b0 < 0x80) return {1, true, b0};
    std::size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    char32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
        cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        cp = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        else if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        cp = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        else if (b0 == 0xF4) hi = 0x8F;
    } else {
        return {1, false, 0};
    }
    for (std::size_t k = 1; k <= need; ++k) {
        if (i + k >= n) return {k, false, 0};
        const unsigned char b = s[i + k];
        if (b < lo || b > hi) return {k, false, 0};
        lo = 0x80;
        hi = 0xBF;
        cp = (cp << 6) | (b & 0x3F);
    }
    return {need + 1, true, cp};
}

const unsigned char* ubytes(std::string_view s) {
    return reinterpret_cast<const unsigned char*>(s.data());
}

void appendUtf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// from_utf8_lossy: each maximal invalid subpart becomes U+FFFD.
std::string utf8Lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    const auto* s = ubytes(bytes);
    for (std::size_t i = 0; i < bytes.size();) {
        const Utf8Step st = utf8Next(s, bytes.size(), i);
        if (st.valid) out.append(bytes.data() + i, st.len);
        else out += "\xEF\xBF\xBD";
        i += st.len;
    }
    return out;
}

// Byte offset of the first invalid UTF-8 byte, or npos.
std::size_t firstInvalidUtf8(std::string_view text) {
    const auto* s = ubytes(text);
    for (std::size_t i = 0; i < text.size();) {
        if (s[i] < 0x80) {
            ++i;
            continue;
        }
        const Utf8Step st = utf8Next(s, text.size(), i);
        if (!st.valid) return i;
        i += st.len;
    }
    return std::string_view::npos;
}

bool isAscii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Rust char::is_whitespace (Unicode White_Space), used by added tokens' lstrip / rstrip.
bool isWhitespaceCp(char32_t cp) {
    if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85) return true;
    if (cp < 0x80) return false;
    const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

// Word character for added tokens' single_word: Rust regex `\w` (Alphabetic, marks, decimal
// digits, connector punctuation, join controls), approximated by general categories.
bool isWordCp(char32_t cp) {
    if (cp < 0x80) return std::isalnum(static_cast<int>(cp)) != 0 || cp == '_';
    if (cp == 0x200C || cp == 0x200D) return true;
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

// Last code point of s (s is valid UTF-8, non-empty).
char32_t lastCp(std::string_view s) {
    std::size_t i = s.size() - 1;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
    return utf8Next(ubytes(s), s.size(), i).cp;
}

// ---------------------------------------------------------------------------------------
// GPT-2 byte <-> unicode alphabet (bytes_to_unicode in GPT-2's encoder.py / HF ByteLevel).

struct ByteAlphabet {
    std::array<char32_t, 256> byteToCp{};
    std::array<std::int16_t, 512> cpToByte{};  // -1 when the code point is not in the alphabet

    ByteAlphabet() {
        cpToByte.fill(-1);
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
            byteToCp[b] = cp;
            cpToByte[cp] = static_cast<std::int16_t>(b);
        }
    }
};

const ByteAlphabet& alphabet() {
    static const ByteAlphabet a;
    return a;
}

// HF ByteLevel decoder for one token string: if every char is in the byte alphabet, the mapped
// bytes; otherwise the string's own UTF-8 bytes. Returns whether the mapping applied.
bool byteLevelDecode(std::string_view token, std::string& out) {
    const auto& a = alphabet();
    out.clear();
    const auto* s = ubytes(token);
    for (std::size_t i = 0; i < token.size();) {
        const Utf8Step st = utf8Next(s, token.size(), i);
        if (!st.valid || st.cp >= a.cpToByte.size() || a.cpToByte[st.cp] < 0) {
            out.assign(token);
            return false;
        }
        out += static_cast<char>(a.cpToByte[st.cp]);
        i += st.len;
    }
    return true;
}

// ---------------------------------------------------------------------------------------
// PCRE2 wrapper

// HF compiles pre-tokenizer regexes with Oniguruma, whose Unicode `\s` is the White_Space
// property. PCRE2's UCP `\s` is \p{Z} plus \h and \v, which adds U+180E (MONGOLIAN VOWEL
// SEPARATOR, no longer White_Space since Unicode 6.3) -- enough to change Qwen3's split of
// text containing it. Rewriting \s / \S to \p{White_Space} / \P{White_Space} (valid inside and
// outside character classes) gives Oniguruma's set exactly.
std::string onigToPcre2(const std::string& pattern) {
    std::string out;
    out.reserve(pattern.size() + 32);
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c != '\\' || i + 1 >= pattern.size()) {
            out += c;
            continue;
        }
        const char n = pattern[++i];
        if (n == 's') {
            out += "\\p{White_Space}";
        } else if (n == 'S') {
            out += "\\P{White_Space}";
        } else if (n == 'Q') {  // \Q...\E quotes literally: copy through unchanged
            const std::size_t e = pattern.find("\\E", i + 1);
            const std::size_t stop = e == std::string::npos ? pattern.size() : e + 2;
            out.append(pattern, i - 1, stop - (i - 1));
            i = stop - 1;
        } else {
            out += c;
            out += n;
        }
    }
    return out;
}

class Regex {
public:
    Regex(const std::string& pattern, bool literal, const std::string& where) {
        int errcode = 0;
        PCRE2_SIZE erroff = 0;
        // PCRE2_LITERAL does not combine with PCRE2_UCP (nor needs it).
        const std::uint32_t opts = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
        const std::string translated = literal ? pattern : onigToPcre2(pattern);
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), opts, &errcode,
                              &erroff, nullptr);
        if (!code_) {
            PCRE2_UCHAR buf[256];
            pcre2_get_error_message(errcode, buf, sizeof buf);
            throw Error(where + ": regex failed to compile at offset " + std::to_string(erroff) + ": " +
                        reinterpret_cast<const char*>(buf) + " (pattern: " + pattern +
                        (translated != pattern ? ", as given to PCRE2: " + translated : std::string()) + ")");
        }
        jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
    }
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;
    ~Regex() { pcre2_code_free(code_); }
    const pcre2_code* code() const { return code_; }
    bool jit() const { return jit_; }

private:
    pcre2_code* code_ = nullptr;
    bool jit_ = false;
};

// PCRE2 scratch (match data, JIT stack), one per thread (see threadScratch()).
class MatchScratch {
public:
    MatchScratch() {
        data_ = pcre2_match_data_create(4, nullptr);
        ctx_ = pcre2_match_context_create(nullptr);
        stack_ = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
        if (!data_ || !ctx_) throw Error("tokenizer: out of memory allocating PCRE2 match data");
        if (stack_) pcre2_jit_stack_assign(ctx_, nullptr, stack_);
    }
    MatchScratch(const MatchScratch&) = delete;
    MatchScratch& operator=(const MatchScratch&) = delete;
    ~MatchScratch() {
        if (stack_) pcre2_jit_stack_free(stack_);
        pcre2_match_context_free(ctx_);
        pcre2_match_data_free(data_);
    }
    pcre2_match_data* data() { return data_; }
    pcre2_match_context* ctx() { return ctx_; }

private:
    pcre2_match_data* data_ = nullptr;
    pcre2_match_context* ctx_ = nullptr;
    pcre2_jit_stack* stack_ = nullptr;
};

MatchScratch& threadScratch() {
    thread_local MatchScratch scratch;
    return scratch;
}

// GPT-2's pre-tokenizer regex (HF ByteLevel with use_regex = true).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ---------------------------------------------------------------------------------------
// JSON helpers

std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw Error("cannot open '" + path.string() + "' for reading");
    const std::streamoff size = in.tellg();
    std::string text(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
    in.seekg(0);
    if (size > 0 && !in.read(text.data(), size)) throw Error("cannot read '" + path.string() + "'");
    return text;
}

json readJsonFile(const fs::path& path) {
    const std::string text = readFile(path);
    checkJsonDepth(text.data(), text.data() + text.size(), path.string());
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        throw Error("'" + path.string() + "' is not valid JSON: " + e.what());
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

constexpr std::int64_t kMaxTokenId = std::int64_t{1} << 24;

std::int32_t getId(const json& v, const std::string& where) {
    if (!v.is_number_integer())
        throw Error(where + ": expected a non-negative integer token id, found " + typeName(v));
    const auto id = v.get<std::int64_t>();
    if (id < 0 || id >= kMaxTokenId)
        throw Error(where + ": token id " + std::to_string(id) + " is out of range (expected 0.." +
                    std::to_string(kMaxTokenId - 1) + ")");
    return static_cast<std::int32_t>(id);
}

// Streaming reader for tokenizer.json. model.vocab (an object) and model.merges (an array) are
// the bulk of the file (151k entries each for Qwen3); they are collected straight into vectors
// instead of a DOM, which makes loading ~3x faster. Everything else is built into `root`, where
// streamed vocab / merges are left as empty placeholders. Shape errors inside the streamed parts
// abort the parse with `error` set; JSON syntax errors set `syntaxError`.
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
        syntaxError = ex.what();
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

// ---------------------------------------------------------------------------------------
// Tokenizer pieces

struct AddedToken {
    std::int32_t id = 0;
    std::string content;
    std::string pattern;  // what is matched: content, normalised when `normalized` (as HF does)
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    bool special = false;
};

// Leftmost-longest matcher over a set of added tokens (HF AddedVocabulary's aho-corasick
// with MatchKind::LeftmostLongest).
class AddedMatcher {
public:
    void build(const std::vector<AddedToken>& tokens, bool normalized) {
        for (auto& v : byFirst_) v.clear();
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (tokens[i].normalized != normalized || tokens[i].pattern.empty()) continue;
            byFirst_[static_cast<unsigned char>(tokens[i].pattern[0])].push_back(i);
            any_ = true;
        }
        for (auto& v : byFirst_)
            std::stable_sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) {
                return tokens[a].pattern.size() > tokens[b].pattern.size();
            });
    }
    bool empty() const { return !any_; }
    // Longest token matching at text[pos], or -1.
    long longestAt(const std::vector<AddedToken>& tokens, std::string_view text, std::size_t pos) const {
        for (std::size_t idx : byFirst_[static_cast<unsigned char>(text[pos])]) {
            const std::string& c = tokens[idx].pattern;
            if (text.size() - pos >= c.size() && text.compare(pos, c.size(), c) == 0) return static_cast<long>(idx);
        }
        return -1;
    }

private:
    std::array<std::vector<std::size_t>, 256> byFirst_;
    bool any_ = false;
};

enum class NormForm { NFC, NFD, NFKC, NFKD };

struct PreTokStep {
    enum class Kind { Split, ByteLevel } kind = Kind::Split;
    std::shared_ptr<Regex> regex;  // Split pattern, or GPT-2 regex for ByteLevel(use_regex)
    bool removeMatches = false;    // Split behavior "Removed"
    bool invert = false;
    bool addPrefixSpace = false;   // ByteLevel
};

struct Segment {
    std::string text;          // non-empty when addedIndex < 0
    long addedIndex = -1;      // index into added tokens
};

constexpr std::uint8_t kInVocab = 1, kAdded = 2, kSpecial = 4;

}  // namespace

// =========================================================================================

struct Tokenizer::Impl {
    std::string path;

    // Model
    std::unordered_map<std::string, std::int32_t> stringToId;  // vocab keys (byte-level alphabet)
    std::unordered_map<std::string, std::int32_t> bytesToId;   // raw bytes -> id (only with ignore_merges)
    std::array<std::int32_t, 256> byteToId{};                  // single-byte tokens (-1 if absent)
    struct MergeInfo {
        std::int32_t rank;
        std::int32_t newId;
    };
    std::unordered_map<std::uint64_t, MergeInfo> merges;
    std::optional<std::int32_t> unkId;
    bool fuseUnk = false;
    bool ignoreMerges = false;

    // Per-id tables (size = vocabSize)
    std::vector<std::string> idString;  // tokenizer.json string
    std::vector<std::string> idBytes;   // decoded bytes
    std::vector<std::uint8_t> idFlags;

    // Added tokens
    std::vector<AddedToken> added;
    std::unordered_map<std::string, std::int32_t> addedByContent;
    std::unordered_set<std::string> specialContents;  // contents of tokens marked special
    AddedMatcher rawMatcher, normMatcher;

    // Pipeline
    std::vector<NormForm> normalizers;
    std::vector<PreTokStep> preTok;

    // tokenizer_config.json
    std::optional<std::int64_t> eosId, padId;
    bool chatTemplate = false;

    // BPE cache (word bytes -> ids)
    mutable std::mutex cacheMutex;
    mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache;
    static constexpr std::size_t kCacheCapacity = 200000;
    static constexpr std::size_t kCacheMaxWord = 256;

    static std::uint64_t pairKey(std::int32_t a, std::int32_t b) {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    }

    // ---- loading ----
    void loadTokenizerJson(const fs::path& file);
    void loadModel(const json& model, TokenizerJsonReader& streamed);
    void loadAddedTokens(const json& arr);
    void finishAddedTokens();
    void loadNormalizer(const json& n, const std::string& where);
    void loadPreTokenizer(const json& p, const std::string& where, bool& sawByteLevel);
    void loadConfig(const fs::path& file);

    // ---- encoding ----
    void splitAdded(std::string_view text, const AddedMatcher& m, std::vector<Segment>& out) const;
    std::string normalize(std::string_view text) const;
    void preTokenize(std::string text, MatchScratch& scratch, std::vector<std::string>& pieces) const;
    void bpe(const std::string& word, std::vector<std::int64_t>& out) const;
    std::vector<std::int32_t> bpeUncached(const std::string& word) const;

    std::optional<std::int64_t> lookup(std::string_view content) const {
        if (auto it = addedByContent.find(std::string(content)); it != addedByContent.end()) return it->second;
        if (auto it = stringToId.find(std::string(content)); it != stringToId.end()) return it->second;
        return std::nullopt;
    }
    bool known(std::int64_t id) const {
        return id >= 0 && id < static_cast<std::int64_t>(idFlags.size()) && idFlags[static_cast<std::size_t>(id)] != 0;
    }
};

// ---------------------------------------------------------------------------------------
// Loading

void Tokenizer::Impl::loadTokenizerJson(const fs::path& file) {
    path = file.string();
    const std::string where = "'" + path + "'";
    TokenizerJsonReader reader;
    {
        const std::string text = readFile(file);
        checkJsonDepth(text.data(), text.data() + text.size(), path);
        if (!json::sax_parse(text, &reader)) {
            if (!reader.syntaxError.empty()) throw Error(where + " is not valid JSON: " + reader.syntaxError);
            throw Error(where + ": " + (reader.error.empty() ? std::string("malformed content") : reader.error));
        }
    }
    const json& j = reader.root;
    if (!j.is_object()) throw Error(where + ": expected a JSON object at the top level, found " + typeName(j));

    const auto model = j.find("model");
    if (model == j.end() || !model->is_object())
        throw Error(where + ": 'model' is missing (expected an object with type BPE, vocab and merges)");
    try {
        loadModel(*model, reader);
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

void Tokenizer::Impl::loadModel(const json& model, TokenizerJsonReader& streamed) {
    if (const auto t = model.find("type"); t != model.end() && !t->is_null()) {
        if (!t->is_string() || t->get<std::string>() != "BPE")
            throw Error("model.type: expected \"BPE\", found " + (t->is_string() ? "\"" + t->get<std::string>() + "\"" : typeName(*t)));
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const auto it = model.find(key);
        if (it != model.end() && it->is_string() && !it->get<std::string>().empty())
            throw Error(std::string("model.") + key + ": expected null or \"\", found \"" + it->get<std::string>() +
                        "\" (not supported)");
    }
    fuseUnk = getBool(model, "fuse_unk", false, "model");
    ignoreMerges = getBool(model, "ignore_merges", false, "model");

    // model.vocab / model.merges were streamed by TokenizerJsonReader when they have the right
    // JSON type; otherwise the DOM holds whatever was there and we report it.
    const auto vocab = model.find("vocab");
    if (vocab == model.end() || vocab->is_null())
        throw Error("model.vocab is missing (expected an object mapping token strings to ids)");
    if (!streamed.vocabStreamed) throw Error("model.vocab: expected an object, found " + typeName(*vocab));
    if (streamed.vocab.empty()) throw Error("model.vocab is empty");

    std::int32_t maxId = -1;
    stringToId.reserve(streamed.vocab.size() * 2);
    for (auto& [key, id] : streamed.vocab) {
        maxId = std::max(maxId, id);
        stringToId[std::move(key)] = id;  // a repeated key keeps its last id, as a JSON object does
    }
    streamed.vocab = {};
    idString.assign(static_cast<std::size_t>(maxId) + 1, {});
    idBytes.assign(static_cast<std::size_t>(maxId) + 1, {});
    idFlags.assign(static_cast<std::size_t>(maxId) + 1, 0);
    if (ignoreMerges) bytesToId.reserve(stringToId.size() * 2);
    std::string bytes;
    for (const auto& [key, id] : stringToId) {
        idString[id] = key;
        idFlags[id] |= kInVocab;
        if (byteLevelDecode(key, bytes) && ignoreMerges) bytesToId.emplace(bytes, id);
        idBytes[id] = bytes;
    }
    const auto& a = alphabet();
    for (int b = 0; b < 256; ++b) {
        std::string s;
        appendUtf8(s, a.byteToCp[b]);
        const auto it = stringToId.find(s);
        byteToId[b] = it == stringToId.end() ? -1 : it->second;
    }

    if (const auto unk = model.find("unk_token"); unk != model.end() && !unk->is_null()) {
        if (!unk->is_string()) throw Error("model.unk_token: expected a string or null, found " + typeName(*unk));
        const auto it = stringToId.find(unk->get<std::string>());
        if (it == stringToId.end())
            throw Error("model.unk_token: \"" + unk->get<std::string>() + "\" is not in model.vocab");
        unkId = it->second;
    }

    const auto mergesIt = model.find("merges");
    if (mergesIt == model.end() || mergesIt->is_null())
        throw Error("model.merges is missing (expected an array of [\"a\",\"b\"] pairs or \"a b\" strings)");
    if (!streamed.mergesStreamed) throw Error("model.merges: expected an array, found " + typeName(*mergesIt));
    merges.reserve(streamed.merges.size() * 2);
    std::int32_t rank = 0;
    std::string joined;
    for (const auto& [left, right] : streamed.merges) {
        joined.assign(left);
        joined.append(right);
        const auto ia = stringToId.find(left);
        const auto ib = stringToId.find(right);
        const auto iab = stringToId.find(joined);
        const std::string* missing = nullptr;
        if (ia == stringToId.end()) missing = &left;
        else if (ib == stringToId.end()) missing = &right;
        else if (iab == stringToId.end()) missing = &joined;
        if (missing)
            throw Error("model.merges[" + std::to_string(rank) + "]: token \"" + *missing + "\" is not in model.vocab");
        // HF collects merges into a HashMap: a repeated pair keeps its last rank.
        merges[pairKey(ia->second, ib->second)] = MergeInfo{rank, iab->second};
        ++rank;
    }
    streamed.merges = {};
}

// Ids are assigned the way HF does when it deserialises added_tokens (TokenizerImpl +
// AddedVocabulary::add_tokens), not taken from the "id" fields: a content that is already an
// added token or a model.vocab key keeps that id, any other gets the next free id (model vocab
// size for the first, then max added id + 1). HF only warns when "id" disagrees; for files that
// HF wrote the two always agree.
void Tokenizer::Impl::loadAddedTokens(const json& arr) {
    const auto vocabLen = static_cast<std::int64_t>(stringToId.size());
    std::optional<std::int64_t> maxAdded;
    std::size_t i = 0;
    for (const auto& t : arr) {
        const std::string where = "added_tokens[" + std::to_string(i++) + "]";
        if (!t.is_object()) throw Error(where + ": expected an object, found " + typeName(t));
        AddedToken tok;
        const auto idIt = t.find("id");
        if (idIt == t.end()) throw Error(where + ".id is missing (expected an integer)");
        getId(*idIt, where + ".id");  // validated; see above for the id actually used
        tok.content = getString(t, "content", where);
        if (tok.content.empty()) throw Error(where + ".content: expected a non-empty string");
        if (firstInvalidUtf8(tok.content) != std::string::npos) throw Error(where + ".content is not valid UTF-8");
        tok.singleWord = getBool(t, "single_word", false, where);
        tok.lstrip = getBool(t, "lstrip", false, where);
        tok.rstrip = getBool(t, "rstrip", false, where);
        tok.normalized = getBool(t, "normalized", true, where);
        tok.special = getBool(t, "special", false, where);

        const bool duplicate = std::any_of(added.begin(), added.end(), [&](const AddedToken& a) {
            return a.content == tok.content && a.singleWord == tok.singleWord && a.lstrip == tok.lstrip &&
                   a.rstrip == tok.rstrip && a.normalized == tok.normalized && a.special == tok.special;
        });
        if (duplicate) continue;
        std::int64_t id;
        if (const auto a = addedByContent.find(tok.content); a != addedByContent.end()) id = a->second;
        else if (const auto v = stringToId.find(tok.content); v != stringToId.end()) id = v->second;
        else if (!maxAdded) id = vocabLen;
        else id = (*maxAdded >= vocabLen || vocabLen == 0) ? *maxAdded + 1 : vocabLen;
        if (id >= kMaxTokenId)
            throw Error(where + ": token id " + std::to_string(id) + " is out of range (expected 0.." +
                        std::to_string(kMaxTokenId - 1) + ")");
        tok.id = static_cast<std::int32_t>(id);
        addedByContent[tok.content] = tok.id;
        maxAdded = std::max(maxAdded.value_or(id), id);
        if (tok.special) specialContents.insert(tok.content);
        // added_tokens_map_r[id] = token: a later definition replaces an earlier one.
        const auto same = std::find_if(added.begin(), added.end(), [&](const AddedToken& a) { return a.id == tok.id; });
        if (same != added.end()) *same = std::move(tok);
        else added.push_back(std::move(tok));
    }
}

// Called once the normalizer is known: match patterns and per-id tables for added tokens.
void Tokenizer::Impl::finishAddedTokens() {
    std::int32_t maxId = static_cast<std::int32_t>(idFlags.size()) - 1;
    for (AddedToken& t : added) {
        t.pattern = t.normalized ? normalize(t.content) : t.content;
        maxId = std::max(maxId, t.id);
    }
    idString.resize(static_cast<std::size_t>(maxId) + 1);
    idBytes.resize(static_cast<std::size_t>(maxId) + 1);
    idFlags.resize(static_cast<std::size_t>(maxId) + 1, 0);
    std::string bytes;
    for (const AddedToken& t : added) {
        idString[t.id] = t.content;
        // HF decodes a normalized added token from its normalised form (AddedVocabulary's
        // normalized_cache), through the ByteLevel decoder like any other token.
        byteLevelDecode(t.normalized ? t.pattern : t.content, bytes);
        idBytes[t.id] = bytes;
        const bool special = specialContents.count(t.content) != 0;
        idFlags[t.id] = static_cast<std::uint8_t>((idFlags[t.id] & kInVocab) | kAdded | (special ? kSpecial : 0));
    }
    rawMatcher.build(added, false);
    normMatcher.build(added, true);
}

void Tokenizer::Impl::loadNormalizer(const json& n, const std::string& where) {
    if (n.is_null()) return;
    if (!n.is_object()) throw Error(where + ": expected an object or null, found " + typeName(n));
    const std::string type = getString(n, "type", where);
    if (type == "NFC") normalizers.push_back(NormForm::NFC);
    else if (type == "NFD") normalizers.push_back(NormForm::NFD);
    else if (type == "NFKC") normalizers.push_back(NormForm::NFKC);
    else if (type == "NFKD") normalizers.push_back(NormForm::NFKD);
    else if (type == "Sequence") {
        const auto list = n.find("normalizers");
        if (list == n.end() || !list->is_array()) throw Error(where + ".normalizers: expected an array");
        std::size_t i = 0;
        for (const auto& sub : *list) loadNormalizer(sub, where + ".normalizers[" + std::to_string(i++) + "]");
    } else {
        throw Error(where + ".type: \"" + type + "\" is not supported (expected NFC, NFD, NFKC, NFKD or Sequence)");
    }
}

void Tokenizer::Impl::loadPreTokenizer(const json& p, const std::string& where, bool& sawByteLevel) {
    if (!p.is_object()) throw Error(where + ": expected an object, found " + typeName(p));
    const std::string type = getString(p, "type", where);
    if (type == "Sequence") {
        const auto list = p.find("pretokenizers");
        if (list == p.end() || !list->is_array()) throw Error(where + ".pretokenizers: expected an array");
        std::size_t i = 0;
        for (const auto& sub : *list) loadPreTokenizer(sub, where + ".pretokenizers[" + std::to_string(i++) + "]", sawByteLevel);
    } else if (type == "Split") {
        PreTokStep step;
        step.kind = PreTokStep::Kind::Split;
        const auto pat = p.find("pattern");
        if (pat == p.end() || !pat->is_object())
            throw Error(where + ".pattern is missing (expected {\"Regex\": ...} or {\"String\": ...})");
        if (const auto r = pat->find("Regex"); r != pat->end() && r->is_string())
            step.regex = std::make_shared<Regex>(r->get<std::string>(), false, where + ".pattern.Regex");
        else if (const auto s = pat->find("String"); s != pat->end() && s->is_string())
            step.regex = std::make_shared<Regex>(s->get<std::string>(), true, where + ".pattern.String");
        else
            throw Error(where + ".pattern: expected {\"Regex\": string} or {\"String\": string}, found " + pat->dump());
        const std::string behavior = getString(p, "behavior", where);
        if (behavior == "Isolated") step.removeMatches = false;
        else if (behavior == "Removed") step.removeMatches = true;
        else
            throw Error(where + ".behavior: \"" + behavior + "\" is not supported (expected Isolated or Removed)");
        step.invert = getBool(p, "invert", false, where);
        preTok.push_back(std::move(step));
    } else if (type == "ByteLevel") {
        sawByteLevel = true;
        PreTokStep step;
        step.kind = PreTokStep::Kind::ByteLevel;
        step.addPrefixSpace = getBool(p, "add_prefix_space", true, where);
        if (getBool(p, "use_regex", true, where)) step.regex = std::make_shared<Regex>(kGpt2Pattern, false, where);
        preTok.push_back(std::move(step));
    } else {
        throw Error(where + ".type: \"" + type + "\" is not supported (expected Sequence, Split or ByteLevel)");
    }
}

void Tokenizer::Impl::loadConfig(const fs::path& file) {
    const std::string f = file.string();
    const json j = readJsonFile(file);
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

// ---------------------------------------------------------------------------------------
// Encoding

void Tokenizer::Impl::splitAdded(std::string_view text, const AddedMatcher& m, std::vector<Segment>& out) const {
    if (text.empty()) return;
    if (m.empty()) {
        out.push_back({std::string(text), -1});
        return;
    }
    std::size_t segStart = 0;  // start of the pending text segment
    std::size_t pos = 0;
    while (pos < text.size()) {
        const long idx = m.longestAt(added, text, pos);
        if (idx < 0) {
            ++pos;
            continue;
        }
        const AddedToken& tok = added[static_cast<std::size_t>(idx)];
        std::size_t start = pos, stop = pos + tok.pattern.size();
        if (tok.singleWord) {
            const bool startOk = start == 0 || !isWordCp(lastCp(text.substr(0, start)));
            const bool stopOk = stop == text.size() || !isWordCp(utf8Next(ubytes(text), text.size(), stop).cp);
            if (!startOk || !stopOk) {
                pos = stop;  // aho-corasick resumes after the rejected match
                continue;
            }
        }
        if (tok.lstrip) {
            while (start > segStart) {
                std::size_t k = start - 1;
                while (k > segStart && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
                if (!isWhitespaceCp(utf8Next(ubytes(text), text.size(), k).cp)) break;
                start = k;
            }
        }
        if (tok.rstrip) {
            while (stop < text.size()) {
                const Utf8Step st = utf8Next(ubytes(text), text.size(), stop);
                if (!isWhitespaceCp(st.cp)) break;
                stop += st.len;
            }
        }
        if (start > segStart) out.push_back({std::string(text.substr(segStart, start - segStart)), -1});
        out.push_back({{}, idx});
        segStart = pos = stop;
    }
    if (segStart < text.size()) out.push_back({std::string(text.substr(segStart)), -1});
}

std::string Tokenizer::Impl::normalize(std::string_view text) const {
    if (normalizers.empty() || isAscii(text)) return std::string(text);
    std::string cur(text);
    for (NormForm f : normalizers) {
        int opts = UTF8PROC_STABLE;
        switch (f) {
        case NormForm::NFC: opts |= UTF8PROC_COMPOSE; break;
        case NormForm::NFD: opts |= UTF8PROC_DECOMPOSE; break;
        case NormForm::NFKC: opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
        case NormForm::NFKD: opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
        }
        utf8proc_uint8_t* outBuf = nullptr;
        const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(cur.data()),
                                                static_cast<utf8proc_ssize_t>(cur.size()), &outBuf,
                                                static_cast<utf8proc_option_t>(opts));
        if (n < 0) {
            std::free(outBuf);
            throw Error(std::string("tokenizer: Unicode normalisation failed: ") + utf8proc_errmsg(n));
        }
        cur.assign(reinterpret_cast<const char*>(outBuf), static_cast<std::size_t>(n));
        std::free(outBuf);
    }
    return cur;
}

namespace {

// Splits `s` by `re` (HF Split with behavior Isolated or Removed), appending non-empty pieces.
void regexSplit(const Regex& re, const std::string& s, bool removeMatches, bool invert, MatchScratch& scratch,
                std::vector<std::string>& out) {
    const std::size_t n = s.size();
    std::size_t last = 0, pos = 0;
    auto emit = [&](std::size_t a, std::size_t b, bool isMatch) {
        if (b <= a) return;
        if (invert) isMatch = !isMatch;
        if (removeMatches && isMatch) return;
        out.emplace_back(s, a, b - a);
    };
    while (pos <= n) {
        const int rc = pcre2_match(re.code(), reinterpret_cast<PCRE2_SPTR>(s.data()), n, pos, PCRE2_NO_UTF_CHECK,
                                   scratch.data(), scratch.ctx());
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR buf[256];
            pcre2_get_error_message(rc, buf, sizeof buf);
            throw Error(std::string("tokenizer: pre-tokenizer regex failed while matching: ") +
                        reinterpret_cast<const char*>(buf));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch.data());
        const std::size_t ms = ov[0], me = ov[1];
        if (me <= ms) {  // empty match: contributes nothing; step over one character
            if (ms >= n) break;
            pos = ms + utf8Next(ubytes(s), n, ms).len;
            continue;
        }
        emit(last, ms, false);
        emit(ms, me, true);
        last = pos = me;
    }
    emit(last, n, false);
}

}  // namespace

void Tokenizer::Impl::preTokenize(std::string text, MatchScratch& scratch, std::vector<std::string>& pieces) const {
    std::vector<std::string> cur, next;
    cur.push_back(std::move(text));
    for (const PreTokStep& step : preTok) {
        next.clear();
        for (std::string& piece : cur) {
            if (step.kind == PreTokStep::Kind::ByteLevel) {
                if (step.addPrefixSpace && (piece.empty() || piece.front() != ' ')) piece.insert(piece.begin(), ' ');
                if (!step.regex) {
                    next.push_back(std::move(piece));
                    continue;
                }
                regexSplit(*step.regex, piece, false, false, scratch, next);
            } else {
                regexSplit(*step.regex, piece, step.removeMatches, step.invert, scratch, next);
            }
        }
        std::swap(cur, next);
    }
    for (auto& p : cur) pieces.push_back(std::move(p));
}

std::vector<std::int32_t> Tokenizer::Impl::bpeUncached(const std::string& word) const {
    if (ignoreMerges) {
        if (const auto it = bytesToId.find(word); it != bytesToId.end()) return {it->second};
    }
    struct Sym {
        std::int32_t id;
        std::int32_t prev;
        std::int32_t next;
        std::uint32_t len;
    };
    std::vector<Sym> syms;
    syms.reserve(word.size());
    // Initial symbols: one per byte (= one per byte-level char), as models::bpe::merge_word.
    bool prevUnk = false;
    for (unsigned char b : word) {
        std::int32_t id = byteToId[b];
        if (id < 0) {
            if (!unkId) continue;  // no unk token: HF drops the character
            if (fuseUnk && prevUnk) {
                syms.back().len += 1;
                continue;
            }
            id = *unkId;
            prevUnk = true;
        } else {
            prevUnk = false;
        }
        const auto i = static_cast<std::int32_t>(syms.size());
        syms.push_back({id, i - 1, -1, 1});
        if (i > 0) syms[static_cast<std::size_t>(i - 1)].next = i;
    }

    // Word::merge_all: a min-heap on (rank, position); stale entries are skipped when the pair
    // at that position no longer produces the entry's new id.
    struct Cand {
        std::int32_t pos, rank, newId;
    };
    auto cmp = [](const Cand& a, const Cand& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; };
    std::priority_queue<Cand, std::vector<Cand>, decltype(cmp)> heap(cmp);
    for (std::size_t i = 0; i + 1 < syms.size(); ++i) {
        const auto it = merges.find(pairKey(syms[i].id, syms[i + 1].id));
        if (it != merges.end()) heap.push({static_cast<std::int32_t>(i), it->second.rank, it->second.newId});
    }
    while (!heap.empty()) {
        const Cand top = heap.top();
        heap.pop();
        Sym& cur = syms[static_cast<std::size_t>(top.pos)];
        if (cur.len == 0 || cur.next < 0) continue;
        Sym& nx = syms[static_cast<std::size_t>(cur.next)];
        const auto it = merges.find(pairKey(cur.id, nx.id));
        if (it == merges.end() || it->second.newId != top.newId) continue;
        cur.id = top.newId;
        cur.len += nx.len;
        const std::int32_t nn = nx.next;
        nx.len = 0;
        cur.next = nn;
        if (nn >= 0) syms[static_cast<std::size_t>(nn)].prev = top.pos;
        if (cur.prev >= 0) {
            const auto l = merges.find(pairKey(syms[static_cast<std::size_t>(cur.prev)].id, cur.id));
            if (l != merges.end()) heap.push({cur.prev, l->second.rank, l->second.newId});
        }
        if (nn >= 0) {
            const auto r = merges.find(pairKey(cur.id, syms[static_cast<std::size_t>(nn)].id));
            if (r != merges.end()) heap.push({top.pos, r->second.rank, r->second.newId});
        }
    }
    std::vector<std::int32_t> ids;
    for (std::int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<std::size_t>(i)].next)
        ids.push_back(syms[static_cast<std::size_t>(i)].id);
    return ids;
}

void Tokenizer::Impl::bpe(const std::string& word, std::vector<std::int64_t>& out) const {
    const bool cacheable = word.size() < kCacheMaxWord;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cacheMutex);
        if (const auto it = cache.find(word); it != cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<std::int32_t> ids = bpeUncached(word);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cacheMutex);
        if (cache.size() >= kCacheCapacity) cache.clear();
        cache.emplace(word, std::move(ids));
    }
}

// =========================================================================================
// Public API

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

const Tokenizer::Impl& Tokenizer::impl() const {
    if (!impl_) throw Error("tokenizer: used after being moved from");
    return *impl_;
}

Tokenizer Tokenizer::fromFile(const std::string& tokenizerJsonPath) {
    const fs::path p(tokenizerJsonPath);
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
        throw Error("tokenizer file '" + tokenizerJsonPath + "' does not exist or is not a regular file");
    auto impl = std::make_unique<Impl>();
    impl->loadTokenizerJson(p);
    return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::fromDirectory(const std::string& dir) {
    const fs::path d(dir);
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw Error("tokenizer directory '" + dir + "' does not exist or is not a directory");
    const fs::path tj = d / "tokenizer.json";
    if (!fs::is_regular_file(tj, ec))
        throw Error("tokenizer.json not found: expected '" + tj.string() + "' in tokenizer directory '" + dir + "'");
    auto impl = std::make_unique<Impl>();
    impl->loadTokenizerJson(tj);
    const fs::path cfg = d / "tokenizer_config.json";
    if (fs::exists(cfg, ec)) impl->loadConfig(cfg);
    return Tokenizer(std::move(impl));
}

std::vector<std::int64_t> Tokenizer::encode(std::string_view text) const {
    const Impl& m = impl();
    if (const std::size_t bad = firstInvalidUtf8(text); bad != std::string_view::npos)
        throw Error("tokenizer: input text is not valid UTF-8 (invalid byte 0x" +
                    [&] {
                        static const char* hex = "0123456789abcdef";
                        const auto b = static_cast<unsigned char>(text[bad]);
                        return std::string{hex[b >> 4], hex[b & 15]};
                    }() +
                    " at byte offset " + std::to_string(bad) + ")");
    std::vector<std::int64_t> ids;
    if (text.empty()) return ids;

    std::vector<Segment> rawSegs;
    m.splitAdded(text, m.rawMatcher, rawSegs);

    MatchScratch& scratch = threadScratch();
    std::vector<Segment> normSegs;
    std::vector<std::string> pieces;
    for (Segment& seg : rawSegs) {
        if (seg.addedIndex >= 0) {
            ids.push_back(m.added[static_cast<std::size_t>(seg.addedIndex)].id);
            continue;
        }
        normSegs.clear();
        m.splitAdded(m.normalize(seg.text), m.normMatcher, normSegs);
        for (Segment& ns : normSegs) {
            if (ns.addedIndex >= 0) {
                ids.push_back(m.added[static_cast<std::size_t>(ns.addedIndex)].id);
                continue;
            }
            pieces.clear();
            m.preTokenize(std::move(ns.text), scratch, pieces);
            for (const std::string& w : pieces) m.bpe(w, ids);
        }
    }
    return ids;
}

std::string Tokenizer::decode(const std::vector<std::int64_t>& ids, bool skipSpecial) const {
    const Impl& m = impl();
    std::string bytes;
    for (const std::int64_t id : ids) {
        if (!m.known(id)) continue;
        const auto i = static_cast<std::size_t>(id);
        if (skipSpecial && (m.idFlags[i] & kSpecial)) continue;
        bytes += m.idBytes[i];
    }
    return utf8Lossy(bytes);
}

std::string Tokenizer::tokenPiece(std::int64_t id) const {
    const Impl& m = impl();
    if (!m.known(id)) return "<id " + std::to_string(id) + "?>";
    const std::string& bytes = m.idBytes[static_cast<std::size_t>(id)];
    std::string out;
    const auto* s = ubytes(bytes);
    static const char* hex = "0123456789abcdef";
    for (std::size_t i = 0; i < bytes.size();) {
        const Utf8Step st = utf8Next(s, bytes.size(), i);
        if (st.valid) {
            out.append(bytes, i, st.len);
        } else {
            for (std::size_t k = 0; k < st.len; ++k) {
                out += "\\x";
                out += hex[s[i + k] >> 4];
                out += hex[s[i + k] & 15];
            }
        }
        i += st.len;
    }
    return out;
}

std::string Tokenizer::tokenBytes(std::int64_t id) const {
    const Impl& m = impl();
    return m.known(id) ? m.idBytes[static_cast<std::size_t>(id)] : std::string();
}

std::optional<std::string> Tokenizer::tokenString(std::int64_t id) const {
    const Impl& m = impl();
    if (!m.known(id)) return std::nullopt;
    return m.idString[static_cast<std::size_t>(id)];
}

std::int64_t Tokenizer::vocabSize() const { return static_cast<std::int64_t>(impl().idFlags.size()); }

std::optional<std::int64_t> Tokenizer::tokenId(std::string_view content) const { return impl().lookup(content); }

bool Tokenizer::isSpecial(std::int64_t id) const {
    const Impl& m = impl();
    return m.known(id) && (m.idFlags[static_cast<std::size_t>(id)] & kSpecial) != 0;
}

bool Tokenizer::isAddedToken(std::int64_t id) const {
    const Impl& m = impl();
    return m.known(id) && (m.idFlags[static_cast<std::size_t>(id)] & kAdded) != 0;
}

std::optional<std::int64_t> Tokenizer::eosTokenId() const { return impl().eosId; }
std::optional<std::int64_t> Tokenizer::padTokenId() const { return impl().padId; }
bool Tokenizer::hasChatTemplate() const { return impl().chatTemplate; }
const std::string& Tokenizer::sourcePath() const { return impl().path; }

}  // namespace draftscope
