#include "draftscope/results_summary.h"

#include "draftscope/errors.h"

#include <algorithm>
#include <numeric>

namespace draftscope {

DrafterAggregate aggregateDrafter(const ResultsFile& results, int drafter) {
    if (drafter < 0 || drafter >= static_cast<int>(results.drafters.size()))
        throw Error("drafter index " + std::to_string(drafter) + " is out of range: the results file has " +
                    std::to_string(results.drafters.size()) + " drafter(s)");
    DrafterAggregate a;
    a.drafter = drafter;
    const auto d = static_cast<std::size_t>(drafter);
    const auto budgets = results.settings.ddtreeBudgets.size();
    a.treeMacroTau.assign(budgets, 0.0);
    double tauSum = 0, lengthSum = 0;
    std::vector<double> treeSum(budgets, 0.0);
    std::vector<std::int64_t> reach;  // steps whose accepted prefix reaches position j
    for (const auto& p : results.prompts) {
        if (!p.error.empty() || d >= p.drafters.size() || p.drafters[d].run.steps.empty()) {
            ++a.skipped;
            continue;
        }
        const auto& r = p.drafters[d].run;
        ++a.prompts;
        tauSum += r.tau;
        const auto B = static_cast<std::size_t>(std::max<std::int64_t>(r.blockSize, 1));
        if (reach.size() < B) reach.resize(B, 0);
        if (a.acceptanceHistogram.size() < B + 1) a.acceptanceHistogram.resize(B + 1, 0);
        for (int len : r.acceptanceLengths) {
            ++a.steps;
            lengthSum += len;
            if (static_cast<std::size_t>(len) >= a.acceptanceHistogram.size()) a.acceptanceHistogram.resize(static_cast<std::size_t>(len) + 1, 0);
            a.acceptanceHistogram[static_cast<std::size_t>(len)] += 1;
            for (int j = 0; j < len && static_cast<std::size_t>(j) < reach.size(); ++j) reach[static_cast<std::size_t>(j)] += 1;
        }
        for (std::size_t b = 0; b < budgets && b < p.drafters[d].trees.size(); ++b) treeSum[b] += p.drafters[d].trees[b].tau;
    }
    if (a.prompts) {
        a.macroTau = tauSum / static_cast<double>(a.prompts);
        for (std::size_t b = 0; b < budgets; ++b) a.treeMacroTau[b] = treeSum[b] / static_cast<double>(a.prompts);
    }
    if (a.steps) {
        a.pooledTau = lengthSum / static_cast<double>(a.steps);
        for (auto c : reach) a.perPositionAcceptance.push_back(static_cast<double>(c) / static_cast<double>(a.steps));
    }
    return a;
}

std::vector<std::size_t> promptsByTau(const ResultsFile& results, int drafter) {
    const auto d = static_cast<std::size_t>(std::max(drafter, 0));
    auto ok = [&](std::size_t i) { return results.prompts[i].error.empty() && d < results.prompts[i].drafters.size(); };
    std::vector<std::size_t> idx(results.prompts.size());
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) {
        if (ok(x) != ok(y)) return ok(x);
        if (!ok(x)) return false;
        return results.prompts[x].drafters[d].run.tau < results.prompts[y].drafters[d].run.tau;
    });
    return idx;
}

}  // namespace draftscope
