#pragma once
// `draftscope-cli run`: the DFlash verification loop on one prompt (per-step report, summary,
// generated text), optionally DDTree at given budgets, optionally the whole run as JSON.

#include "cli/cli_args.h"

#include <atomic>
#include <string>
#include <vector>

namespace draftscope::cli {

/// Options and execution of the run subcommand.
struct RunCommand {
    CLI::App* command = nullptr;
    std::string targetDir, drafterDir, drafterConfig, jsonOut;
    PromptArgs prompt;
    DeviceArgs device;
    RunSettings settings;
    TreeBudgetArgs budgets;  ///< --ddtree-budget (parsed and checked by run(), before loading)
    bool quiet = false;
    LoopArgs loop;

    /// Registers the subcommand and its options on `app`.
    void add(CLI::App& app);
    /// Runs it; returns the exit code (0; bad input throws Error, Ctrl-C throws Cancelled).
    int run(const std::atomic<bool>& cancel) const;
};

}  // namespace draftscope::cli
