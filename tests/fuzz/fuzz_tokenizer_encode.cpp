// Fuzz target: text encoded with the demo target's tokenizer (Qwen3's pre-tokenizer regex,
// NFC, added tokens), then decoded; invalid UTF-8 must be refused with draftscope::Error.

#include "draftscope/errors.h"
#include "draftscope/tokenizer.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const auto tok = draftscope::Tokenizer::fromDirectory(DRAFTSCOPE_DEMO_DIR "/target");
    try {
        const auto ids = tok.encode(draftscope::fuzz::asString(data, size));
        for (const auto id : ids)
            if (id < 0 || id >= tok.vocabSize()) __builtin_trap();
        (void)tok.decode(ids);
        (void)tok.decode(ids, /*skipSpecial=*/true);
        for (const auto id : ids) (void)tok.tokenPiece(id);
    } catch (const draftscope::Error&) {
    }
    return 0;
}
