#pragma once
// UTF-8 helpers of the tokenizer (backend/src/text): decoding with Rust's / WHATWG's
// maximal-subpart rule, encoding, and the Unicode classes HF's added tokens use. Private.

#include <cstddef>
#include <string>
#include <string_view>

namespace draftscope::text {

/// One decoded UTF-8 sequence (utf8Next).
struct Utf8Step {
    std::size_t len;  // bytes consumed: the sequence, or the maximal invalid subpart (>= 1)
    bool valid;
    char32_t cp;
};

/// Decodes one UTF-8 sequence at s[i]. Invalid input consumes its "maximal subpart" (Unicode
/// ch. 3, the rule Rust's String::from_utf8_lossy and WHATWG use for U+FFFD substitution).
inline Utf8Step utf8Next(const unsigned char* s, std::size_t n, std::size_t i) {
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

/// The bytes of `s` as unsigned.
inline const unsigned char* ubytes(std::string_view s) {
    return reinterpret_cast<const unsigned char*>(s.data());
}

/// Appends the UTF-8 encoding of `cp` to `out`.
void appendUtf8(std::string& out, char32_t cp);

/// Appends each byte of `bytes` as a `\xNN` escape (lower-case hex): how a token piece and a
/// message show bytes that are not printable UTF-8.
void appendHexEscapes(std::string& out, std::string_view bytes);

/// from_utf8_lossy: each maximal invalid subpart becomes U+FFFD.
std::string utf8Lossy(std::string_view bytes);

/// Byte offset of the first invalid UTF-8 byte, or npos.
std::size_t firstInvalidUtf8(std::string_view text);

/// True if every byte is < 0x80.
bool isAscii(std::string_view s);

/// Rust char::is_whitespace (Unicode White_Space), used by added tokens' lstrip / rstrip.
bool isWhitespaceCp(char32_t cp);

/// Word character for added tokens' single_word: Rust regex `\w` (Alphabetic, marks, decimal
/// digits, connector punctuation, join controls), approximated by general categories.
bool isWordCp(char32_t cp);

/// Last code point of s (s is valid UTF-8, non-empty).
char32_t lastCp(std::string_view s);

}  // namespace draftscope::text
