#include "cli/diagnose_command.h"

#include "draftscope/diagnosis.h"
#include "draftscope/prompt_set.h"
#include "draftscope/results_json.h"

#include <cstdio>
#include <iostream>

namespace draftscope::cli {

void DiagnoseCommand::add(CLI::App& app) {
    command = app.add_subcommand("diagnose", "check drafters for known training bugs (label shift, context leak, "
                                             "tapped layers, mask token, ...) and rank them by acceptance");
    command->add_option("--target", targetDir, "target model directory")->required();
    command->add_option("--drafter", drafters, "drafter directory or .pt training checkpoint (repeatable)")
        ->required()->take_all();
    prompt.add(*command);
    command->add_option("--prompts", promptsFile, "JSONL prompt set (first turn of each entry); default: built-in prompts");
    command->add_option("--max-new", maxNew, "tokens generated per prompt")->capture_default_str()->check(CLI::Range(8, 4096));
    command->add_option("--json", jsonOut, "write the findings as JSON");
    command->add_option("--fail-on", failOn, "exit with 3 if a finding is at least this severe")
        ->check(CLI::IsMember({"none", "warning", "error"}))->capture_default_str();
    loop.add(*command, sampling, /*recordTopK=*/false);
    device.add(*command);
}

int DiagnoseCommand::run(const std::atomic<bool>& cancel) const {
    std::vector<DiagnosePrompt> prompts;
    if (!promptsFile.empty()) {
        for (const auto& e : loadPromptSetFile(promptsFile)) prompts.push_back({e.id, promptSpecForTurn(e, 0, {}, true)});
    } else if (prompt.text.empty() && prompt.file.empty() && prompt.ids.empty()) {
        prompts = defaultDiagnosePrompts();
    } else {
        prompts.push_back({"prompt", prompt.spec()});
    }
    Engine engine;
    std::cerr << "loading target " << targetDir << " (" << device.load.device << ", " << device.load.dtype << ")\n";
    engine.loadTarget(targetDir, device.load);
    DiagnoseSettings settings;
    settings.maxNewTokens = maxNew;
    settings.sampling = sampling;
    loop.apply(settings.sampling);
    const bool tty = ::isatty(2);
    const auto report = diagnoseDrafters(
        engine, drafters, prompts, settings,
        [&](std::int64_t done, std::int64_t total) {
            if (tty) std::cerr << "\rdiagnosing: " << done << "/" << total << " prompt runs" << std::flush;
            else std::cerr << "diagnosing: " << done << "/" << total << " prompt runs\n";
        },
        &cancel);
    if (tty) std::cerr << "\n";

    std::cout << "target: " << report.target.directory << " (" << report.target.architecture << ", "
              << report.target.numLayers << " layers)\n";
    std::cout << "prompts: " << report.promptIds.size() << " (";
    for (std::size_t i = 0; i < report.promptIds.size(); ++i) std::cout << (i ? ", " : "") << report.promptIds[i];
    std::cout << "), " << maxNew << " new tokens each\n";
    int worst = -1;
    for (const auto& d : report.drafters) {
        char head[256];
        if (d.loaded)
            std::snprintf(head, sizeof head, "#%d tau %.2f  (probe %.2f; with the anchor's feature %.2f)", d.rank, d.tau,
                          d.probeTau, d.probeTauAnchorFeature);
        else
            std::snprintf(head, sizeof head, "#%d did not load", d.rank);
        std::cout << "\n" << head << "  " << d.path << "\n";
        for (const auto& f : d.findings) {
            worst = std::max(worst, static_cast<int>(f.severity));
            std::cout << "  " << severityName(f.severity) << std::string(8 - std::string(severityName(f.severity)).size(), ' ')
                      << f.id << ": " << f.message << "\n";
            if (!f.evidence.empty()) {
                std::cout << "          evidence:";
                for (const auto& [name, value] : f.evidence) {
                    char v[64];
                    std::snprintf(v, sizeof v, "%.4g", value);
                    std::cout << " " << name << "=" << v;
                }
                std::cout << "\n";
            }
        }
    }
    if (!jsonOut.empty()) {
        writeJson(jsonOut, toJson(report));
        std::cerr << "wrote " << jsonOut << "\n";
    }
    const int threshold = failOn == "error" ? 2 : failOn == "warning" ? 1 : 99;
    return worst >= threshold ? 3 : 0;
}

}  // namespace draftscope::cli
