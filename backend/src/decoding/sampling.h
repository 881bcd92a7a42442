#pragma once
// Token sampling shared by the loops (DFLASH.md section 10): the filtered distributions and
// the draws, on the host so that runs are reproducible across devices.

#include "draftscope/run_types.h"

#include <ATen/ATen.h>

namespace draftscope {

/// Token distributions for sampling at temperature T > 0, on the host, float32 [R, V]:
/// softmax(logits / T), then (as HF's warpers, in this order) only the top-k tokens (k > 0,
/// ties with the k-th kept), then only the most probable tokens whose preceding mass is below
/// top-p (< 1; the most probable token always stays), renormalised. Without filters the
/// probabilities are exactly softmax(logits / T) (what the April loop sampled before).
at::Tensor samplingProbs(const at::Tensor& logits, const RunSettings& s);

/// Picks tokens from float32 logits [R, V]: argmax at temperature 0, else one sample per row
/// of samplingProbs drawn with `gen` (on the CPU), returned on the logits' device.
at::Tensor pickTokens(const at::Tensor& logits, const RunSettings& s, at::Generator& gen);

/// Throws Error if the target's logits after the prompt (float32 [R, V]) hold a NaN or an
/// infinity: every argmax of such rows is 0 on both sides, so a loop would report perfect
/// acceptance of garbage. Checked once per run, after the prefill (one host synchronisation).
void requireFinitePrefillLogits(const at::Tensor& logits);

}  // namespace draftscope
