#pragma once
// Options shared by draftscope-cli's subcommands: the prompt, the device, JSON output.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/safetensors.h"

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

/// Writes `j` to `path` atomically (pretty-printed, invalid UTF-8 replaced).
inline void writeJson(const std::string& path, const nlohmann::json& j) {
    writeFileAtomically(path, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace draftscope::cli
