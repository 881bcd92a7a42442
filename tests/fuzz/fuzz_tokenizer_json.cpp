// Fuzz target: a tokenizer.json through Tokenizer::fromFile (every section: model, merges,
// added_tokens, normalizer, pre_tokenizer with its Split regexes), then a fixed set of texts
// encoded and decoded with the loaded tokenizer. fuzz_tokenizer_encode fuzzes the text.

#include "draftscope/errors.h"
#include "draftscope/tokenizer.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const draftscope::fuzz::ScratchDir dir;
    const std::string path = dir.write("tokenizer.json", data, size);
    static const char* const kTexts[] = {
        "", "Hello world", "  leading and trailing  ", "x = 1\n\ny = 2\r\n", "It's 42 o'clock",
        "<|im_start|>user\nHi<|im_end|>\n", "<|endoftext|><|endoftext|>", "caf\u00e9 cafe\u0301 \u00c5",
        "\u4f60\u597d\uff0c\u4e16\u754c", "\U0001F600 emoji", "tab\tsep", "ab", "a b c d e f",
    };
    try {
        const auto tok = draftscope::Tokenizer::fromFile(path);
        for (const char* text : kTexts) {
            const auto ids = tok.encode(text);
            for (const auto id : ids)
                if (id < 0 || id >= tok.vocabSize()) __builtin_trap();  // encode returned a foreign id
            (void)tok.decode(ids);
            (void)tok.decode(ids, /*skipSpecial=*/true);
        }
        for (std::int64_t id = 0; id < tok.vocabSize() && id < 300; ++id) {
            (void)tok.tokenPiece(id);
            (void)tok.isSpecial(id);
        }
    } catch (const draftscope::Error&) {
    }
    return 0;
}
