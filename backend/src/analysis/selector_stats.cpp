#include "draftscope/selector_stats.h"

#include <algorithm>

namespace draftscope {

SelectorStats selectorStats(const RunResult& run) {
    SelectorStats s;
    for (const auto& step : run.steps) s.available = s.available || !step.drafterArgmax.empty();
    if (!s.available) return s;
    s.greedy = run.settings.temperature == 0.0;
    const auto D = static_cast<std::size_t>(std::max<std::int64_t>(run.blockSize - 1, 0));
    s.drafted.assign(D, 0);
    s.changed.assign(D, 0);
    for (const auto& step : run.steps) {
        const auto n = std::min({step.drafted.size(), step.drafterArgmax.size(), D});
        std::size_t first = n;
        for (std::size_t j = 0; j < n; ++j) {
            ++s.drafted[j];
            if (step.drafted[j] != step.drafterArgmax[j]) {
                ++s.changed[j];
                first = std::min(first, j);
            }
        }
        ++s.steps;
        SelectorEffect effect = SelectorEffect::Same;
        int change = 0;
        if (first < n) {
            ++s.stepsChanged;
            const auto acc = static_cast<std::size_t>(step.acceptedCount);
            if (!s.greedy) {
                effect = SelectorEffect::Neutral;
            } else if (first < acc) {
                effect = SelectorEffect::Gained;
                change = static_cast<int>(acc - first);
            } else if (first == acc && first < step.targetTokens.size() &&
                       step.drafterArgmax[first] == step.targetTokens[first]) {
                effect = SelectorEffect::Lost;
                change = -1;
            } else {
                effect = SelectorEffect::Neutral;
            }
        }
        s.effects.push_back(effect);
        s.lengthChange.push_back(change);
        if (!s.greedy) continue;
        s.gained += effect == SelectorEffect::Gained;
        s.lost += effect == SelectorEffect::Lost;
        s.neutral += effect == SelectorEffect::Neutral;
        if (effect == SelectorEffect::Gained) s.tokensGained += change;
    }
    return s;
}

}  // namespace draftscope
