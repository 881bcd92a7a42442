#pragma once
// Options shared by draftscope-cli's subcommands: the prompt, the device, JSON output, and
// how option values are checked: every numeric option through the backend's validators
// (settings_validation.h), every path once through checkPaths, each
// error re-thrown under the option's name ("--temperature: expected a finite number >= 0
// (0 = greedy), found nan").

#include "draftscope/analysis.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/settings_validation.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
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

/// `e` with an option named as the backend names it ("cuda-graphs", from the engine's own
/// checks while loading) spelled as on the command line ("--cuda-graphs"); where `cmd` is
/// given, only if `cmd` has that option. Options already spelled with dashes stay as they are.
inline InvalidSetting spelledAsTyped(const InvalidSetting& e, const CLI::App* cmd = nullptr) {
    const auto& o = e.option();
    if (o.empty() || o[0] == '-' || (cmd && cmd->get_option_no_throw("--" + o) == nullptr)) return e;
    return e.renamed("--" + o);
}

/// An input path option as given: its spelling ("--target"; a positional's name, "path"),
/// value ("" = not given) and what it must be.
struct InputPath {
    std::string option, path;
    PathKind kind;
};

/// An output path option as given: its spelling ("--json") and value ("" = not given).
struct OutputPath {
    std::string option, path;
};

namespace detail {

/// Refuses outputs that would overwrite what the command reads or each other (checkPaths).
inline void checkOutputsApart(const std::vector<OutputPath>& outputs, const std::vector<InputPath>& inputs) {
    namespace fs = std::filesystem;
    // The file a path names once written: absolute, symlinks followed (a dangling one too:
    // the write would create its target), "." and ".." resolved.
    const auto canonical = [](const std::string& text) {
        std::error_code ec;
        fs::path p = fs::absolute(fs::path(text), ec);
        if (ec) p = fs::path(text);
        for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
            const auto target = fs::read_symlink(p, ec);
            if (ec) break;
            p = target.is_absolute() ? target : p.parent_path() / target;
        }
        auto c = fs::weakly_canonical(p, ec);
        return ec ? p.lexically_normal() : c.lexically_normal();
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
    // Each path resolved once (symlinks, ".."); per input, the directory whose checkpoint
    // files it reads: a model directory itself, or the directory of a .pt file (its
    // config.json beside it); empty for other inputs.
    std::vector<fs::path> outPaths, inPaths, inModelDirs;
    for (const auto& out : outputs) outPaths.push_back(out.path.empty() ? fs::path() : canonical(out.path));
    for (const auto& in : inputs) {
        inPaths.push_back(in.path.empty() ? fs::path() : canonical(in.path));
        const auto& p = inPaths.back();
        std::error_code ec;
        fs::path modelDir;
        if (!in.path.empty() && fs::is_directory(p, ec))
            modelDir = p;
        else if (!in.path.empty() && p.extension() == ".pt")
            modelDir = p.parent_path();
        inModelDirs.push_back(modelDir);
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const auto& out = outputs[i];
        const auto& o = outPaths[i];
        if (out.path.empty()) continue;
        for (std::size_t j = 0; j < i; ++j)
            if (!outputs[j].path.empty() && outPaths[j] == o)
                throw Error(out.option + ": '" + escapeNonPrintable(out.path) + "' is also the file of " +
                            outputs[j].option + ": give each output its own file");
        for (std::size_t k = 0; k < inputs.size(); ++k) {
            const auto& in = inputs[k];
            const auto& p = inPaths[k];
            const auto& modelDir = inModelDirs[k];
            if (in.path.empty()) continue;
            if (o == p)
                throw Error(out.option + ": '" + escapeNonPrintable(out.path) + "' is also read as " + in.option +
                            ": writing it would destroy the input");
            if (!modelDir.empty() && o.parent_path() == modelDir && checkpointFile(o))
                throw Error(out.option + ": '" + escapeNonPrintable(out.path) + "' would overwrite a checkpoint file in " +
                            in.option + "'s directory '" +
                            escapeNonPrintable(modelDir == p ? in.path : modelDir.string()) + "'");
        }
    }
}

}  // namespace detail

/// The one check of a subcommand's path options, before any work (each subcommand lists
/// its paths once, here): every given input exists as its kind (validateInputPath: an
/// InvalidSetting naming the option); every given output passes the output-file policy
/// (checkOutputPath; its Error re-thrown prefixed "<option>: "); and no output overwrites an
/// input or another output: the same file as an input or as another output, or a file
/// inside an input model directory or beside an input .pt file named like a checkpoint's
/// (config.json, tokenizer files,
/// *.safetensors, *.safetensors.index.json, *.pt, *.bin). Throws Error naming the output
/// option and the other ("--json: '...' is also the file of --out: give each output its
/// own file"; "--out: '...' is also read as --prompts: writing it would destroy the input";
/// "--out: '...' would overwrite a checkpoint file in --model's directory '...'").
inline void checkPaths(const std::vector<InputPath>& inputs, const std::vector<OutputPath>& outputs) {
    for (const auto& in : inputs)
        if (!in.path.empty()) validateInputPath(in.option, in.path, in.kind);
    for (const auto& out : outputs) {
        if (out.path.empty()) continue;
        try {
            checkOutputPath(out.path);
        } catch (const Error& e) {
            throw Error(out.option + ": " + e.what());
        }
    }
    detail::checkOutputsApart(outputs, inputs);
}

