#include "tree_steps.h"

#include "draftscope/ddtree.h"

#include <functional>
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
    // Appended, not "n" + to_string(i): GCC 12 at -O3 warns falsely (-Wrestrict) on that form.
    auto label = [](std::int64_t i) { return i == 0 ? std::string("root") : std::string("n").append(std::to_string(i)); };
    if (pastColumn) {
        m.colPositions.push_back(step.start - 1);
        m.colLabels.push_back(std::string("past 0..").append(std::to_string(step.start - 1)));
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

std::vector<bool> focusFolds(const TreeStep& step, const std::vector<TreeNodeState>& states) {
    std::vector<bool> folded(states.size(), false);
    for (std::size_t i = 1; i < states.size() && i < step.parents.size(); ++i) {
        const int p = step.parents[i];
        if (p >= 0 && static_cast<std::size_t>(p) < states.size() && states[static_cast<std::size_t>(p)] == TreeNodeState::Rejected)
            folded[static_cast<std::size_t>(p)] = true;
    }
    return folded;
}

TreeLayout layoutTree(const TreeStep& step, const std::vector<bool>& folded) {
    const int n = static_cast<int>(step.tokens.size());
    TreeLayout l;
    if (n == 0) return l;
    const int last = step.acceptedPath.empty() ? 0 : step.acceptedPath.back();
    const int bonus = l.bonus = n;
    const auto at = [](int v) { return static_cast<std::size_t>(v); };
    auto isFolded = [&](int v) { return v < static_cast<int>(folded.size()) && folded[at(v)]; };
    // Children in creation order; the bonus token is a virtual last child of the last path node.
    std::vector<std::vector<int>> children(at(n + 1));
    for (int i = 1; i < n && at(i) < step.parents.size(); ++i) {
        const int p = step.parents[at(i)];
        if (p >= 0 && p < n) children[at(p)].push_back(i);
    }
    children[at(last)].push_back(bonus);
    // The accepted path is the spine: a path node's on-path child (the bonus, for the last
    // one) comes first and the path node sits in that child's row, so the whole path runs
    // along row 0 and the rejected alternatives hang below it, at any budget.
    std::vector<int> pathChild(at(n + 1), -1);
    for (std::size_t k = 0; k + 1 < step.acceptedPath.size(); ++k) {
        const int v = static_cast<int>(step.acceptedPath[k]), c = static_cast<int>(step.acceptedPath[k + 1]);
        if (v >= 0 && v < n && c > 0 && c < n) pathChild[at(v)] = c;
    }
    pathChild[at(last)] = bonus;
    for (int v = 0; v < n; ++v)
        if (const int c = pathChild[at(v)]; c >= 0) {
            auto& ch = children[at(v)];
            if (auto it = std::find(ch.begin(), ch.end(), c); it != ch.end()) std::rotate(ch.begin(), it, it + 1);
        }
    // Folded subtrees: their nodes are not drawn; the folded node counts them.
    l.shown.assign(at(n + 1), true);
    l.hiddenBelow.assign(at(n + 1), 0);
    std::function<int(int, bool)> hide = [&](int v, bool hidden) {
        l.shown[at(v)] = !hidden;
        int count = 0;
        for (int c : children[at(v)]) count += 1 + hide(c, hidden || isFolded(v));
        if (isFolded(v)) l.hiddenBelow[at(v)] = count;
        return count;
    };
    hide(0, false);
    l.row.assign(at(n + 1), 0);
    double nextRow = 0;
    std::function<void(int)> place = [&](int v) {
        const auto& ch = children[at(v)];
        if (ch.empty() || isFolded(v)) {
            l.row[at(v)] = nextRow++;
            return;
        }
        for (int c : ch) place(c);
        l.row[at(v)] = pathChild[at(v)] >= 0 ? l.row[at(pathChild[at(v)])]  // on the spine
                                             : (l.row[at(ch.front())] + l.row[at(ch.back())]) / 2;
    };
    place(0);
    l.column.assign(at(n + 1), 0);
    for (int v = 0; v < n && at(v) < step.depths.size(); ++v) l.column[at(v)] = step.depths[at(v)];
    l.column[at(bonus)] = l.column[at(last)] + 1;
    return l;
}

}  // namespace draftscope
