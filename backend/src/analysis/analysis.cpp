#include "draftscope/analysis.h"

#include "draftscope/engine.h"
#include "draftscope/errors.h"

#include <algorithm>
#include <charconv>

namespace draftscope {

namespace {

/// The message of a budget outside 1..kMaxTreeBudget (`entry` as written, shortened).
std::string badBudget(std::string entry) {
    if (entry.size() > 12) entry = entry.substr(0, 10) + "...";
    return "DDTree budget '" + entry + "' is not an integer from 1 to " + std::to_string(kMaxTreeBudget) +
           " (0 = no trees)";
}

}  // namespace

void validateTreeBudgets(const std::vector<int>& budgets, double temperature) {
    for (std::size_t i = 0; i < budgets.size(); ++i) {
        const int b = budgets[i];
        if (b < 1 || b > kMaxTreeBudget) throw Error(badBudget(std::to_string(b)));
        if (std::find(budgets.begin(), budgets.begin() + static_cast<std::ptrdiff_t>(i), b) !=
            budgets.begin() + static_cast<std::ptrdiff_t>(i))
            throw Error("DDTree budget " + std::to_string(b) + " is listed twice");
    }
    if (!budgets.empty() && temperature != 0.0)
        throw Error("DDTree runs are greedy: they need temperature 0, got " + std::to_string(temperature) +
                    " (set it to 0 or give no DDTree budgets)");
}

std::vector<int> parseTreeBudgets(const std::string& text) {
    const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
    if (std::all_of(text.begin(), text.end(), isSpace)) return {};  // no tree runs
    std::vector<int> out;
    bool zero = false;
    std::size_t from = 0;
    for (;;) {
        const std::size_t comma = text.find(',', from);
        const std::string entry = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
        bool any = false;
        for (std::size_t i = 0; i < entry.size();) {
            if (isSpace(entry[i])) {
                ++i;
                continue;
            }
            std::size_t end = i;
            while (end < entry.size() && !isSpace(entry[end])) ++end;
            const std::string part = entry.substr(i, end - i);
            i = end;
            any = true;
            int b = 0;
            const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), b);
            if (ec != std::errc() || ptr != part.data() + part.size()) throw Error(badBudget(part));
            if (b == 0) zero = true;
            else out.push_back(b);
        }
        if (!any) throw Error("DDTree budgets: an entry between commas is empty");
        if (comma == std::string::npos) break;
        from = comma + 1;
    }
    validateTreeBudgets(out);
    if (zero && !out.empty()) throw Error("DDTree budget 0 means no trees: remove it or the others");
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::int64_t> collectTokenIds(const RunResult& run, const std::vector<TreeRunResult>& trees) {
    std::vector<std::int64_t> ids(run.outputIds);
    for (const auto& st : run.steps) {
        ids.push_back(st.anchor);
        ids.push_back(st.bonusToken);
        ids.insert(ids.end(), st.drafted.begin(), st.drafted.end());
        ids.insert(ids.end(), st.targetTokens.begin(), st.targetTokens.end());
        for (const auto& top : st.draftTopIds) ids.insert(ids.end(), top.begin(), top.end());
    }
    for (const auto& tree : trees) {
        ids.insert(ids.end(), tree.outputIds.begin(), tree.outputIds.end());
        for (const auto& st : tree.steps) {
            ids.insert(ids.end(), st.tokens.begin(), st.tokens.end());
            ids.insert(ids.end(), st.targetChoice.begin(), st.targetChoice.end());
            ids.push_back(st.bonusToken);
        }
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

PromptAnalysis analysePrompt(Engine& engine, const PromptAnalysisRequest& request, const AnalysisCallbacks& cb,
                             const std::atomic<bool>* cancel) {
    validateTreeBudgets(request.treeBudgets, request.settings.temperature);
    PromptSpec ids;  // tokenised once: every run below starts from these ids
    ids.kind = PromptSpec::Kind::Ids;
    ids.ids = engine.encodePrompt(request.prompt);

    PromptAnalysis a;
    AnalysisStage stage;
    stage.count = request.treeBudgets.size();
    if (cb.stageStarted) cb.stageStarted(stage);
    a.run = engine.run(ids, request.settings, cb.progress, cancel);
    if (request.hiddenStats != HiddenStatsScope::None) {
        PromptSpec sequence;
        sequence.kind = PromptSpec::Kind::Ids;
        const bool output = request.hiddenStats == HiddenStatsScope::Output;
        sequence.ids = output ? a.run.outputIds : a.run.promptIds;
        try {  // the run stands even if the statistics fail (e.g. non-finite activations)
            a.hiddenStats = engine.hiddenStateStats(sequence, request.settings.drafter, request.histogramBins,
                                                    output ? static_cast<std::int64_t>(a.run.promptIds.size()) : -1);
        } catch (const Cancelled&) {
            throw;
        } catch (const std::exception& e) {
            a.hiddenStatsError = e.what();
        }
    }
    if (cb.partFinished) cb.partFinished(stage, a);

    stage.kind = AnalysisStage::Kind::Tree;
    for (std::size_t i = 0; i < request.treeBudgets.size(); ++i) {
        stage.budget = request.treeBudgets[i];
        stage.index = i;
        if (cb.stageStarted) cb.stageStarted(stage);
        try {
            a.trees.push_back(engine.runTree(ids, request.settings, stage.budget, cb.progress, cancel));
        } catch (const Cancelled&) {
            throw;
        } catch (const std::exception& e) {
            a.failedTreeBudget = stage.budget;
            a.treeError = e.what();
            break;
        }
        if (cb.partFinished) cb.partFinished(stage, a);
    }
    return a;
}

}  // namespace draftscope
