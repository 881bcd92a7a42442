#pragma once
// `draftscope-cli forward`: the target on one prompt; hidden states, logits and input ids
// saved as float32/int64 safetensors (HF convention: hidden_states[0] = embeddings).

#include "cli/cli_args.h"

#include <string>

namespace draftscope::cli {

/// Options and execution of the forward subcommand.
struct ForwardCommand {
    CLI::App* command = nullptr;
    std::string modelDir, outPath;
    PromptArgs prompt;
    DeviceArgs device;

    /// Registers the subcommand and its options on `app`.
    void add(CLI::App& app);
    /// Runs it; returns the exit code (0; bad input throws Error).
    int run() const;
};

}  // namespace draftscope::cli
