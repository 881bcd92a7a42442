#include "cli/diagnose_command.h"

#include "cli/progress_bar.h"

#include "draftscope/diagnosis.h"
#include "draftscope/errors.h"
#include "draftscope/prompt_set.h"
#include "draftscope/results_json.h"

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <iostream>

namespace draftscope::cli {

void DiagnoseCommand::add(CLI::App& app) {
    command = app.add_subcommand("diagnose", "check drafters for known training bugs (label shift, context leak, "
                                             "tapped layers, mask token, ...) and rank them by acceptance");
    command->add_option("--target", targetDir, "target model directory")->required();
    command->add_option("--drafter", drafters, "drafter directory or .pt training checkpoint (repeatable)")
        ->required()->take_all();
    prompt.add(*command);
    prompt.excludes(command->add_option("--prompts", promptsFile,
                                        "JSONL prompt set (first turn of each entry); default: built-in prompts"));
    command->add_option("--max-new", maxNew, "tokens generated per prompt")->capture_default_str();
    command->add_option("--json", jsonOut, "write the findings as JSON");
    command->add_option("--fail-on", failOn, "exit with 3 if a finding is at least this severe")
        ->check(CLI::IsMember({"none", "warning", "error"}))->capture_default_str();
    std::string families;
    for (const auto& f : diagnoseProbeFamilies()) families += (families.empty() ? "" : ", ") + f;
    command->add_option("--probes", probes, "comma-separated probe families to run (" + families + "; all)")
        ->capture_default_str()
        ->check([](const std::string& v) {
            try {
                parseProbeFamilies(v);
                return std::string();
            } catch (const Error& e) {
                return std::string(e.what());
            }
        });
    loop.add(*command, sampling, /*recordTopK=*/false);
    device.add(*command);
}

namespace {

/// The probe tau of every alternative convention against the declared one, with the
/// paired-bootstrap interval of the gain ("*" marks the alternatives that raised a finding).
void printConventionProbes(const DrafterDiagnosis& d) {
    if (d.conventionProbes.empty()) return;
    std::cout << "  convention probes (probe tau; declared " << std::fixed;
    std::cout.precision(2);
    std::cout << d.conventionProbes.front().declaredTau << "; expected acceptance, declared ";
    std::cout.precision(3);
    std::cout << d.conventionProbes.front().expectedDeclaredTau << ", with the "
              << static_cast<int>(kConventionConfidence * 100 + 0.5)
              << "% interval of its gain; a finding needs an expected gain above " << kConventionMargin
              << " and an interval above 0):\n";
    std::cout.unsetf(std::ios::floatfield);
    for (const auto& c : d.conventionProbes) {
        char line[512];
        std::snprintf(line, sizeof line, "    %s %-16s tau %5.2f (%+.2f)  expected %5.3f gain %+.3f [%+.3f, %+.3f]  %s\n",
                      c.finding ? "*" : " ", c.family.c_str(), c.tau, c.difference.mean, c.expectedTau,
                      c.expectedDifference.mean, c.expectedDifference.lower, c.expectedDifference.upper,
                      c.alternative.c_str());
        std::cout << line;
    }
}

/// Per probe family: drafter calls and seconds.
void printCosts(const DrafterDiagnosis& d) {
    if (d.costs.empty()) return;
    std::cout << "  cost:";
    for (const auto& c : d.costs) {
        char item[128];
        std::snprintf(item, sizeof item, " %s %lld steps %.1f s;", c.family.c_str(), static_cast<long long>(c.probeSteps),
                      c.seconds);
        std::cout << item;
    }
    std::cout << "\n";
}

}  // namespace

int DiagnoseCommand::run(const std::atomic<bool>& cancel) const {
    // Every bad option fails before the target loads.
    DiagnoseSettings settings;
    settings.maxNewTokens = maxNew;
    settings.sampling = sampling;
    settings.probes = parseProbeFamilies(probes);
    loop.apply(settings.sampling);
    checkOptions([&] { validate(settings); });
    device.check();
    checkPaths(modelAndPromptInputs(targetDir, drafters, promptsFile, prompt), {{"--json", jsonOut}});
    std::vector<DiagnosePrompt> prompts;
    if (!promptsFile.empty()) {
        for (const auto& e : loadPromptSetFile(promptsFile)) prompts.push_back({e.id, promptSpecForTurn(e, 0, {}, true)});
    } else if (!prompt.given()) {
        if (prompt.chat) throw Error("--chat: applies to --prompt or --prompt-file; the built-in prompts are used as they are");
        prompts = defaultDiagnosePrompts();
    } else {
        prompts.push_back({"prompt", prompt.spec()});
    }
    Engine engine;
    std::cerr << "loading target " << targetDir << " (" << device.load.device << ", " << device.load.dtype << ")\n";
    engine.loadTarget(targetDir, device.load);
    const bool tty = ::isatty(2);
    const auto started = std::chrono::steady_clock::now();
    const auto report = diagnoseDrafters(
        engine, drafters, prompts, settings,
        [&](std::int64_t done, std::int64_t total) {
            // Progress in estimated drafter calls, so the time left follows from the time so far.
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            std::string left;
            if (done > 0 && done < total)
                left = ", about " + ProgressBar::formatDuration(elapsed * static_cast<double>(total - done) / static_cast<double>(done)) +
                       " left";
            const std::string line = "diagnosing: " + std::to_string(done) + "/" + std::to_string(total) +
                                     " drafter calls (estimated)" + left;
            if (tty) std::cerr << "\r" << line << "\x1b[K" << std::flush;
            else std::cerr << line << "\n";
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
        const bool leakProbed = std::any_of(d.conventionProbes.begin(), d.conventionProbes.end(),
                                            [](const ConventionProbe& c) { return c.family == "context-leak"; });
        if (d.loaded && !d.promptTaus.empty() && leakProbed)
            std::snprintf(head, sizeof head, "#%d tau %.2f  (probe %.2f; with the anchor's feature %.2f)", d.rank, d.tau,
                          d.probeTau, d.probeTauAnchorFeature);
        else if (d.loaded && !d.promptTaus.empty())
            std::snprintf(head, sizeof head, "#%d tau %.2f  (probe %.2f)", d.rank, d.tau, d.probeTau);
        else if (d.loaded)  // the acceptance family did not run: no chain loop, no tau
            std::snprintf(head, sizeof head, "#%d probe tau %.2f", d.rank, d.probeTau);
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
        printConventionProbes(d);
        printCosts(d);
    }
    if (!jsonOut.empty()) {
        writeJson(jsonOut, toJson(report));
        std::cerr << "wrote " << jsonOut << "\n";
    }
    const int threshold = failOn == "error" ? 2 : failOn == "warning" ? 1 : 99;
    return worst >= threshold ? 3 : 0;
}

}  // namespace draftscope::cli
