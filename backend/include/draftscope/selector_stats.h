#pragma once
// What a DFlash2 drafter's candidate selector did in one run (docs/ENGINE.md "DFlash2"):
// per block position how often it drafted another token than the drafter's argmax, and per
// verify step whether that changed the accepted length. Torch-free, from RunResult alone.

#include "draftscope/run_types.h"

#include <vector>

namespace draftscope {

/// The selector's effect on one greedy verify step, decided at the first block position j
/// where the selector's token differs from the drafter's argmax (the two drafts agree before
/// j, so the target's tokens up to j are those of either draft).
enum class SelectorEffect {
    Same,     ///< the selector drafted the argmax at every position
    Gained,   ///< j inside the accepted prefix: the argmax token would have been rejected at j
    Lost,     ///< j is the first rejection and the argmax token is the target's there: the argmax
              ///< draft would have been accepted at least one position further
    Neutral,  ///< j after the first rejection, or both tokens rejected at j
};

/// Aggregates of the selector over a run; empty (available false) for a DFlash drafter's run.
struct SelectorStats {
    bool available = false;  ///< the run carries VerifyStep::drafterArgmax
    bool greedy = false;     ///< temperature 0: effects are defined (at T > 0 only change rates)
    std::vector<int> drafted;          ///< [B-1] steps that drafted block position j+1
    std::vector<int> changed;          ///< [B-1] of those, steps whose token differs from the argmax
    std::vector<SelectorEffect> effects;  ///< per verify step; at T > 0 a changed step is Neutral (no counterfactual)
    /// Per step, the accepted-length change against the argmax draft where it is known exactly
    /// (Gained: acc - j > 0), -1 for Lost (a lower bound: at least one), 0 otherwise.
    std::vector<int> lengthChange;
    int steps = 0, stepsChanged = 0;   ///< steps, and steps with at least one changed position
    int gained = 0, lost = 0, neutral = 0;
    int tokensGained = 0;              ///< sum of lengthChange over Gained steps
    /// changed[j] / drafted[j] (0 where nothing was drafted).
    double changedRate(std::size_t j) const {
        return drafted[j] ? static_cast<double>(changed[j]) / drafted[j] : 0.0;
    }
};

/// The selector statistics of `run` (VerifyStep::drafted, drafterArgmax, acceptedCount).
SelectorStats selectorStats(const RunResult& run);

}  // namespace draftscope
