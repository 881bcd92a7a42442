#pragma once
// GPT-2's byte <-> unicode alphabet (bytes_to_unicode in GPT-2's encoder.py / HF ByteLevel)
// and the ByteLevel decoder of one token string. Private to the tokenizer.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace draftscope::text {

/// The 256 bytes as code points, and back.
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

/// The one alphabet (built once).
const ByteAlphabet& alphabet();

/// HF ByteLevel decoder for one token string: if every char is in the byte alphabet, the
/// mapped bytes into `out`; otherwise the string's own UTF-8 bytes. Returns whether the
/// mapping applied.
bool byteLevelDecode(std::string_view token, std::string& out);

}  // namespace draftscope::text
