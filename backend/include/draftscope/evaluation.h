#pragma once
// Batch evaluation over a prompt set: every prompt through every loaded drafter (analysePrompt:
// DFlash chain run, DDTree runs, hidden-state statistics), collected into a ResultsFile. Used by
// `draftscope-cli eval`; torch-free header.

#include "draftscope/engine.h"
#include "draftscope/prompt_set.h"
#include "draftscope/results_file.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace draftscope {

/// Where an evaluation stands, reported after every verify step of any replica.
struct EvalProgress {
    std::size_t item = 0, items = 0;      ///< 0-based position of the reporting replica's item in this run's plan, and how many are planned
    int run = 0, runsPerItem = 1;         ///< engine run within the item (drafter x (chain + budgets))
    std::int64_t tokensDone = 0, tokensTotal = 0;  ///< within the current run
    std::string id;                       ///< the item's id
    int replica = 0;                      ///< which engine reports (0 with one engine)
    /// Items done apart from the reporting replica's current one: finished or skipped items
    /// plus the done fractions of the other replicas' current items.
    double othersDone = 0;
    /// Fraction of the reporting replica's current item done, 0..1 (runs weighted equally).
    double itemFraction() const;
    /// Fraction of the whole evaluation done, 0..1: (othersDone + itemFraction()) / items.
    double fraction() const;
};

/// Callbacks of runEvaluation (each may be empty). With several replicas they are called
/// from the replicas' threads, one call at a time.
struct EvalCallbacks {
    std::function<void(const EvalProgress&)> progress;
    /// After each item, with its position in this run's plan (replicas finish out of order);
    /// `result.error` is set if it failed.
    std::function<void(const PromptResult& result, std::size_t index, std::size_t items)> itemDone;
};

/// Items (prompt, turn) an evaluation of `entries` runs: of the first `settings.limit` lines
/// (0 = all) those of `shard` (line k belongs to shard k mod count, ResultsShard), each
/// line's first user turn, or every user turn if `settings.allTurns`.
std::size_t plannedItems(const std::vector<PromptSetEntry>& entries, const EvalSettings& settings,
                         const ResultsShard& shard = {});

/// Parses `eval --shard` text "I/N" (decimal, 0 <= I < N, N >= 1). Throws InvalidSetting for
/// "shard" otherwise ("shard: expected I/N with 0 <= I < N (e.g. 0/8), found '8/8'").
ResultsShard parseShard(const std::string& text);

/// Largest number of engine replicas of one evaluation (`eval --replicas`).
inline constexpr int kMaxReplicas = 64;

/// The device group of each of `replicas` engine replicas from a `--device` list
/// ("cuda:0,cuda:1,cuda:2,cuda:3"): one entry is used by every replica; otherwise the list is
/// cut into `replicas` contiguous groups of equal length (with 2: "cuda:0,cuda:1" and
/// "cuda:2,cuda:3"), each passed as LoadOptions::device. Entries are parsed and checked by
/// deviceList (settings_validation.h). Throws InvalidSetting for "replicas" outside
/// 1..kMaxReplicas, and for "device" with a bad entry, "auto" with more than one replica
/// (it cannot be cut into disjoint groups), or a length that is not a multiple of
/// `replicas` (expected vs found counts).
std::vector<std::string> replicaDeviceGroups(const std::string& devices, int replicas);

/// The load options of each replica: `options` with the device group of replicaDeviceGroups,
/// and the CPU threads divided among the replicas whose group has a "cpu" entry: each gets
/// max(1, T / those replicas), T = options.threads or, when 0, `hardwareThreads` (0: the
/// machine's; a negative count is kept for validate(LoadOptions) to refuse), and the
/// --gpu-memory limits of its group's entries (when there is one limit per entry of a list).
/// With one replica `options` is returned unchanged. Throws as replicaDeviceGroups.
std::vector<LoadOptions> replicaLoadOptions(const LoadOptions& options, int replicas, unsigned hardwareThreads = 0);

/// Runs the evaluation with the loaded target and every loaded drafter on `replicas`: engines
/// loaded with the same target and drafters in the same order (one per device group), each
/// run on its own thread (the first on the calling thread), taking the prompt-set lines of
/// `shard` from a shared queue; the file is the same whatever the number of replicas
/// (prompts in index order).
/// Per item and drafter d: analysePrompt (analysis.h) with settings.run (drafter = d), the
/// DDTree budgets and the hidden-state statistics of the prompt ids (HiddenStatsScope::Prompt,
/// settings.histogramBins bins). Later turns of a chat prompt see the
/// earlier turns' answers: drafter 0's chain output, decoded with special tokens skipped (as
/// the DFlash benchmark feeds its own answer back). An Error in one item (a failing chain or
/// DDTree run) is recorded in its PromptResult::error and the evaluation goes on; Cancelled
/// (through `cancel`, polled between verify steps) stops every replica and returns the finished items
/// with complete = false. Fills target, drafters (config SHA-256 from each directory's
/// config.json), settings (device and dtype, if empty, from the first run), shard, prompts
/// (with their index in the whole set),
/// tokenPieces (collectTokenIds of every run), createdUtc; the caller sets producer and the
/// prompt-set fields. Works on every target the engine loads, hybrids included. Throws
/// Error if `replicas` is empty or a replica has no target or drafter loaded, or for bad DDTree budgets
/// (validateTreeBudgets with settings.run.temperature: DDTree runs need temperature 0),
/// InvalidSetting for "shard" outside 0 <= index < count; an exception other than Error in a replica stops the others from taking lines and is
/// rethrown.
/// `resume`, if given, is an interrupted evaluation of the same set with the same models and
/// settings (the caller checks that): a line whose every planned item it holds, none failed,
/// is taken from it instead of being run again (its items count as done for the progress).
ResultsFile runEvaluation(const std::vector<Engine*>& replicas, const std::vector<PromptSetEntry>& entries,
                          const EvalSettings& settings, const ResultsShard& shard, const EvalCallbacks& callbacks = {},
                          const std::atomic<bool>* cancel = nullptr, const ResultsFile* resume = nullptr);

/// The whole set on one engine: runEvaluation({&engine}, entries, settings, {}, callbacks, cancel).
inline ResultsFile runEvaluation(Engine& engine, const std::vector<PromptSetEntry>& entries, const EvalSettings& settings,
                                 const EvalCallbacks& callbacks = {}, const std::atomic<bool>* cancel = nullptr) {
    return runEvaluation(std::vector<Engine*>{&engine}, entries, settings, ResultsShard{}, callbacks, cancel);
}

/// Current UTC time as ISO 8601 ("2025-01-31T12:00:00Z").
std::string utcTimestamp();

}  // namespace draftscope
