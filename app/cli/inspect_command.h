#pragma once
// `draftscope-cli inspect`: a checkpoint's config, tensors with statistics, parameter
// totals, the architecture check, and optionally a per-tensor diff against another one.

#include "cli/cli_args.h"

#include <string>

namespace draftscope::cli {

/// Options and execution of the inspect subcommand.
struct InspectCommand {
    CLI::App* command = nullptr;
    std::string path, config, diffWith, diffConfig, jsonOut, csvOut;

    /// Registers the subcommand and its options on `app`.
    void add(CLI::App& app);
    /// Runs it; returns the exit code (0; 1 on errors, thrown as Error).
    int run() const;
};

}  // namespace draftscope::cli
