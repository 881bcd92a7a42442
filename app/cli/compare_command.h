#pragma once
// `draftscope-cli compare` (two drafters on one target) and `compare-targets` (one target
// loaded two ways).

#include "cli/cli_args.h"

#include <atomic>
#include <string>
#include <vector>

namespace draftscope::cli {

/// Drafter A against drafter B on the same target and prompts.
struct CompareDraftersCommand {
    CLI::App* command = nullptr;
    std::string targetDir, promptsFile, jsonOut;
    std::vector<std::string> drafters;
    PromptArgs prompt;
    DeviceArgs device;
    RunSettings settings;
    LoopArgs loop;

    void add(CLI::App& app);
    int run(const std::atomic<bool>& cancel) const;
};

/// The same target loaded two ways; per-layer hidden-state differences.
struct CompareTargetsCommand {
    CLI::App* command = nullptr;
    std::string targetA, targetB, jsonOut;
    PromptArgs prompt;
    LoadOptions loadA, loadB;

    void add(CLI::App& app);
    int run() const;
};

}  // namespace draftscope::cli
