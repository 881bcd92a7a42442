#pragma once
// Options shared by draftscope-cli's subcommands: the prompt, the device, JSON output, and
// how option values are checked: every numeric option through the backend's validators
// (settings_validation.h), every path through validateInputPath / checkOutputPath, each
// error re-thrown under the option's name ("--temperature: expected a finite number >= 0
// (0 = greedy), found nan").

#include "draftscope/analysis.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/settings_validation.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace draftscope::cli {

/// Runs `check` (a backend validator); an InvalidSetting it throws is re-thrown with the
/// option spelled as on the command line: "--" + its name + `suffix` (compare-targets'
/// "--device-a" is "device" with suffix "-a").
template <class F>
void checkOptions(F&& check, const std::string& suffix = {}) {
    try {
        check();
    } catch (const InvalidSetting& e) {
        throw e.renamed("--" + e.option() + suffix);
    }
}

/// Checks input path option `option` (e.g. "--target") when given (validateInputPath).
inline void checkInputOption(const std::string& option, const std::string& path, PathKind kind) {
    if (!path.empty()) validateInputPath(option, path, kind);
}

/// Checks output path option `option` (e.g. "--json") when given, before any work: the
/// output-file policy (checkOutputPath); its Error is re-thrown prefixed "<option>: ".
inline void checkOutputOption(const std::string& option, const std::string& path) {
    if (path.empty()) return;
    try {
        checkOutputPath(path);
    } catch (const Error& e) {
        throw Error(option + ": " + e.what());
    }
}

/// A path option as given: its command-line spelling ("--json") and value ("" = not given).
struct PathOption {
    std::string option, path;
};

/// Refuses, before any work, outputs that would overwrite what the command reads or each
/// other: an output that is the same file as an input file or as another output, and an
/// output inside an input model directory named like a file of a checkpoint (config.json,
/// tokenizer files, *.safetensors, *.safetensors.index.json, *.pt, *.bin). Throws Error
/// naming the output option and the other ("--json: '...' is also the file of --out: give
/// each output its own file"; "--out: '...' would overwrite a checkpoint file in --model's
/// directory '...'").
inline void checkOutputsApart(const std::vector<PathOption>& outputs, const std::vector<PathOption>& inputs) {
    namespace fs = std::filesystem;
    const auto canonical = [](const std::string& p) {
        std::error_code ec;
        auto c = fs::weakly_canonical(fs::path(p), ec);
        return ec ? fs::absolute(fs::path(p)).lexically_normal() : c;
    };
    const auto checkpointFile = [](const fs::path& p) {
        const auto name = p.filename().string();
        const auto ends = [&](const std::string& tail) {
            return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
        };
        return name == "config.json" || name == "generation_config.json" || name.rfind("tokenizer", 0) == 0 ||
               name == "special_tokens_map.json" || name == "chat_template.jinja" || ends(".safetensors") ||
               ends(".safetensors.index.json") || ends(".pt") || ends(".bin");
    };
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const auto& out = outputs[i];
        if (out.path.empty()) continue;
        const auto o = canonical(out.path);
        for (std::size_t j = 0; j < i; ++j)
            if (!outputs[j].path.empty() && canonical(outputs[j].path) == o)
                throw Error(out.option + ": '" + escapeNonPrintable(out.path) + "' is also the file of " +
                            outputs[j].option + ": give each output its own file");
        for (const auto& in : inputs) {
            if (in.path.empty()) continue;
            const auto p = canonical(in.path);
            std::error_code ec;
            if (o == p)
                throw Error(out.option + ": '" + escapeNonPrintable(out.path) + "' is the file " + in.option +
                            " reads: writing it would destroy the input");
            if (fs::is_directory(p, ec) && o.parent_path() == p && checkpointFile(o))
                throw Error(out.option + ": '" + escapeNonPrintable(out.path) + "' would overwrite a checkpoint file in " +
                            in.option + "'s directory '" + escapeNonPrintable(in.path) + "'");
        }
    }
}

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
            validateInputPath("--prompt-file", file, PathKind::File);
            try {
                p.text = readFileToString(file);
            } catch (const Error& e) {
                throw Error(std::string("--prompt-file: ") + e.what());
            }
        } else if (!text.empty()) {
            p.text = text;
        } else {
            throw Error("no prompt given: use --prompt TEXT, --prompt-file FILE or --prompt-ids 1,2,3 "
                        "(an empty prompt has nothing to condition the target on)");
        }
        return p;
    }
};

