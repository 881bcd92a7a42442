#pragma once
// The DFlash verification loop (DFLASH.md sections 4 and 10; reference: `spec_generate` /
// `dflash_generate` in the official DFlash code, April 2026 and current revisions).

#include "draftscope/run_types.h"
#include "draftscope/stop_tokens.h"
#include "models/dflash_drafter.h"
#include "models/target_model.h"

#include <atomic>
#include <functional>

namespace draftscope {

/// Runs the DFlash loop for one prompt, revision settings.loop (docs/ENGINE.md, "Loop
/// revisions"). Current (DFLASH.md section 10): output of P + maxNewTokens tokens, the last
/// block clipped to the slots left, the step's produced tokens cut at the first of `stops`
/// (kept), and at temperature > 0 lossless rejection sampling (drafts
/// sampled from q, verifyByRejection against p; both softmax(logits / T) after top-k/top-p).
/// April2026 (section 4): full blocks, output truncated to P + maxNewTokens afterwards and
/// cut after the first stop token; at temperature > 0 the target's tokens are sampled, the
/// drafts stay argmax and acceptance is exact match (as its reference). Sampling runs on
/// the CPU with a generator seeded by settings.seed (reproducible across devices).
/// Throws Cancelled if *cancel becomes true between steps; Error on invalid input or
/// settings (validate(RunSettings), settings_validation.h).
RunResult runDFlash(const TargetModel& target, const DFlashDrafter& drafter,
                    const std::vector<std::int64_t>& promptIds, const RunSettings& settings,
                    const StopTokens& stops, const ProgressFn& progress,
                    const std::atomic<bool>* cancel);

/// Plain greedy decoding of the target with its KV cache, one token per forward: the
/// baseline the greedy DFlash output must equal (DFLASH.md section 4, invariants).
/// Returns prompt + up to maxNew tokens, ending at the first of `stops` (kept).
std::vector<std::int64_t> greedyDecode(const TargetModel& target, const std::vector<std::int64_t>& promptIds,
                                       std::int64_t maxNew, const StopTokens& stops,
                                       const std::atomic<bool>* cancel);

}  // namespace draftscope
