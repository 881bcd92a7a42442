#include "text/byte_level.h"

#include "text/utf8.h"

namespace draftscope::text {

const ByteAlphabet& alphabet() {
    static const ByteAlphabet a;
    return a;
}

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

}  // namespace draftscope::text
