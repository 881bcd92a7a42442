#pragma once
// `draftscope-cli diagnose`: bug-signature checks for one or more drafters on one target.

#include "cli/cli_args.h"

#include <atomic>
#include <string>
#include <vector>

namespace draftscope::cli {

/// Options and execution of the diagnose subcommand.
struct DiagnoseCommand {
    CLI::App* command = nullptr;
    std::string targetDir, jsonOut, promptsFile;
    std::vector<std::string> drafters;
    PromptArgs prompt;
    DeviceArgs device;
    std::int64_t maxNew = 96;
    std::string failOn = "none";
    std::string probes = "all";  ///< --probes: comma-separated probe families (diagnoseProbeFamilies())
    RunSettings sampling;  ///< loop revision and sampling options of the diagnosis runs
    LoopArgs loop;

    /// Registers the subcommand and its options on `app`.
    void add(CLI::App& app);
    /// Runs it; returns the exit code (0, or 3 when a finding reaches --fail-on).
    int run(const std::atomic<bool>& cancel) const;
};

}  // namespace draftscope::cli
