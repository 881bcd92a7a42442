#pragma once
// The DDTree loop: draft, build a tree within a node budget, verify every node in one target
// forward with an ancestor-only visibility mask, walk the target's choices, compact the KV
// cache to the accepted path (DFLASH.md section 5; reference: the official DDTree code).

#include "draftscope/ddtree.h"
#include "draftscope/run_types.h"
#include "draftscope/stop_tokens.h"
#include "models/dflash_drafter.h"
#include "models/target_model.h"

#include <atomic>

namespace draftscope {

/// Runs the greedy DDTree loop with `budget` tree nodes per step. Termination, truncation
/// and `stops` as the official DDTree loop (April-style, whatever `revision`); `revision`
/// selects the drafter's rotary numerics only (DFlashDrafter::rotary). budget 0 verifies
/// the anchor alone (plain decoding). Hybrid targets verify the tree through their Gated
/// DeltaNet layers along each node's path (docs/ENGINE.md, "DDTree on hybrid targets").
/// Throws Error for a negative budget or an empty prompt, Cancelled when *cancel becomes
/// true between steps.
TreeRunResult runDDTree(const TargetModel& target, const DFlashDrafter& drafter,
                        const std::vector<std::int64_t>& promptIds, int budget, std::int64_t maxNewTokens,
                        LoopRevision revision, const StopTokens& stops, const ProgressFn& progress,
                        const std::atomic<bool>* cancel);

/// The tree of one drafter call: top-k (k = min(budget, V)) log-probabilities per depth in
/// float32 (logit - logsumexp), then buildDraftTree. `draftLogits`: float32 [D, V].
DraftTree treeFromDraftLogits(std::int64_t anchor, const at::Tensor& draftLogits, int budget);

}  // namespace draftscope
