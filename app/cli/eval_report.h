#pragma once
// What `draftscope-cli eval` prints and writes about a results file: one line per finished
// prompt, the cross-prompt summary per drafter, and the --json summary.

#include "draftscope/results_file.h"

#include <nlohmann/json.hpp>

#include <ostream>

namespace draftscope {

/// One line for a finished prompt: index, id, tau per drafter (and per DDTree budget),
/// verify steps and generated tokens; or its error. `budgets`: EvalSettings::ddtreeBudgets.
void printPromptLine(std::ostream& out, const std::vector<int>& budgets, const PromptResult& prompt, std::size_t index,
                     std::size_t items);
/// Per drafter: macro tau (mean over prompts of each prompt's tau), pooled tau, per-position
/// acceptance rates and the acceptance-length histogram over all steps, DDTree macro tau per
/// budget, and the per-prompt taus sorted worst first.
void printEvalSummary(std::ostream& out, const ResultsFile& results);
/// The --json summary: macro_tau, prompts[] {id, tau, steps, generated, ddtree[]},
/// per_position_acceptance, acceptance_histogram for drafter 0 at top level, the same for
/// every drafter in drafters[], plus models, settings and completeness, and the shard
/// {index, count} of a sharded file.
nlohmann::json evalSummaryJson(const ResultsFile& results, const std::string& resultsPath);

}  // namespace draftscope
