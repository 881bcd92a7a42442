// Fuzz target: a JSONL prompt set through parsePromptSet, then every user turn of every
// entry rendered as the engine prompt (promptSpecForTurn, which renders ChatML).

#include "draftscope/errors.h"
#include "draftscope/prompt_set.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto entries = draftscope::parsePromptSet(draftscope::fuzz::asString(data, size), "fuzz.jsonl");
        for (const auto& e : entries) {
            (void)e.firstUserText();
            const int turns = e.userTurns();
            if (turns < 1) __builtin_trap();  // documented: at least one user message
            std::vector<std::string> answers;
            for (int t = 0; t < turns && t < 16; ++t) {
                for (const bool thinking : {true, false})
                    for (const bool wrap : {false, true})
                        (void)draftscope::promptSpecForTurn(e, t, answers, thinking, wrap);
                answers.push_back("answer " + std::to_string(t));
            }
        }
    } catch (const draftscope::Error&) {
    }
    return 0;
}
