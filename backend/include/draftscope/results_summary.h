#pragma once
// Aggregates of a results file across prompts: what `draftscope-cli eval` prints and the
// GUI's cross-prompt plots show. Torch-free. Conventions: docs/ENGINE.md "Numbers".

#include "draftscope/results_file.h"

#include <cstdint>
#include <vector>

namespace draftscope {

/// One drafter's numbers over every prompt of a results file that has a run with at least
/// one verify step (failed prompts and empty runs are left out and counted).
struct DrafterAggregate {
    int drafter = 0;
    std::size_t prompts = 0;        ///< prompts that count
    std::size_t skipped = 0;        ///< failed prompts and runs without verify steps
    std::int64_t steps = 0;         ///< verify steps over all counted prompts
    /// Mean over prompts of each prompt's tau (mean acceptance length, bonus included): the
    /// DFlash benchmark's "Average Acceptance length". 0 if no prompt counts.
    double macroTau = 0;
    /// Mean acceptance length over all steps pooled (long prompts weigh more).
    double pooledTau = 0;
    /// [B] fraction of all steps (pooled) whose accepted prefix reaches block position j.
    std::vector<double> perPositionAcceptance;
    /// [B+1] number of steps (pooled) with acceptance length n.
    std::vector<std::int64_t> acceptanceHistogram;
    /// Per DDTree budget (EvalSettings::ddtreeBudgets order): mean over prompts of the tree tau.
    std::vector<double> treeMacroTau;
};

/// The aggregate of drafter `drafter` (index into results.drafters). Throws Error if the
/// index is out of range.
DrafterAggregate aggregateDrafter(const ResultsFile& results, int drafter);

/// Indices of results.prompts sorted by drafter `drafter`'s tau, ascending (worst first);
/// failed prompts last, ties keep file order.
std::vector<std::size_t> promptsByTau(const ResultsFile& results, int drafter);

}  // namespace draftscope
