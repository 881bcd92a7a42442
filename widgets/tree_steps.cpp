#include "tree_steps.h"

#include "draftscope/ddtree.h"

#include <string>

namespace draftscope {

std::vector<TreeNodeState> treeNodeStates(const TreeStep& step) {
    const std::size_t n = step.tokens.size();
    std::vector<TreeNodeState> states(n, TreeNodeState::Unreached);
    std::vector<bool> onPath(n, false);
    for (int i : step.acceptedPath)
        if (i >= 0 && static_cast<std::size_t>(i) < n) onPath[static_cast<std::size_t>(i)] = true;
    for (std::size_t i = 0; i < n; ++i) {
        if (onPath[i]) {
            states[i] = TreeNodeState::Accepted;
            continue;
        }
        const int p = i < step.parents.size() ? step.parents[i] : -1;
        if (p >= 0 && static_cast<std::size_t>(p) < n && onPath[static_cast<std::size_t>(p)])
            states[i] = TreeNodeState::Rejected;
    }
    return states;
}

MaskMatrix treeVerifyMask(const TreeStep& step, bool pastColumn) {
    const auto n = static_cast<std::int64_t>(step.parents.size());
    const std::int64_t past = pastColumn ? 1 : 0;
    MaskMatrix m;
    m.rows = n;
    m.cols = n + past;
    m.contextCols = past;
    m.visible = treeVisibility(step.parents, past);  // the mask the DDTree loop applies
    auto label = [](std::int64_t i) { return i == 0 ? std::string("root") : "n" + std::to_string(i); };
    if (pastColumn) {
        m.colPositions.push_back(step.start - 1);
        m.colLabels.push_back("past 0.." + std::to_string(step.start - 1));
    }
    for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t pos = step.start + step.depths[static_cast<std::size_t>(i)];
        m.rowPositions.push_back(pos);
        m.rowLabels.push_back(label(i));
        m.colPositions.push_back(pos);
        m.colLabels.push_back(label(i));
    }
    return m;
}

int treeStepCovering(const TreeRunResult& run, std::int64_t position) {
    if (run.steps.empty()) return -1;
    for (std::size_t i = 0; i < run.steps.size(); ++i) {
        const auto& s = run.steps[i];
        if (position < s.start) return i == 0 ? 0 : static_cast<int>(i) - 1;
        if (position < s.start + s.acceptanceLength()) return static_cast<int>(i);
    }
    return static_cast<int>(run.steps.size()) - 1;
}

}  // namespace draftscope
