#include "cli/compare_command.h"

#include "draftscope/analysis.h"
#include "draftscope/prompt_set.h"
#include "draftscope/results_json.h"
#include "draftscope/target_comparison.h"

#include <cstdio>
#include <iostream>

namespace draftscope::cli {

namespace {
std::string f2(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return b;
}
std::string ids(const std::vector<std::int64_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}
}  // namespace

void CompareDraftersCommand::add(CLI::App& app) {
    command = app.add_subcommand("compare", "run two drafters (A, B) on the same target and prompts, side by side");
    command->add_option("--target", targetDir, "target model directory")->required();
    command->add_option("--drafter", drafters, "drafter A, then drafter B (directories or .pt checkpoints)")
        ->required()->expected(2)->take_all();
    prompt.add(*command);
    prompt.excludes(command->add_option("--prompts", promptsFile, "JSONL prompt set (first turn of each entry)"));
    command->add_option("--max-new", settings.maxNewTokens, "tokens to generate per prompt")->capture_default_str();
    command->add_flag("--ignore-eos", settings.ignoreEos, "do not stop at end-of-sequence tokens");
    loop.add(*command, settings);
    command->add_option("--json", jsonOut, "write both runs per prompt and the summary as JSON");
    device.add(*command);
}

int CompareDraftersCommand::run(const std::atomic<bool>& cancel) const {
    RunSettings applied = settings;
    loop.apply(applied);
    if (drafters.size() != 2) throw Error("compare needs exactly two --drafter options (A and B), got " +
                                          std::to_string(drafters.size()));
    device.check();
    checkPaths(modelAndPromptInputs(targetDir, drafters, promptsFile, prompt), {{"--json", jsonOut}});
    std::vector<std::pair<std::string, PromptSpec>> prompts;
    if (!promptsFile.empty()) {
        for (const auto& e : loadPromptSetFile(promptsFile)) prompts.emplace_back(e.id, promptSpecForTurn(e, 0, {}, true));
    } else {
        prompts.emplace_back("prompt", prompt.spec());
    }
    Engine engine;
    std::cerr << "loading target " << targetDir << "\n";
    engine.loadTarget(targetDir, device.load);
    std::vector<ModelSummary> models;
    for (const auto& d : drafters) {
        std::cerr << "loading drafter " << d << "\n";
        models.push_back(engine.loadDrafter(d));
    }
    std::cout << "A: " << drafters[0] << "  (block " << models[0].blockSize << ", tapped " << ids(models[0].targetLayerIds)
              << ", mask " << models[0].maskTokenId << ")\n";
    std::cout << "B: " << drafters[1] << "  (block " << models[1].blockSize << ", tapped " << ids(models[1].targetLayerIds)
              << ", mask " << models[1].maskTokenId << ")\n\n";
    nlohmann::json jprompts = nlohmann::json::array();
    double sum[2] = {0, 0};
    std::vector<double> pos[2];
    std::int64_t steps[2] = {0, 0};
    std::printf("%-24s %8s %8s %8s %10s\n", "prompt", "tau A", "tau B", "B - A", "outputs");
    for (const auto& [id, spec] : prompts) {
        RunResult r[2];
        for (int k = 0; k < 2; ++k) {
            PromptAnalysisRequest request;
            request.prompt = spec;
            request.settings = applied;
            request.settings.drafter = k;
            r[k] = analysePrompt(engine, request, {}, &cancel).run;
            sum[k] += r[k].tau;
            auto& p = pos[k];
            if (p.size() < r[k].perPositionAcceptance.size()) p.resize(r[k].perPositionAcceptance.size(), 0.0);
            for (std::size_t j = 0; j < r[k].perPositionAcceptance.size(); ++j)
                p[j] += r[k].perPositionAcceptance[j] * static_cast<double>(r[k].steps.size());
            steps[k] += static_cast<std::int64_t>(r[k].steps.size());
        }
        const bool sameOut = r[0].outputIds == r[1].outputIds;
        std::printf("%-24s %8.3f %8.3f %+8.3f %10s\n", id.substr(0, 24).c_str(), r[0].tau, r[1].tau, r[1].tau - r[0].tau,
                    sameOut ? "identical" : "DIFFER");
        jprompts.push_back({{"id", id}, {"a", toJson(r[0])}, {"b", toJson(r[1])}, {"outputs_identical", sameOut}});
    }
    const double n = static_cast<double>(prompts.size());
    std::cout << "\nmacro tau: A " << f2(sum[0] / n) << ", B " << f2(sum[1] / n) << "\n";
    std::cout << "acceptance rate by block position (pooled over steps):\n  pos    A      B\n";
    std::vector<double> rates[2];
    for (int k = 0; k < 2; ++k)
        for (double v : pos[k]) rates[k].push_back(steps[k] ? v / static_cast<double>(steps[k]) : 0.0);
    for (std::size_t j = 1; j < std::max(rates[0].size(), rates[1].size()); ++j)
        std::printf("  %3zu  %5.3f  %5.3f\n", j, j < rates[0].size() ? rates[0][j] : 0.0, j < rates[1].size() ? rates[1][j] : 0.0);
    if (!jsonOut.empty()) {
        writeJson(jsonOut, {{"target", toJson(engine.targetSummary())},
                            {"drafters", {toJson(models[0]), toJson(models[1])}},
                            {"macro_tau", {sum[0] / n, sum[1] / n}},
                            {"per_position_acceptance", {rates[0], rates[1]}},
                            {"prompts", jprompts}});
        std::cerr << "wrote " << jsonOut << "\n";
    }
    return 0;
}

void CompareTargetsCommand::add(CLI::App& app) {
    command = app.add_subcommand("compare-targets", "load a target two ways (layout, dtype, device) and compare hidden "
                                                    "states layer by layer on a prompt");
    command->add_option("--target", targetA, "target directory (load A)")->required();
    command->add_option("--target-b", targetB, "another directory of the same model for load B (default: --target), "
                                                "e.g. its vision-language layout");
    prompt.add(*command);
    command->add_option("--device-a", loadA.device,
                        "device of load A: cpu, cuda, cuda:N, or a comma-separated list splitting the target's layers "
                        "(cuda:0,cuda:1; cpu,cpu)")->capture_default_str();
    command->add_option("--dtype-a", loadA.dtype, "dtype of load A")->capture_default_str();
    command->add_option("--device-b", loadB.device,
                        "device of load B, as --device-a (e.g. --device-a cuda --device-b cuda:0,cuda:1 shows that a "
                        "split changes no value)")->capture_default_str();
    command->add_option("--dtype-b", loadB.dtype, "dtype of load B")->capture_default_str();
    command->add_option("--json", jsonOut, "write per-layer differences (with per-position cosines) as JSON");
}

int CompareTargetsCommand::run() const {
    checkOptions([&] { validate(loadA); }, "-a");
    checkOptions([&] { validate(loadB); }, "-b");
    checkPaths({{"--target", targetA, PathKind::Directory}, {"--target-b", targetB, PathKind::Directory},
                prompt.pathOption()},
               {{"--json", jsonOut}});
    const auto spec = prompt.spec();
    const std::string dirB = targetB.empty() ? targetA : targetB;
    ForwardResult f[2];
    ModelSummary m[2];
    const std::string dirs[2] = {targetA, dirB};
    const LoadOptions loads[2] = {loadA, loadB};
    for (int k = 0; k < 2; ++k) {
        Engine e;  // one model in memory at a time
        std::cerr << "load " << char('A' + k) << ": " << dirs[k] << " (" << loads[k].device << ", " << loads[k].dtype << ")\n";
        const std::string side = k == 0 ? "a" : "b";
        try {  // errors say which side: "--device-b: ...", "load B (--device-b cuda): ..."
            checkOptions([&] { m[k] = e.loadTarget(dirs[k], loads[k]); }, "-" + side);
        } catch (const InvalidSetting&) {
            throw;
        } catch (const Error& err) {
            throw Error(std::string("load ") + char('A' + k) + " (--device-" + side + " " + loads[k].device + "): " +
                        err.what());
        }
        f[k] = e.forward(spec);
    }
    const auto c = compareTargetForwards(f[0], f[1]);
    std::cout << "A: " << dirs[0] << " (" << m[0].architecture << ", " << loads[0].device << ", " << loads[0].dtype << ")\n";
    std::cout << "B: " << dirs[1] << " (" << m[1].architecture << ", " << loads[1].device << ", " << loads[1].dtype << ")\n";
    std::cout << c.ids.size() << " tokens; hidden_states index 0 = embeddings, " << m[0].numLayers
              << " = after the final norm\n\n";
    std::printf("%6s %12s %12s %12s %12s\n", "index", "max|A-B|", "relative", "min cos", "mean cos");
    for (const auto& l : c.layers)
        std::printf("%6lld %12.4g %12.4g %12.8f %12.8f\n", static_cast<long long>(l.index), l.maxAbs, l.relativeMaxAbs,
                    l.minCosine, l.meanCosine);
    std::printf("\nlogits: max|A-B| %.4g, argmax agreement %.1f%%\n", c.logitsMaxAbs, 100 * c.argmaxAgreement);
    if (!jsonOut.empty()) {
        nlohmann::json layers = nlohmann::json::array();
        for (const auto& l : c.layers)
            layers.push_back({{"index", l.index}, {"max_abs", l.maxAbs}, {"relative_max_abs", l.relativeMaxAbs},
                              {"min_cosine", l.minCosine}, {"mean_cosine", l.meanCosine}, {"cosine", l.cosine}});
        writeJson(jsonOut, {{"a", {{"model", toJson(m[0])}, {"device", loads[0].device}, {"dtype", loads[0].dtype}}},
                            {"b", {{"model", toJson(m[1])}, {"device", loads[1].device}, {"dtype", loads[1].dtype}}},
                            {"ids", c.ids},
                            {"layers", layers},
                            {"logits_max_abs", c.logitsMaxAbs},
                            {"argmax_agreement", c.argmaxAgreement},
                            {"argmax_a", c.argmaxA},
                            {"argmax_b", c.argmaxB}});
        std::cerr << "wrote " << jsonOut << "\n";
    }
    return 0;
}

}  // namespace draftscope::cli
