#pragma once
// The tokenizer's state (Tokenizer::Impl), shared by the files of backend/src/text that
// implement its sections: tokenizer_loader.cpp (files), bpe_model.cpp, added_tokens.cpp,
// normalizer.cpp, pretokenizer.cpp, and tokenizer.cpp (the public API). Private.

#include "draftscope/tokenizer.h"
#include "text/added_tokens.h"
#include "text/pretokenizer.h"
#include "text/tokenizer_json.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace draftscope::text {

/// A Unicode normal form of HF's normalizers.
enum class NormForm { NFC, NFD, NFKC, NFKD };

/// A piece of input text, or an added token found in it.
struct Segment {
    std::string text;          // non-empty when addedIndex < 0
    long addedIndex = -1;      // index into added tokens
};

/// Bits of Tokenizer::Impl::idFlags.
constexpr std::uint8_t kInVocab = 1, kAdded = 2, kSpecial = 4;

}  // namespace draftscope::text

namespace draftscope {

/// Everything a loaded tokenizer holds: the BPE model, the per-id tables, the added tokens,
/// the normalizer and pre-tokenizer pipeline, tokenizer_config.json's special ids, and the
/// BPE cache. Each section's file defines its member functions.
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
    std::vector<text::AddedToken> added;
    std::unordered_map<std::string, std::int32_t> addedByContent;
    std::unordered_set<std::string> specialContents;  // contents of tokens marked special
    text::AddedMatcher rawMatcher, normMatcher;

    // Pipeline
    std::vector<text::NormForm> normalizers;
    std::vector<text::PreTokStep> preTok;

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
    void loadTokenizerJson(const std::filesystem::path& file);
    void loadModel(const text::json& model, text::TokenizerJson& streamed);
    void loadAddedTokens(const text::json& arr);
    void finishAddedTokens();
    void loadNormalizer(const text::json& n, const std::string& where);
    void loadPreTokenizer(const text::json& p, const std::string& where, bool& sawByteLevel);
    void loadConfig(const std::filesystem::path& file);

    // ---- encoding ----
    void splitAdded(std::string_view text, const text::AddedMatcher& m, std::vector<text::Segment>& out) const;
    std::string normalize(std::string_view text) const;
    void preTokenize(std::string text, text::MatchScratch& scratch, std::vector<std::string>& pieces) const;
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

}  // namespace draftscope
