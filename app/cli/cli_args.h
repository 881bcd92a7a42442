#pragma once
// Options shared by draftscope-cli's subcommands: the prompt, the device, JSON output.

#include "draftscope/analysis.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

namespace draftscope::cli {

/// Prompt options shared by the subcommands.
struct PromptArgs {
    std::string text, file, ids;
    bool chat = false, noThinking = false;

    void add(CLI::App& cmd) {
        auto* t = cmd.add_option("--prompt", text, "prompt text, tokenized as is (no chat template unless --chat)");
        auto* f = cmd.add_option("--prompt-file", file, "read the prompt text from a file");
        auto* i = cmd.add_option("--prompt-ids", ids, "comma-separated token ids, e.g. 1,2,3");
        t->excludes(f)->excludes(i);
        f->excludes(i);
        cmd.add_flag("--chat", chat, "wrap the prompt as one user turn of the ChatML template");
        cmd.add_flag("--no-thinking", noThinking, "with --chat: append Qwen3's empty <think></think> block");
    }

    PromptSpec spec() const {
        PromptSpec p;
        p.chat = chat;
        p.thinking = !noThinking;
        if (!ids.empty()) {
            p.kind = PromptSpec::Kind::Ids;
            std::stringstream ss(ids);
            std::string item;
            while (std::getline(ss, item, ',')) {
                try {
                    std::size_t used = 0;
                    p.ids.push_back(std::stoll(item, &used));
                    if (used != item.size()) throw std::invalid_argument(item);
                } catch (const std::exception&) {
                    throw Error("--prompt-ids: '" + item + "' is not an integer token id");
                }
            }
        } else if (!file.empty()) {
            p.text = readFileToString(file);
        } else if (!text.empty()) {
            p.text = text;
        } else {
            throw Error("no prompt given: use --prompt TEXT, --prompt-file FILE or --prompt-ids 1,2,3 "
                        "(an empty prompt has nothing to condition the target on)");
        }
        return p;
    }
};

struct DeviceArgs {
    LoadOptions load;
    void add(CLI::App& cmd) {
        cmd.add_option("--device", load.device, "cpu, cuda or cuda:N")->capture_default_str();
        cmd.add_option("--dtype", load.dtype, "float32 or bfloat16")->capture_default_str();
        cmd.add_option("--threads", load.threads, "CPU threads (0 = all cores)")->capture_default_str()->check(CLI::Range(0, 1024));
    }
};

/// Loop revision and sampling options (--loop, --temperature, --top-p, --top-k, --seed and,
/// where per-step records are kept, --record-top-k), shared by run, eval, compare and
/// diagnose: registered, parsed and validated here only.
struct LoopArgs {
    std::string loop = "current";

    /// Registers the options on `cmd`, binding them to `s` (which must outlive parsing).
    void add(CLI::App& cmd, RunSettings& s, bool recordTopK = true) {
        cmd.add_option("--loop", loop, "reference revision, selecting the verification loop and the drafter's rotary "
                                       "numerics: 'current' (newest official code: dflash_generate with a clipped last "
                                       "block, stop tokens inside the loop, lossless rejection sampling; rotary "
                                       "inv_freq in float32) or '2026-04' (the April 2026 reference: full blocks; "
                                       "inv_freq rounded through the drafter's checkpoint dtype, as goldens.json)")
            ->capture_default_str()->check(CLI::IsMember({"current", "2026-04"}));
        cmd.add_option("--temperature", s.temperature, "0 = greedy; > 0 samples (current loop: speculative rejection "
                                                       "sampling; 2026-04: argmax drafts, sampled target)")
            ->capture_default_str();
        cmd.add_option("--top-p", s.topP, "sampling: nucleus filter in (0, 1], applied to target and drafter (1 = off)")
            ->capture_default_str();
        cmd.add_option("--top-k", s.topK, "sampling: keep the K most probable tokens, target and drafter (0 = off)")
            ->capture_default_str();
        cmd.add_option("--seed", s.seed, "seed of the sampler")->capture_default_str();
        if (recordTopK)
            cmd.add_option("--record-top-k", s.recordTopK, "draft top-k recorded per position")->capture_default_str();
    }

    /// Sets s.loop from --loop and validates the sampling options; throws Error naming the
    /// option (e.g. "--top-p must be in (0, 1] (1 = off), got 1.5").
    void apply(RunSettings& s) const {
        s.loop = parseLoopRevision(loop);
        try {
            validateSampling(s);
        } catch (const Error& e) {
            throw Error(std::string("--") + e.what());
        }
    }
};

/// --ddtree-budget (run, eval): repeatable, each value one budget or a list ("4,16", "4 16"),
/// parsed and validated by parseTreeBudgets / validateTreeBudgets (draftscope/analysis.h),
/// as the GUI's budget field.
struct TreeBudgetArgs {
    std::vector<std::string> values;

    void add(CLI::App& cmd) {
        cmd.add_option("--ddtree-budget", values,
                       "also run DDTree with this many tree nodes per step, 1.." + std::to_string(kMaxTreeBudget) +
                           " (repeatable, or a list such as 4,16; 0 = no tree runs)")
            ->take_all();
    }

    /// The budgets, sorted; throws Error prefixed "--ddtree-budget: " for a bad list, or for
    /// budgets with a `temperature` other than 0.
    std::vector<int> budgets(double temperature) const {
        std::string joined;
        for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
        try {
            const auto b = parseTreeBudgets(joined);
            validateTreeBudgets(b, temperature);
            return b;
        } catch (const Error& e) {
            throw Error(std::string("--ddtree-budget: ") + e.what());
        }
    }
};

/// Writes `j` to `path` atomically (pretty-printed, invalid UTF-8 replaced).
inline void writeJson(const std::string& path, const nlohmann::json& j) {
    writeFileAtomically(path, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace draftscope::cli
