#include "cli/run_command.h"

#include "cli/run_report.h"
#include "draftscope/analysis.h"
#include "draftscope/attention_layout.h"
#include "draftscope/results_json.h"
#include "draftscope/tokenizer.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <unistd.h>

namespace draftscope::cli {

void RunCommand::add(CLI::App& app) {
    command = app.add_subcommand("run", "run the DFlash verification loop on one prompt");
    auto* run = command;
    run->add_option("--target", targetDir, "target model directory (HF layout)")->required();
    run->add_option("--drafter", drafterDir, "DFlash drafter directory or .pt training checkpoint")->required();
    run->add_option("--drafter-config", drafterConfig, "config.json of a .pt drafter (default: the one beside it)");
    prompt.add(*run);
    run->add_option("--max-new", settings.maxNewTokens, "tokens to generate")->capture_default_str();
    run->add_flag("--ignore-eos", settings.ignoreEos, "do not stop at end-of-sequence tokens");
    loop.add(*run, settings);
    budgets.add(*run);
    run->add_option("--json", jsonOut, "write the run (per-step records included) as JSON");
    run->add_flag("--quiet", quiet, "print only the summary");
    device.add(*run);
}

int RunCommand::run(const std::atomic<bool>& cancel) const {
    // Every bad option fails before the models load.
    RunSettings runSettings = settings;
    loop.apply(runSettings);
    const auto treeBudgets = budgets.budgets(runSettings.temperature);
    device.check();
    checkPaths({{"--target", targetDir, PathKind::Directory},
                {"--drafter", drafterDir, PathKind::FileOrDirectory},
                {"--drafter-config", drafterConfig, PathKind::File},
                prompt.pathOption()},
               {{"--json", jsonOut}});
    checkConfigOnlyForPt("--drafter-config", drafterConfig, "--drafter", drafterDir);
    const auto spec = prompt.spec();
    Engine engine;
    std::cerr << "loading target " << targetDir << " (" << device.load.device << ", " << device.load.dtype << ")\n";
    const auto target = engine.loadTarget(targetDir, device.load);
    {
        std::map<std::string, int> types;
        for (const auto& t : target.layerTypes) types[t]++;
        std::cerr << "target: " << target.architecture << ", " << target.numLayers << " layers (";
        bool first = true;
        for (const auto& [t, n] : types) std::cerr << (first ? "" : ", ") << n << " " << t, first = false;
        std::cerr << ")\n";
        if (target.devices.size() > 1) std::cerr << "placement: " << target.placement << "\n";
        if (!target.quantization.empty()) std::cerr << "target weights: " << target.quantization << "\n";
    }
    std::cerr << "loading drafter " << drafterDir << "\n";
    const auto drafter = engine.loadDrafter(drafterDir, drafterConfig);
    if (!drafter.source.empty()) std::cerr << "drafter: " << drafter.source << "\n";
    std::cerr << "drafter: " << drafter.family << ", " << drafter.numLayers << " layers (" << describeLayout(drafter.layout)
              << "), block size " << drafter.blockSize
              << (drafter.familyDetail.empty() ? std::string() : "; " + drafter.familyDetail) << "\n";
    for (const auto& w : drafter.warnings) std::cerr << "warning: drafter: " << w << "\n";
    if (!drafter.unexpectedTensors.empty())
        std::cerr << "warning: drafter checkpoint has " << drafter.unexpectedTensors.size()
                  << " unexpected tensor(s), e.g. " << drafter.unexpectedTensors.front() << "\n";
    if (!target.unexpectedTensors.empty())
        std::cerr << "warning: target checkpoint has " << target.unexpectedTensors.size()
                  << " unexpected tensor(s), e.g. " << target.unexpectedTensors.front() << "\n";

    // Refused before any work (as eval does), so no chain run is computed and then lost.
    if (auto why = runRefusal(drafter.family, drafter.draftsFromAnchor, runSettings.loop, !treeBudgets.empty());
        !why.empty())
        throw Error(why);

    const bool tty = ::isatty(STDERR_FILENO);
    PromptAnalysisRequest request;
    request.prompt = spec;
    request.settings = runSettings;
    request.treeBudgets = treeBudgets;
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
        if (!treeBudgets.empty()) {
            runJson["ddtree"] = nlohmann::json::array();
            std::cout << "\nDDTree (one tree-verify pass per step; acceptance length = accepted path, root included):\n";
            char line[128];
            std::snprintf(line, sizeof line, "  %-16s tau %.3f over %zu steps\n", "chain (DFlash)", run.tau, run.steps.size());
            std::cout << line;
        }
    };
    const auto analysis = analysePrompt(engine, request, callbacks, &cancel);
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

}  // namespace draftscope::cli
