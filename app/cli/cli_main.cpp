// draftscope-cli: run a target and a DFlash drafter on a prompt, evaluate a prompt set into a
// results file, or dump a target forward.
// Exit codes: 0 success, 1 bad input or failed work (message on stderr), 2 usage error,
// 130 interrupted (Ctrl-C).

#include "cli/cli_args.h"
#include "cli/compare_command.h"
#include "cli/diagnose_command.h"
#include "cli/inspect_command.h"
#include "cli/eval_command.h"
#include "cli/run_report.h"
#include "draftscope/analysis.h"
#include "draftscope/engine.h"
#include "draftscope/masks.h"
#include "draftscope/errors.h"
#include "draftscope/results_json.h"
#include "draftscope/safetensors.h"
#include "draftscope/tokenizer.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <iostream>
#include <map>
#include <sstream>
#include <unistd.h>

using namespace draftscope;
using namespace draftscope::cli;

namespace {

std::atomic<bool> g_cancel{false};
/// First Ctrl-C: stop after the current verify step, keeping what finished. Second: exit now
/// (loading and prefill are not interruptible otherwise).
extern "C" void onSigint(int) {
    if (g_cancel.exchange(true)) std::_Exit(130);
}


int runCommand(const std::string& targetDir, const std::string& drafterDir, const std::string& drafterConfig,
               const PromptArgs& prompt,
               const DeviceArgs& dev, RunSettings settings, const std::vector<int>& budgets,
               const std::string& jsonOut, bool quiet) {
    const auto spec = prompt.spec();  // bad prompt arguments fail before the models load
    Engine engine;
    std::cerr << "loading target " << targetDir << " (" << dev.load.device << ", " << dev.load.dtype << ")\n";
    const auto target = engine.loadTarget(targetDir, dev.load);
    {
        std::map<std::string, int> types;
        for (const auto& t : target.layerTypes) types[t]++;
        std::cerr << "target: " << target.architecture << ", " << target.numLayers << " layers (";
        bool first = true;
        for (const auto& [t, n] : types) std::cerr << (first ? "" : ", ") << n << " " << t, first = false;
        std::cerr << ")\n";
    }
    std::cerr << "loading drafter " << drafterDir << "\n";
    const auto drafter = engine.loadDrafter(drafterDir, drafterConfig);
    if (!drafter.source.empty()) std::cerr << "drafter: " << drafter.source << "\n";
    std::cerr << "drafter: " << drafter.numLayers << " layers (" << describeLayout(drafter.layout) << "), block size "
              << drafter.blockSize << "\n";
    for (const auto& w : drafter.warnings) std::cerr << "warning: drafter: " << w << "\n";
    if (!drafter.unexpectedTensors.empty())
        std::cerr << "warning: drafter checkpoint has " << drafter.unexpectedTensors.size()
                  << " unexpected tensor(s), e.g. " << drafter.unexpectedTensors.front() << "\n";
    if (!target.unexpectedTensors.empty())
        std::cerr << "warning: target checkpoint has " << target.unexpectedTensors.size()
                  << " unexpected tensor(s), e.g. " << target.unexpectedTensors.front() << "\n";

    const bool tty = ::isatty(STDERR_FILENO);
    PromptAnalysisRequest request;
    request.prompt = spec;
    request.settings = settings;
    request.treeBudgets = budgets;
    AnalysisCallbacks callbacks;
    callbacks.progress = [&](std::int64_t done, std::int64_t total) {
        if (tty) std::cerr << "\rgenerating " << done << "/" << total << " tokens" << std::flush;
    };
    const Tokenizer* tok = engine.tokenizer();
    nlohmann::json runJson;
    // Each part is reported as soon as it is done: the chain run, then one line per budget.
    callbacks.partFinished = [&](const AnalysisStage& stage, const PromptAnalysis& a) {
        if (tty) std::cerr << "\r\033[K";
        if (stage.kind == AnalysisStage::Kind::Tree) {
            const auto& tree = a.trees.back();
            char line[128];
            std::snprintf(line, sizeof line, "  %-16s tau %.3f over %zu steps\n",
                          ("budget " + std::to_string(stage.budget)).c_str(), tree.tau, tree.steps.size());
            std::cout << line;
            runJson["ddtree"].push_back(toJson(tree));
            return;
        }
        const auto& run = a.run;
        if (!quiet) {
            ReportOptions opt;
            opt.color = ::isatty(STDOUT_FILENO);
            printRunReport(std::cout, run, tok, opt);
            std::cout << "\n";
        }
        printRunSummary(std::cout, run);
        if (tok && !quiet) {
            std::vector<std::int64_t> generated(run.outputIds.begin() + static_cast<std::ptrdiff_t>(run.promptIds.size()),
                                                run.outputIds.end());
            std::cout << "\n--- generated text ---\n" << tok->decode(generated) << "\n--- end ---\n";
        }
        runJson = toJson(run);
        if (!budgets.empty()) {
            runJson["ddtree"] = nlohmann::json::array();
            std::cout << "\nDDTree (one tree-verify pass per step; acceptance length = accepted path, root included):\n";
            char line[128];
            std::snprintf(line, sizeof line, "  %-16s tau %.3f over %zu steps\n", "chain (DFlash)", run.tau, run.steps.size());
            std::cout << line;
        }
    };
    const auto analysis = analysePrompt(engine, request, callbacks, &g_cancel);
    if (!analysis.treeError.empty()) throw Error(analysis.treeError);
    if (!jsonOut.empty()) {
        nlohmann::json j = {{"tool", "draftscope-cli run"},
                            {"target", toJson(target)},
                            {"drafter", toJson(drafter)},
                            {"runs", nlohmann::json::array({runJson})}};
        writeJson(jsonOut, j);
        std::cerr << "wrote " << jsonOut << "\n";
    }
    return 0;
}

int forwardCommand(const std::string& modelDir, const PromptArgs& prompt, const DeviceArgs& dev,
                   const std::string& outPath) {
    const auto spec = prompt.spec();
    Engine engine;
    engine.loadTarget(modelDir, dev.load);
    const auto r = engine.forward(spec);
    const auto T = static_cast<std::int64_t>(r.ids.size());
    SafetensorsWriter w;
    w.addFloat32("hidden_states", {r.numLayers + 1, T, r.hiddenSize}, r.hiddenStates);
    w.addFloat32("logits", {T, r.vocabSize}, r.logits);
    w.addInt64("input_ids", {T}, r.ids);
    w.setMetadata("producer", "draftscope-cli forward");
    w.setMetadata("model", modelDir);
    w.setMetadata("convention", "hidden_states[0] = embeddings, hidden_states[L] = after the final norm (HF)");
    w.write(outPath);
    std::cout << "wrote " << outPath << ": hidden_states [" << r.numLayers + 1 << ", " << T << ", "
              << r.hiddenSize << "], logits [" << T << ", " << r.vocabSize << "], input_ids [" << T << "]\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"draftscope-cli: run DFlash drafters against their target and see where drafts go wrong"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "draftscope 0.1.0");

    auto* run = app.add_subcommand("run", "run the DFlash verification loop on one prompt");
    std::string targetDir, drafterDir, drafterConfig, jsonOut;
    PromptArgs runPrompt;
    DeviceArgs runDev;
    RunSettings settings;
    TreeBudgetArgs runBudgets;
    bool quiet = false;
    run->add_option("--target", targetDir, "target model directory (HF layout)")->required();
    run->add_option("--drafter", drafterDir, "DFlash drafter directory or .pt training checkpoint")->required();
    run->add_option("--drafter-config", drafterConfig, "config.json of a .pt drafter (default: the one beside it)");
    runPrompt.add(*run);
    run->add_option("--max-new", settings.maxNewTokens, "tokens to generate")->capture_default_str()->check(CLI::Range(1, 1 << 24));
    run->add_flag("--ignore-eos", settings.ignoreEos, "do not stop at end-of-sequence tokens");
    LoopArgs runLoop;
    runLoop.add(*run, settings);
    runBudgets.add(*run);
    run->add_option("--json", jsonOut, "write the run (per-step records included) as JSON");
    run->add_flag("--quiet", quiet, "print only the summary");
    runDev.add(*run);

    auto* fwd = app.add_subcommand("forward", "run the target on a prompt and save hidden states and logits");
    std::string modelDir, outPath;
    PromptArgs fwdPrompt;
    DeviceArgs fwdDev;
    fwd->add_option("--model", modelDir, "target model directory")->required();
    fwdPrompt.add(*fwd);
    fwd->add_option("--out", outPath, "output .safetensors (float32 hidden_states [L+1,T,H], logits [T,V])")->required();
    fwdDev.add(*fwd);

    DiagnoseCommand diagnose;
    diagnose.add(app);
    InspectCommand inspect;
    inspect.add(app);
    CompareDraftersCommand compare;
    compare.add(app);
    CompareTargetsCommand compareTargets;
    compareTargets.add(app);
    auto* eval = app.add_subcommand("eval", "run a prompt set (JSONL) and write one results file the GUI opens");
    EvalArgs evalArgs;
    std::string turns = "first";
    bool evalNoThinking = false;
    eval->add_option("--target", evalArgs.targetDir, "target model directory (HF layout)")->required();
    eval->add_option("--drafter", evalArgs.drafterDirs, "DFlash drafter directory (repeatable: compare drafters)")
        ->required()->take_all();
    eval->add_option("--prompts", evalArgs.promptsPath,
                     "prompt set, JSONL: {\"prompt\": TEXT} or {\"turns\": [...]} or {\"messages\": [...]}, optional id")
        ->required();
    eval->add_option("--out", evalArgs.outPath, "results file to write (e.g. results.dsresults)")->required();
    eval->add_option("--json", evalArgs.jsonOut, "also write a JSON summary (macro_tau, per-prompt tau, rates, histogram)");
    eval->add_option("--max-new", evalArgs.settings.run.maxNewTokens, "tokens to generate per prompt")
        ->capture_default_str()->check(CLI::Range(1, 1 << 24));
    eval->add_option("--limit", evalArgs.settings.limit, "use only the first N lines of the prompt set (0 = all)")
        ->capture_default_str()->check(CLI::NonNegativeNumber);
    TreeBudgetArgs evalBudgets;
    evalBudgets.add(*eval);
    eval->add_option("--turns", turns, "chat prompts: 'first' user turn only, or 'all' turns (each turn sees the model's "
                                       "earlier answers, as the DFlash benchmark)")
        ->capture_default_str()->check(CLI::IsMember({"first", "all"}));
    eval->add_flag("--chat", evalArgs.settings.chatWrapRaw, "wrap raw 'prompt' texts as one ChatML user turn");
    eval->add_flag("--no-thinking", evalNoThinking, "chat prompts: append Qwen3's empty <think></think> block");
    eval->add_flag("--ignore-eos", evalArgs.settings.run.ignoreEos, "do not stop at end-of-sequence tokens");
    LoopArgs evalLoop;
    evalLoop.add(*eval, evalArgs.settings.run);
    DeviceArgs evalDev;
    evalDev.add(*eval);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);  // prints help, version or the usage error
        return code == 0 ? 0 : 2;
    }
    std::signal(SIGINT, onSigint);
    try {
        if (*run) runLoop.apply(settings);
        if (*eval) evalLoop.apply(evalArgs.settings.run);
        if (*run)
            return runCommand(targetDir, drafterDir, drafterConfig, runPrompt, runDev, settings,
                              runBudgets.budgets(settings.temperature), jsonOut, quiet);
        if (*fwd) return forwardCommand(modelDir, fwdPrompt, fwdDev, outPath);
        if (*diagnose.command) return diagnose.run(g_cancel);
        if (*inspect.command) return inspect.run();
        if (*compare.command) return compare.run(g_cancel);
        if (*compareTargets.command) return compareTargets.run();
        if (*eval) {
            evalArgs.settings.ddtreeBudgets = evalBudgets.budgets(evalArgs.settings.run.temperature);
            evalArgs.load = evalDev.load;
            evalArgs.settings.allTurns = turns == "all";
            evalArgs.settings.thinking = !evalNoThinking;
            evalArgs.settings.device = evalDev.load.device;
            evalArgs.settings.dtype = evalDev.load.dtype;
            return evalCommand(evalArgs, &g_cancel);
        }
    } catch (const Cancelled&) {
        std::cerr << "\ninterrupted\n";
        return 130;
    } catch (const Error& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "error: internal failure: " << e.what() << "\n";
        return 1;
    }
    return 2;
}
