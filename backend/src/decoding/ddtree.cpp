#include "draftscope/ddtree.h"

#include "draftscope/errors.h"

#include <algorithm>
#include <cmath>
#include <queue>

namespace draftscope {

std::vector<std::uint8_t> treeVisibility(const std::vector<int>& parents, std::int64_t pastColumns) {
    if (pastColumns < 0) throw Error("tree mask: " + std::to_string(pastColumns) + " past columns (need >= 0)");
    const auto n = static_cast<std::int64_t>(parents.size());
    for (std::int64_t i = 0; i < n; ++i) {
        const int p = parents[static_cast<std::size_t>(i)];
        if (i == 0 ? p != -1 : (p < 0 || p >= i))
            throw Error("tree mask: node " + std::to_string(i) + " has parent " + std::to_string(p) + ", expected " +
                        (i == 0 ? std::string("-1 (the root)") : "one of the earlier nodes 0.." + std::to_string(i - 1)));
    }
    const std::int64_t cols = pastColumns + n;
    std::vector<std::uint8_t> v(static_cast<std::size_t>(n * cols), 0);
    for (std::int64_t i = 0; i < n; ++i) {
        auto* row = v.data() + i * cols;
        std::fill(row, row + pastColumns, std::uint8_t{1});
        for (int j = static_cast<int>(i); j >= 0; j = parents[static_cast<std::size_t>(j)]) row[pastColumns + j] = 1;
    }
    return v;
}

namespace {

struct Candidate {
    double weight;          ///< summed log-probability of the path
    std::vector<int> path;  ///< ranks at depths 1..d
    int parent;             ///< tree index of the parent node
    bool operator<(const Candidate& o) const {  // std::priority_queue pops the "largest"
        if (weight != o.weight) return weight < o.weight;
        return path > o.path;  // equal weight: the smaller rank path first
    }
};

}  // namespace

DraftTree buildDraftTree(std::int64_t anchor, const std::vector<std::vector<float>>& topLogProbs,
                         const std::vector<std::vector<std::int64_t>>& topIds, int budget) {
    if (topLogProbs.size() != topIds.size())
        throw Error("draft tree: " + std::to_string(topLogProbs.size()) + " depths of log-probabilities but " +
                    std::to_string(topIds.size()) + " depths of token ids");
    for (std::size_t d = 0; d < topIds.size(); ++d)
        if (topIds[d].size() != topLogProbs[d].size() || topIds[d].empty())
            throw Error("draft tree: depth " + std::to_string(d + 1) + " has " + std::to_string(topIds[d].size()) +
                        " ids and " + std::to_string(topLogProbs[d].size()) + " log-probabilities (need equal, non-zero)");
    DraftTree t;
    t.tokens = {anchor};
    t.depths = {0};
    t.parents = {-1};
    t.ranks = {-1};
    t.logProbs = {0.0};
    t.drafterProbs = {1.0f};
    const int D = static_cast<int>(topIds.size());
    if (budget <= 0 || D == 0) return t;
    auto lp = [&](int depth, int rank) { return static_cast<double>(topLogProbs[static_cast<std::size_t>(depth - 1)][static_cast<std::size_t>(rank)]); };
    auto width = [&](int depth) { return static_cast<int>(topIds[static_cast<std::size_t>(depth - 1)].size()); };
    std::priority_queue<Candidate> heap;
    heap.push({lp(1, 0), {0}, 0});
    while (!heap.empty() && t.size() - 1 < budget) {
        Candidate c = heap.top();
        heap.pop();
        const int depth = static_cast<int>(c.path.size());
        const int rank = c.path.back();
        const int index = t.size();
        t.tokens.push_back(topIds[static_cast<std::size_t>(depth - 1)][static_cast<std::size_t>(rank)]);
        t.depths.push_back(depth);
        t.parents.push_back(c.parent);
        t.ranks.push_back(rank);
        t.logProbs.push_back(c.weight);
        t.drafterProbs.push_back(static_cast<float>(std::exp(lp(depth, rank))));
        if (rank + 1 < width(depth)) {
            Candidate sibling{c.weight - lp(depth, rank) + lp(depth, rank + 1), c.path, c.parent};
            sibling.path.back() = rank + 1;
            heap.push(std::move(sibling));
        }
        if (depth < D) {
            Candidate child{c.weight + lp(depth + 1, 0), c.path, index};
            child.path.push_back(0);
            heap.push(std::move(child));
        }
    }
    return t;
}

}  // namespace draftscope
