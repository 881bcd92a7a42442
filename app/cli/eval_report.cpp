#include "cli/eval_report.h"

#include "draftscope/results_json.h"
#include "draftscope/results_summary.h"

#include <iomanip>
#include <sstream>

namespace draftscope {

namespace {

std::int64_t generatedTokens(const RunResult& r) {
    return static_cast<std::int64_t>(r.outputIds.size()) - static_cast<std::int64_t>(r.promptIds.size());
}

std::string fixed(double v, int digits = 3) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
}

}  // namespace

void printPromptLine(std::ostream& out, const std::vector<int>& budgets, const PromptResult& p, std::size_t index,
                     std::size_t items) {
    const std::string counter = std::string("[").append(std::to_string(index + 1)).append("/").append(std::to_string(items)).append("]");
    out << std::left << std::setw(9) << counter << ' ' << std::setw(20) << p.id << std::right;
    if (!p.error.empty()) {
        out << "  FAILED: " << p.error << "\n";
        return;
    }
    const bool many = p.drafters.size() > 1;
    for (std::size_t d = 0; d < p.drafters.size(); ++d) {
        const auto& r = p.drafters[d].run;
        out << (d ? "  |" : "") << (many ? "  drafter " + std::to_string(d + 1) + ":" : "") << "  tau " << fixed(r.tau)
            << "  steps " << std::setw(3) << r.steps.size() << "  generated " << std::setw(4) << generatedTokens(r);
        for (std::size_t b = 0; b < p.drafters[d].trees.size(); ++b)
            out << "  ddtree(" << budgets.at(b) << ") " << fixed(p.drafters[d].trees[b].tau);
    }
    out << "\n";
}

void printEvalSummary(std::ostream& out, const ResultsFile& results) {
    for (std::size_t d = 0; d < results.drafters.size(); ++d) {
        const auto a = aggregateDrafter(results, static_cast<int>(d));
        out << "\n== drafter " << d + 1 << ": " << results.drafters[d].summary.directory << " ==\n";
        out << "prompts " << a.prompts;
        if (a.skipped) out << " (" << a.skipped << " failed or without verify steps, left out)";
        out << ", verify steps " << a.steps << "\n";
        if (!a.prompts) continue;
        out << "macro tau = " << fixed(a.macroTau)
            << "   (mean over prompts of each prompt's mean acceptance length, bonus token included)\n";
        out << "pooled tau = " << fixed(a.pooledTau) << "   (mean acceptance length over all steps together)\n";
        out << "per-position acceptance (fraction of all steps whose accepted prefix reaches block position j):\n ";
        for (std::size_t j = 1; j < a.perPositionAcceptance.size(); ++j)
            out << " j" << j << "=" << fixed(a.perPositionAcceptance[j], 2);
        out << "\nacceptance-length histogram (length: steps, share of all steps):\n ";
        for (std::size_t n = 1; n < a.acceptanceHistogram.size(); ++n)
            if (a.acceptanceHistogram[n])
                out << "  " << n << ": " << a.acceptanceHistogram[n] << " ("
                    << fixed(100.0 * static_cast<double>(a.acceptanceHistogram[n]) / static_cast<double>(a.steps), 1) << "%)";
        out << "\n";
        for (std::size_t b = 0; b < a.treeMacroTau.size(); ++b)
            out << "DDTree budget " << results.settings.ddtreeBudgets[b] << ": macro tau = " << fixed(a.treeMacroTau[b])
                << "   (accepted path length, root included)\n";
        out << "per-prompt tau, worst first:\n";
        for (auto i : promptsByTau(results, static_cast<int>(d))) {
            const auto& p = results.prompts[i];
            if (!p.error.empty()) out << "      failed  " << p.id << "\n";
            else out << "  " << std::setw(10) << fixed(p.drafters[d].run.tau) << "  " << p.id << "\n";
        }
    }
}

nlohmann::json evalSummaryJson(const ResultsFile& results, const std::string& resultsPath) {
    nlohmann::json drafters = nlohmann::json::array();
    for (std::size_t d = 0; d < results.drafters.size(); ++d) {
        const auto a = aggregateDrafter(results, static_cast<int>(d));
        nlohmann::json prompts = nlohmann::json::array();
        for (const auto& p : results.prompts) {
            nlohmann::json e = {{"id", p.id}, {"line", p.line}, {"turn", p.turn + 1}};
            if (!p.error.empty()) {
                e["error"] = p.error;
            } else {
                const auto& x = p.drafters[d];
                e["tau"] = x.run.tau;
                e["steps"] = x.run.steps.size();
                e["generated"] = generatedTokens(x.run);
                e["acceptance_lengths"] = x.run.acceptanceLengths;
                nlohmann::json trees = nlohmann::json::array();
                for (const auto& t : x.trees) trees.push_back({{"budget", t.budget}, {"tau", t.tau}});
                e["ddtree"] = trees;
            }
            prompts.push_back(e);
        }
        nlohmann::json trees = nlohmann::json::array();
        for (std::size_t b = 0; b < a.treeMacroTau.size(); ++b)
            trees.push_back({{"budget", results.settings.ddtreeBudgets[b]}, {"macro_tau", a.treeMacroTau[b]}});
        drafters.push_back({{"drafter", results.drafters[d].summary.directory},
                            {"macro_tau", a.macroTau},
                            {"macro_tau_definition", "mean over prompts of each prompt's tau (mean acceptance length, bonus included)"},
                            {"pooled_tau", a.pooledTau},
                            {"prompts_counted", a.prompts},
                            {"prompts_left_out", a.skipped},
                            {"steps", a.steps},
                            {"per_position_acceptance", a.perPositionAcceptance},
                            {"per_position_acceptance_definition",
                             "index j = 0..B-1: fraction of all verify steps (pooled over prompts) whose accepted prefix "
                             "reaches block position j"},
                            {"acceptance_histogram", a.acceptanceHistogram},
                            {"acceptance_histogram_definition", "index n: verify steps (pooled) with acceptance length n"},
                            {"ddtree", trees},
                            {"prompts", prompts}});
    }
    nlohmann::json j = {{"tool", "draftscope-cli eval"},
                        {"results_file", resultsPath},
                        {"complete", results.complete},
                        {"prompt_set", {{"path", results.promptSetPath}, {"sha256", results.promptSetSha256}}},
                        {"target", results.target.summary.directory},
                        {"target_config_sha256", results.target.configSha256}};
    if (results.shard.count > 1) j["shard"] = {{"index", results.shard.index}, {"count", results.shard.count}};
    if (!drafters.empty()) {
        for (const char* k : {"macro_tau", "pooled_tau", "per_position_acceptance", "acceptance_histogram", "ddtree", "prompts"})
            j[k] = drafters[0][k];
    }
    j["drafters"] = drafters;
    return j;
}

}  // namespace draftscope
