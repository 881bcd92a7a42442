#pragma once
// Batch evaluation over a prompt set: every prompt through every loaded drafter (analysePrompt:
// DFlash chain run, DDTree runs, hidden-state statistics), collected into a ResultsFile. Used by
// `draftscope-cli eval`; torch-free header.

#include "draftscope/prompt_set.h"
#include "draftscope/results_file.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace draftscope {

class Engine;

/// Where an evaluation stands, reported after every verify step.
struct EvalProgress {
    std::size_t item = 0, items = 0;      ///< 0-based prompt (turn) being run, and how many are planned
    int run = 0, runsPerItem = 1;         ///< engine run within the item (drafter x (chain + budgets))
    std::int64_t tokensDone = 0, tokensTotal = 0;  ///< within the current run
    std::string id;                       ///< the item's id
    /// Fraction of the whole evaluation done, 0..1 (runs weighted equally).
    double fraction() const;
};

/// Callbacks of runEvaluation (each may be empty).
struct EvalCallbacks {
    std::function<void(const EvalProgress&)> progress;
    /// After each item, with its index; `result.error` is set if it failed.
    std::function<void(const PromptResult& result, std::size_t index, std::size_t items)> itemDone;
};

/// Items (prompt, turn) an evaluation of `entries` runs: the first `settings.limit` lines
/// (0 = all), each line's first user turn, or every user turn if `settings.allTurns`.
std::size_t plannedItems(const std::vector<PromptSetEntry>& entries, const EvalSettings& settings);

/// Runs the evaluation with the engine's loaded target and every loaded drafter.
/// Per item and drafter d: analysePrompt (analysis.h) with settings.run (drafter = d), the
/// DDTree budgets and the hidden-state statistics of the prompt ids (HiddenStatsScope::Prompt,
/// settings.histogramBins bins). Later turns of a chat prompt see the
/// earlier turns' answers: drafter 0's chain output, decoded with special tokens skipped (as
/// the DFlash benchmark feeds its own answer back). An Error in one item (a failing chain or
/// DDTree run) is recorded in its PromptResult::error and the evaluation goes on; Cancelled
/// (through `cancel`, polled between verify steps) stops it and returns the finished items
/// with complete = false. Fills target, drafters (config SHA-256 from each directory's
/// config.json), settings (device and dtype, if empty, from the first run), prompts,
/// tokenPieces (collectTokenIds of every run), createdUtc; the caller sets producer and the
/// prompt-set fields. Works on every target the engine loads, hybrids included. Throws
/// Error if no target or drafter is loaded, or for bad DDTree budgets
/// (validateTreeBudgets with settings.run.temperature: DDTree runs need temperature 0).
ResultsFile runEvaluation(Engine& engine, const std::vector<PromptSetEntry>& entries, const EvalSettings& settings,
                          const EvalCallbacks& callbacks = {}, const std::atomic<bool>* cancel = nullptr);

/// Current UTC time as ISO 8601 ("2025-01-31T12:00:00Z").
std::string utcTimestamp();

}  // namespace draftscope
