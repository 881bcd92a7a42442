#pragma once
// `draftscope-cli merge`: the shard files of one evaluation (`eval --shard I/N`) into the
// results file, and optionally the --json summary, that the unsharded eval writes.

#include "cli/cli_args.h"

#include <string>
#include <vector>

namespace draftscope::cli {

/// Options and execution of the merge subcommand.
struct MergeCommand {
    CLI::App* command = nullptr;
    std::vector<std::string> inputs;
    std::string outPath, jsonOut;

    /// Registers the subcommand and its options on `app`.
    void add(CLI::App& app);
    /// Runs it (mergeResultsFiles, results_merge.h); returns 0, or 1 when some prompts
    /// failed (as eval). Bad or mismatching input throws Error naming the file and field.
    int run() const;
};

}  // namespace draftscope::cli
