#pragma once
// The DFlash verification loop (DFLASH.md section 4; reference: `spec_generate` in the
// official DFlash `dflash.py`).

#include "dflash_drafter.h"
#include "draftscope/run_types.h"
#include "target_model.h"

#include <atomic>
#include <functional>

namespace draftscope {

/// Runs the DFlash loop for one prompt. Greedy when settings.temperature == 0; otherwise the
/// target's tokens (anchor, verify tokens, bonus) are sampled from softmax(logits / T) with
/// a CPU generator seeded by settings.seed, the drafts stay argmax, and acceptance is exact
/// match (as the reference). Stops after maxNewTokens (output truncated to prompt +
/// maxNewTokens) or, unless ignoreEos, at the first of `stopIds` (kept in the output).
/// Throws Cancelled if *cancel becomes true between steps; Error on invalid input.
RunResult runDFlash(const TargetModel& target, const DFlashDrafter& drafter,
                    const std::vector<std::int64_t>& promptIds, const RunSettings& settings,
                    const std::vector<std::int64_t>& stopIds, const ProgressFn& progress,
                    const std::atomic<bool>* cancel);

/// Plain greedy decoding of the target with its KV cache, one token per forward: the
/// baseline the greedy DFlash output must equal (DFLASH.md section 4, invariants).
/// Returns prompt + up to maxNew tokens, ending at the first of `stopIds` (kept).
std::vector<std::int64_t> greedyDecode(const TargetModel& target, const std::vector<std::int64_t>& promptIds,
                                       std::int64_t maxNew, const std::vector<std::int64_t>& stopIds,
                                       const std::atomic<bool>* cancel);

}  // namespace draftscope
