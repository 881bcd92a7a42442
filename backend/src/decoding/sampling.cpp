#include "decoding/sampling.h"

#include "draftscope/errors.h"

#include <tuple>

namespace draftscope {

at::Tensor samplingProbs(const at::Tensor& logits, const RunSettings& s) {
    auto probs = at::softmax(logits.to(at::kCPU) / s.temperature, -1);
    const auto V = probs.size(-1);
    if (s.topK > 0 && s.topK < V) {
        const auto kth = std::get<0>(probs.topk(s.topK, -1)).narrow(-1, s.topK - 1, 1);
        probs = at::where(probs >= kth, probs, at::zeros_like(probs));
        probs = probs / probs.sum(-1, true);
    }
    if (s.topP < 1.0) {
        const auto sorted = probs.sort(-1, /*descending=*/true);
        const auto& vals = std::get<0>(sorted);
        const auto keepSorted = (vals.cumsum(-1) - vals) < s.topP;
        const auto keep = at::zeros_like(keepSorted).scatter(-1, std::get<1>(sorted), keepSorted);
        probs = at::where(keep, probs, at::zeros_like(probs));
        probs = probs / probs.sum(-1, true);
    }
    return probs.contiguous();
}

void requireFinitePrefillLogits(const at::Tensor& logits) {
    if (logits.isfinite().all().item<bool>()) return;
    const auto bad = logits.numel() - logits.isfinite().sum().item<std::int64_t>();
    throw Error("the target's logits after the prompt are not finite (" + std::to_string(bad) + " of " +
                std::to_string(logits.numel()) + " are NaN or infinite): its weights hold non-finite values or "
                "overflow the compute dtype; `draftscope-cli inspect` on the target lists non-finite tensors");
}

at::Tensor pickTokens(const at::Tensor& logits, const RunSettings& s, at::Generator& gen) {
    if (s.temperature == 0.0) return logits.argmax(-1);
    return at::multinomial(samplingProbs(logits, s), 1, false, gen).squeeze(-1).to(logits.device());
}

}  // namespace draftscope
