#include "draftscope/errors.h"

#include "text/utf8.h"

namespace draftscope {

namespace {

/// Invisible format characters that reorder or hide text (Unicode Cf: zero-width and bidi
/// controls, the BOM, interlinear annotation marks).
bool isInvisibleFormat(char32_t cp) {
    return cp == 0xAD || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF ||
           (cp >= 0xFFF9 && cp <= 0xFFFB);
}

}  // namespace

namespace {
std::string escape(std::string_view bytes, bool keepNewlines) {
    const auto* s = text::ubytes(bytes);
    std::string out;
    out.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        const text::Utf8Step st = text::utf8Next(s, bytes.size(), i);
        const bool printable = st.valid && ((st.cp >= 0x20 && st.cp < 0x7F) || (st.cp >= 0xA0 && !isInvisibleFormat(st.cp)));
        if (printable) {
            out.append(bytes.substr(i, st.len));
        } else if (st.valid && st.cp == '\t') {
            out += "\\t";
        } else if (st.valid && st.cp == '\n') {
            out += keepNewlines ? "\n" : "\\n";
        } else if (st.valid && st.cp == '\r') {
            out += "\\r";
        } else {
            text::appendHexEscapes(out, bytes.substr(i, st.len));
        }
        i += st.len;
    }
    return out;
}
}  // namespace

std::string escapeNonPrintable(std::string_view bytes) { return escape(bytes, false); }

std::string escapeForDisplay(std::string_view message) { return escape(message, true); }

}  // namespace draftscope
