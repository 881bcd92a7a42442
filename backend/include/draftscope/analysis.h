#pragma once
// One analysis of one prompt with one drafter: the DFlash (chain) run, one DDTree run per
// budget and the hidden-state statistics, in that order, from a prompt tokenised once. The
// one path the GUI worker and every CLI command (run, eval, compare, diagnose) take; also
// the one place DDTree budgets are parsed and validated and the token ids a run mentions
// are collected. Torch-free header.

#include "draftscope/run_types.h"

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace draftscope {

class Engine;

/// Largest DDTree budget (tree nodes per verify step) accepted anywhere (GUI and CLI): a
/// tree-verify forward holds a (budget + 1) x (context + budget + 1) visibility mask.
constexpr int kMaxTreeBudget = 4096;

/// Checks DDTree budgets: each an integer in 1..kMaxTreeBudget, none listed twice, and, when
/// any is given, `temperature` 0 (the DDTree loop is greedy). Throws Error, e.g. "DDTree
/// budget '5000' is not an integer from 1 to 4096 (0 = no trees)", "DDTree budget 4 is
/// listed twice", "DDTree runs are greedy: they need temperature 0, got 0.700000 (set it to
/// 0 or give no DDTree budgets)".
void validateTreeBudgets(const std::vector<int>& budgets, double temperature = 0.0);

/// Parses a DDTree budget list such as "4, 8, 16, 32" (entries separated by commas and/or
/// white space) and validates it (validateTreeBudgets, temperature 0). Empty text or a lone
/// "0" gives an empty list (no tree runs). Returns the budgets sorted ascending. Throws
/// Error naming the bad entry: not an integer in 1..kMaxTreeBudget, listed twice, an empty
/// entry between commas ("4,,8", "4,", ", 4"), or 0 next to other budgets.
std::vector<int> parseTreeBudgets(const std::string& text);

/// Every token id a run mentions, sorted and unique: the chain run's output ids and, per
/// verify step, its anchor, drafted tokens, target tokens, bonus token and draft top-k ids;
/// each DDTree run's output ids and, per step, its node tokens, target choices and bonus
/// token. These are the ids whose display pieces a view or a results file needs.
std::vector<std::int64_t> collectTokenIds(const RunResult& run, const std::vector<TreeRunResult>& trees);

/// Which committed sequence the hidden-state statistics of an analysis cover.
enum class HiddenStatsScope {
    None,    ///< no statistics
    Prompt,  ///< the prompt ids (every position marked prompt): results files, `eval`
    Output,  ///< the chain run's output ids, prompt and generated positions marked: the GUI
};

/// One prompt to analyse with one loaded drafter (settings.drafter).
struct PromptAnalysisRequest {
    PromptSpec prompt;
    RunSettings settings;
    /// DDTree budgets, each run once after the chain run in the given order; validated with
    /// validateTreeBudgets(treeBudgets, settings.temperature).
    std::vector<int> treeBudgets;
    HiddenStatsScope hiddenStats = HiddenStatsScope::None;
    int histogramBins = 60;  ///< bins per hidden-state series (>= 1)
};

/// What an analysis produced (plain structs, as the Engine returns them).
struct PromptAnalysis {
    RunResult run;                     ///< the chain (DFlash) run
    HiddenStateStats hiddenStats;      ///< empty if not requested or failed
    std::string hiddenStatsError;      ///< why hiddenStats is empty when it failed (the run stands)
    std::vector<TreeRunResult> trees;  ///< one per budget that finished, in request order
    /// The budget whose DDTree run failed (no later budget ran) and its error; 0 and ""
    /// when none failed. The chain run and the earlier trees stand.
    int failedTreeBudget = 0;
    std::string treeError;
};

/// A part of an analysis: the chain run, or DDTree budget `budget`, the index-th (0-based)
/// of `count` budgets.
struct AnalysisStage {
    enum class Kind { Chain, Tree };
    Kind kind = Kind::Chain;
    int budget = 0;
    std::size_t index = 0, count = 0;
};

/// Callbacks of analysePrompt (each may be empty); all run on the caller's thread.
struct AnalysisCallbacks {
    /// Before each part; the progress() calls that follow count that run's tokens.
    std::function<void(const AnalysisStage& stage)> stageStarted;
    /// After every verify step of the current run: tokens done, tokens planned.
    ProgressFn progress;
    /// After each finished part, with the analysis so far: after the chain run (with its
    /// hidden-state statistics or hiddenStatsError) and after each DDTree budget.
    std::function<void(const AnalysisStage& stage, const PromptAnalysis& soFar)> partFinished;
};

/// Analyses one prompt with drafter request.settings.drafter of `engine`: tokenises the
/// prompt once (Engine::encodePrompt), runs the chain loop (Engine::run), the hidden-state
/// statistics of request.hiddenStats (Engine::hiddenStateStats; a failure is recorded in
/// hiddenStatsError and the analysis goes on), then the DDTree loop per budget
/// (Engine::runTree; a failure is recorded in failedTreeBudget/treeError and no later budget
/// runs). Works on every target the engine loads, hybrids included. Throws Error for bad
/// budgets (validateTreeBudgets), a bad prompt or a failing chain run; Cancelled (through
/// `cancel`, polled between verify steps) stops it: the parts reported by partFinished stay
/// valid.
PromptAnalysis analysePrompt(Engine& engine, const PromptAnalysisRequest& request, const AnalysisCallbacks& callbacks = {},
                             const std::atomic<bool>* cancel = nullptr);

}  // namespace draftscope
