#pragma once
// The golden protocol of tools/make_moe_fixtures.py `step_goldens` (gpt-oss, Gemma 4 and the
// MoE fixtures): an uncached prefill of M.input_ids (hidden states, logits), then on its cache
// three single-token steps and one 6-token block of M.extra_ids (decode / verify logits), and
// M.router_top, the experts HF's router chose per layer and prefill token.

#include "draftscope/engine.h"
#include "draftscope/safetensors.h"
#include "test_support.h"

#include <algorithm>
#include <string>
#include <vector>

namespace testsupport {

/// Relative max errors (max abs diff / the golden's max abs) of one model's step goldens.
struct StepGoldenErrors {
    double hidden = 0, logits = 0, decode = 0, verify = 0;
    double worst() const { return std::max({hidden, logits, decode, verify}); }
};

/// Runs the protocol for model `m` (goldens `m + ".*"` in `g`) on the target loaded in `e`.
inline StepGoldenErrors stepGoldenErrors(draftscope::Engine& e, const draftscope::SafetensorsFile& g,
                                         const std::string& m) {
    StepGoldenErrors err;
    const auto ids = g.readInt64(m + ".input_ids");
    const auto r = e.forward(idsPrompt(ids));
    err.hidden = relativeMaxError(r.hiddenStates, g.readFloat32(m + ".hidden_states"));
    err.logits = relativeMaxError(r.logits, g.readFloat32(m + ".logits"));
    const auto extra = g.readInt64(m + ".extra_ids");
    const auto steps = e.forwardSteps({ids, {extra[0]}, {extra[1]}, {extra[2]}, {extra.begin() + 3, extra.end()}});
    const auto V = static_cast<std::size_t>(steps.at(0).vocabSize);
    const auto decode = g.readFloat32(m + ".decode_logits");
    for (std::size_t i = 0; i < 3; ++i) {
        const std::vector<float> row(decode.begin() + static_cast<std::ptrdiff_t>(i * V),
                                     decode.begin() + static_cast<std::ptrdiff_t>((i + 1) * V));
        err.decode = std::max(err.decode, relativeMaxError(steps.at(i + 1).logits, row));
    }
    err.verify = relativeMaxError(steps.at(4).logits, g.readFloat32(m + ".verify_logits"));
    return err;
}

/// How many of the router choices of forward result `r` ([L, T, k]) differ from `want`
/// (M.router_top); all of them if the sizes differ.
inline std::size_t routerChoiceMismatches(const draftscope::ForwardResult& r, const std::vector<std::int64_t>& want) {
    if (r.expertChoices.size() != want.size()) return std::max(want.size(), r.expertChoices.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < want.size(); ++i) differ += r.expertChoices[i] != want[i];
    return differ;
}

}  // namespace testsupport
