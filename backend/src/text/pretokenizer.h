#pragma once
// Pre-tokenizer machinery of the tokenizer: HF's Split and ByteLevel steps run through
// PCRE2 with Oniguruma's Unicode classes (HF compiles its regexes with Oniguruma). Private.

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "draftscope/errors.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace draftscope::text {

/// `pattern` with Oniguruma's `\s` / `\S` (Unicode White_Space) spelt for PCRE2.
std::string onigToPcre2(const std::string& pattern);

/// A compiled PCRE2 pattern (UTF, UCP; JIT when available). `literal` matches the pattern
/// as a plain string (HF Split's {"String": ...}). Throws Error naming `where` if it does not
/// compile.
class Regex {
public:
    Regex(const std::string& pattern, bool literal, const std::string& where);
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;
    ~Regex() { pcre2_code_free(code_); }
    const pcre2_code* code() const { return code_; }
    bool jit() const { return jit_; }

private:
    pcre2_code* code_ = nullptr;
    bool jit_ = false;
};

/// PCRE2 scratch (match data, JIT stack), one per thread (see threadScratch()).
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

/// This thread's scratch.
MatchScratch& threadScratch();

/// GPT-2's pre-tokenizer regex (HF ByteLevel with use_regex = true).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// One pre-tokenizer step (HF pre_tokenizers Split or ByteLevel).
struct PreTokStep {
    enum class Kind { Split, ByteLevel } kind = Kind::Split;
    std::shared_ptr<Regex> regex;  // Split pattern, or GPT-2 regex for ByteLevel(use_regex)
    bool removeMatches = false;    // Split behavior "Removed"
    bool invert = false;
    bool addPrefixSpace = false;   // ByteLevel
};

/// Splits `s` by `re` (HF Split with behavior Isolated or Removed; `invert` swaps matches and
/// gaps), appending the non-empty pieces to `out`. Throws Error if PCRE2 fails while matching.
void regexSplit(const Regex& re, const std::string& s, bool removeMatches, bool invert, MatchScratch& scratch,
                std::vector<std::string>& out);

}  // namespace draftscope::text