/// Refuses a config option (`option`, e.g. "--drafter-config") given for a checkpoint that
/// is a model directory (`of`, its option, and `checkpoint`): only a .pt training
/// checkpoint takes an outside config.json; a directory is read with its own, so the option
/// would be ignored. Throws Error naming both.
inline void checkConfigOnlyForPt(const std::string& option, const std::string& config, const std::string& of,
                                 const std::string& checkpoint) {
    std::error_code ec;
    if (!config.empty() && std::filesystem::is_directory(checkpoint, ec))
        throw Error(option + ": only for a .pt checkpoint file; " + of + " '" + escapeNonPrintable(checkpoint) +
                    "' is a model directory, read with its own config.json");
}

/// Prompt options shared by the subcommands.
struct PromptArgs {
    std::string text, file, ids;
    bool chat = false, noThinking = false;

    /// Registers the options; contradictions are usage errors at parsing (CLI11: "--prompt-ids
    /// excludes --chat", "--no-thinking requires --chat").
    void add(CLI::App& cmd) {
        text_ = cmd.add_option("--prompt", text, "prompt text, tokenized as is (no chat template unless --chat)");
        file_ = cmd.add_option("--prompt-file", file, "read the prompt text from a file");
        ids_ = cmd.add_option("--prompt-ids", ids, "comma-separated token ids, e.g. 1,2,3");
        text_->excludes(file_)->excludes(ids_);
        file_->excludes(ids_);
        chat_ = cmd.add_flag("--chat", chat, "wrap the prompt text as one user turn of the ChatML template");
        chat_->excludes(ids_);  // ids are used as given
        noThinking_ = cmd.add_flag("--no-thinking", noThinking, "with --chat: append Qwen3's empty <think></think> block")
                          ->needs(chat_);
    }

    /// Makes `other` (e.g. a prompt-set option) and every prompt option, --chat and
    /// --no-thinking included, exclude each other.
    void excludes(CLI::Option* other) {
        for (auto* o : {text_, file_, ids_, chat_, noThinking_}) o->excludes(other);
    }

    /// Whether a single prompt was given (--prompt, --prompt-file or --prompt-ids).
    bool given() const { return !text.empty() || !file.empty() || !ids.empty(); }

    /// --prompt-file as an input of checkPaths.
    InputPath pathOption() const { return {"--prompt-file", file, PathKind::File}; }

    /// The prompt; call after checkPaths with pathOption(). Throws Error for bad --prompt-ids,
    /// an unreadable --prompt-file or no prompt.
    PromptSpec spec() const {
        PromptSpec p;
        p.chat = chat;
        p.thinking = !noThinking;
        if (!ids.empty()) {
            p.kind = PromptSpec::Kind::Ids;
            // Items separated by commas, spaces around them allowed ("1, 2, 3"); an empty item
            // ("1,", "1,,2") is refused, not skipped.
            for (const auto& item : splitCommas(ids)) {
                if (item.empty())
                    throw Error("--prompt-ids: empty item in '" + escapeNonPrintable(ids) +
                                "': expected comma-separated integer token ids, e.g. 1,2,3");
                std::int64_t id = 0;
                const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
                if (ec == std::errc::result_out_of_range)
                    throw Error("--prompt-ids: '" + escapeNonPrintable(item) + "' is out of range for a token id");
                if (ec != std::errc() || end != item.data() + item.size())
                    throw Error("--prompt-ids: '" + escapeNonPrintable(item) + "' is not an integer token id");
                if (id < 0) throw Error("--prompt-ids: '" + item + "' is negative: token ids are >= 0");
                p.ids.push_back(id);
            }
        } else if (!file.empty()) {  // checked with the other paths (pathOption, checkPaths)
            try {
                p.text = readFileToString(file);
            } catch (const Error& e) {
                throw Error(std::string("--prompt-file: ") + e.what());
            }
            if (p.text.empty())
                throw Error("--prompt-file: '" + escapeNonPrintable(file) + "' is empty: nothing to condition the target on");
        } else if (!text.empty()) {
            p.text = text;
        } else {
            throw Error("no prompt given: use --prompt TEXT, --prompt-file FILE or --prompt-ids 1,2,3 "
                        "(an empty prompt has nothing to condition the target on)");
        }
        return p;
    }

private:
    CLI::Option *text_ = nullptr, *file_ = nullptr, *ids_ = nullptr, *chat_ = nullptr, *noThinking_ = nullptr;
};

/// The input paths of a command over one target, its drafters, a prompt set and a single
/// prompt (compare, diagnose), for checkPaths.
inline std::vector<InputPath> modelAndPromptInputs(const std::string& target, const std::vector<std::string>& drafters,
                                                   const std::string& promptSet, const PromptArgs& prompt) {
    std::vector<InputPath> inputs{{"--target", target, PathKind::Directory}};
    for (const auto& d : drafters) inputs.push_back({"--drafter", d, PathKind::FileOrDirectory});
    inputs.push_back({"--prompts", promptSet, PathKind::File});
    inputs.push_back(prompt.pathOption());
    return inputs;
}

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
        cmd.add_option("--mxfp4-experts", load.mxfp4Experts,
                       "MXFP4 experts (gpt-oss): packed (dequantised per chosen expert each forward, least memory), "
                       "unpacked (dequantised at load, fastest) or auto (unpacked where they fit)")
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
