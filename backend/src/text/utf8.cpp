#include "text/utf8.h"

#include <utf8proc.h>

#include <algorithm>
#include <cctype>

namespace draftscope::text {

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

void appendHexEscapes(std::string& out, std::string_view bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (const unsigned char b : bytes) {
        out += "\\x";
        out += kHex[b >> 4];
        out += kHex[b & 15];
    }
}

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

bool isWhitespaceCp(char32_t cp) {
    if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85) return true;
    if (cp < 0x80) return false;
    const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

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

char32_t lastCp(std::string_view s) {
    std::size_t i = s.size() - 1;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
    return utf8Next(ubytes(s), s.size(), i).cp;
}

}  // namespace draftscope::text