/// --device, --dtype, --threads, checked by validate(LoadOptions) (check(), before loading).
struct DeviceArgs {
    LoadOptions load;
    /// A bad --gpu-memory, kept from parsing (which fills load.deviceMemory) for check().
    std::optional<InvalidSetting> gpuMemoryError;
    void add(CLI::App& cmd) {
        cmd.add_option("--device", load.device,
                       "cpu, cuda, cuda:N, a comma-separated list splitting the target's layers across devices "
                       "(cuda:0,cuda:1; cpu,cpu makes two groups on the CPU), or auto (every visible GPU)")
            ->capture_default_str();
        cmd.add_option("--dtype", load.dtype, "float32 or bfloat16")->capture_default_str();
        cmd.add_option("--threads", load.threads, "CPU threads, 0.." + std::to_string(kMaxThreads) + " (0 = all cores)")
            ->capture_default_str();
        cmd.add_option_function<std::string>(
            "--gpu-memory",
            [this](const std::string& text) {
                try {
                    load.deviceMemory = parseMemoryLimits(text);
                } catch (const InvalidSetting& e) {
                    gpuMemoryError = e;
                }
            },
            "usable memory per device of --device, e.g. 40GiB,40GiB (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB); "
            "default: a GPU's free memory, the CPU unlimited");
        cmd.add_option("--split-after", load.splitAfterLayers,
                       "force the placement: device g+1 starts after decoder layer N_g (0-based; one fewer than devices)")
            ->delimiter(',');
        cmd.add_option("--drafter-device", load.drafterDevice,
                       "device of the drafters and tapped features (one of --device); default: the most room left");
        cmd.add_option("--max-context", load.maxContext, "tokens of KV cache the memory plan reserves per layer")
            ->capture_default_str();
        cmd.add_option("--cuda-graphs", load.cudaGraphs,
                       "DFlash verify steps as captured CUDA graphs: auto (where the GPU and the target allow), "
                       "on (refused where impossible) or off")
            ->capture_default_str();
    }
    /// Throws InvalidSetting naming the option ("--device: expected cpu, cuda, ..., found 'tpu'").
    void check() const {
        checkOptions([&] {
            if (gpuMemoryError) throw *gpuMemoryError;
            validate(load);
        });
    }
};

/// Loop revision and sampling options (--loop, --temperature, --top-p, --top-k, --seed and,
/// where per-step records are kept, --record-top-k), shared by run, eval, compare and
/// diagnose: registered, parsed and validated here only.
struct LoopArgs {
    std::string loop = "current";
    std::string seed = "0";  ///< parsed by parseSeed (CLI11 would wrap "-1" around to 2^64 - 1)

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
        cmd.add_option("--seed", seed, "seed of the sampler, 0 to 2^64 - 1")->capture_default_str();
        if (recordTopK)
            cmd.add_option("--record-top-k", s.recordTopK, "draft top-k recorded per position")->capture_default_str();
    }

    /// Sets s.loop from --loop and s.seed from --seed (parseSeed) and validates all of `s`
    /// (validate(RunSettings): --max-new too); throws InvalidSetting naming the option (e.g. "--top-p: expected a number in
    /// (0, 1] (1 = off), found 1.5").
    void apply(RunSettings& s) const {
        s.loop = parseLoopRevision(loop);
        checkOptions([&] {
            s.seed = parseSeed(seed);
            validate(s);
        });
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
