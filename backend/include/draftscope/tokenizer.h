#pragma once
// Byte-level BPE tokenizer driven by a HuggingFace `tokenizer.json` (GPT-2 / Qwen / Llama-3
// style), reproducing the ids that HF `tokenizers` produces with add_special_tokens=False.
// Torch-free and pcre2/utf8proc-free: the implementation lives behind a pimpl.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace draftscope {

/// A byte-level BPE tokenizer loaded from HF `tokenizer.json` (+ optional `tokenizer_config.json`).
///
/// Supported tokenizer.json subset (anything else throws draftscope::Error at load time):
/// - `model`: type "BPE" with `vocab` (token string -> id, keys in the GPT-2 byte-to-unicode
///   alphabet) and `merges` (either ["a","b"] pairs or "a b" strings); `unk_token`, `fuse_unk`
///   and `ignore_merges` are honoured; a non-empty `continuing_subword_prefix` or
///   `end_of_word_suffix` is rejected.
/// - `normalizer`: null, NFC, NFD, NFKC, NFKD, or a Sequence of those (via utf8proc).
/// - `pre_tokenizer`: ByteLevel (use_regex true -> GPT-2 regex; add_prefix_space honoured), or a
///   Sequence of Split {pattern Regex|String, behavior Isolated|Removed, invert} and ByteLevel.
///   A ByteLevel step must be present. Regexes run on PCRE2 (UTF + UCP, JIT when available).
/// - `added_tokens`: matched before normalisation (normalized=false) or after it, against their
///   normalised form (normalized=true), leftmost-longest, honouring lstrip / rstrip / single_word.
///   Ids are assigned as HF assigns them on load (a content that is a vocab key keeps its vocab
///   id, a new one gets the next free id); for files HF wrote these equal the "id" fields.
/// - `post_processor` is ignored (no BOS/EOS is ever added); decoding is always the byte-level
///   inverse, as HF's ByteLevel decoder does.
///
/// Verified against HF tokenizers 0.23 on the Qwen3 and demo tokenizers (goldens plus randomised
/// differential runs). Known, unavoidable differences come only from Unicode table versions:
/// characters assigned after Unicode 14 (PCRE2 10.42's \p{L}/\p{N}) or whose normalisation
/// changed after HF's (older) NFC/NFKC tables may split or normalise differently.
///
/// Instances are move-only. All const member functions are safe to call concurrently
/// (the per-word BPE cache is internally synchronised; PCRE2 scratch is per thread).
class Tokenizer {
public:
    /// Loads `<dir>/tokenizer.json` (required) and `<dir>/tokenizer_config.json` (optional:
    /// eos_token, pad_token, chat_template presence).
    /// Throws Error if the directory or tokenizer.json is missing, if either file is not valid
    /// JSON, or if its content is malformed or unsupported; the message names the file and field.
    static Tokenizer fromDirectory(const std::string& dir);

    /// Loads a single tokenizer.json (no tokenizer_config.json: eosTokenId() is empty).
    /// Throws Error like fromDirectory().
    static Tokenizer fromFile(const std::string& tokenizerJsonPath);

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;
    ~Tokenizer();

    /// Encodes raw UTF-8 text exactly as HF `tokenizers` does with add_special_tokens=False:
    /// added/special tokens (added_tokens) are matched first (leftmost-longest), the remaining
    /// text is normalised (NFC for Qwen), split by the pre-tokenizer (Split regex, behavior
    /// Isolated), byte-level mapped and BPE-merged by merge rank. No BOS/EOS is added.
    /// Throws Error if `text` is not valid UTF-8 (the message gives the byte offset).
    std::vector<std::int64_t> encode(std::string_view text) const;

    /// Decodes ids to UTF-8 text (HF `decode` with the ByteLevel decoder): token bytes are
    /// concatenated and converted lossily, each maximal invalid UTF-8 subsequence becoming
    /// U+FFFD (like Rust's String::from_utf8_lossy). `skipSpecial` drops added tokens marked
    /// special. Ids that are not in the vocabulary are skipped, as HF does. Only throws Error
    /// on a moved-from tokenizer.
    std::string decode(const std::vector<std::int64_t>& ids, bool skipSpecial = false) const;

    /// Display text of one token for tables: its decoded bytes, with every byte that is not
    /// part of a complete UTF-8 sequence shown as a `\xNN` escape (lower-case hex). Added
    /// tokens show their content. An out-of-range or unknown id gives "<id N?>" (no throw).
    std::string tokenPiece(std::int64_t id) const;

    /// Raw bytes of one token (byte-level inverse of its vocab string, or an added token's
    /// content); empty for an unknown id.
    std::string tokenBytes(std::int64_t id) const;

    /// The token's string as stored in tokenizer.json (HF `id_to_token`, e.g. "Ġhello"), if any.
    std::optional<std::string> tokenString(std::int64_t id) const;

    /// Max id + 1 over the vocabulary and the added tokens (151669 for Qwen3; the model's
    /// embedding table may be larger).
    std::int64_t vocabSize() const;

    /// Id of a token given its tokenizer.json string (HF `token_to_id`): an added token's
    /// content (e.g. "<|im_end|>") or a vocab key in the byte-level alphabet (e.g. "Ġhello").
    std::optional<std::int64_t> tokenId(std::string_view content) const;

    /// True for added tokens marked `"special": true` in tokenizer.json.
    bool isSpecial(std::int64_t id) const;

    /// True for any entry of `added_tokens` (special or not).
    bool isAddedToken(std::int64_t id) const;

    /// Id of tokenizer_config.json's `eos_token` (string or {"content": ...} form), if the
    /// config exists and names one.
    std::optional<std::int64_t> eosTokenId() const;

    /// Id of tokenizer_config.json's `pad_token`, if the config exists and names one.
    std::optional<std::int64_t> padTokenId() const;

    /// True if tokenizer_config.json has a non-empty `chat_template` string.
    bool hasChatTemplate() const;

    /// The tokenizer.json path this tokenizer was loaded from.
    const std::string& sourcePath() const;

private:
    struct Impl;
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    const Impl& impl() const;
    std::unique_ptr<Impl> impl_;
};

}  // namespace draftscope
