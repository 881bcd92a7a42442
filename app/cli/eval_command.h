#pragma once
// `draftscope-cli eval`: a prompt set through one target and one or more drafters, written
// to one results file (docs/RESULTS_FORMAT.md) and summarised on stdout.

#include "cli/cli_args.h"
#include "draftscope/engine.h"
#include "draftscope/evaluation.h"
#include "draftscope/results_file.h"

#include <atomic>
#include <string>
#include <vector>

namespace draftscope {

/// The command line of `eval`.
struct EvalArgs {
    std::string targetDir;
    std::vector<std::string> drafterDirs;
    std::string promptsPath;
    std::string outPath;
    std::string jsonOut;
    LoadOptions load;       ///< --device (the whole list), --dtype, --threads (all replicas together)
    EvalSettings settings;
    int replicas = 1;       ///< --replicas (replicaLoadOptions)
    ResultsShard shard;     ///< --shard
};

/// Runs the evaluation. Returns the exit code: 0 done, 1 some prompts failed (the results
/// file is written anyway), 130 interrupted through `cancel` (the finished prompts are
/// written). Throws Error on bad input (prompt set, models, output path) before any work.
int evalCommand(const EvalArgs& args, const std::atomic<bool>* cancel);

namespace cli {

/// Options of the eval subcommand; run() completes EvalArgs from them and calls evalCommand.
struct EvalCommand {
    CLI::App* command = nullptr;
    EvalArgs args;
    std::string turns = "first";
    std::string shard;  ///< --shard text, parsed by parseShard
    bool noThinking = false;
    LoopArgs loop;
    TreeBudgetArgs budgets;
    DeviceArgs device;

    /// Registers the subcommand and its options on `app`.
    void add(CLI::App& app);
    /// Runs it; returns evalCommand's exit code (a bad --ddtree-budget throws Error first).
    int run(const std::atomic<bool>& cancel) const;
};

}  // namespace cli

}  // namespace draftscope
