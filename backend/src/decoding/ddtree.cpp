#include "draftscope/ddtree.h"

#include "draftscope/errors.h"

#include <cmath>
#include <queue>

namespace draftscope {

bool DraftTree::isAncestorOrSelf(int a, int b) const {
    for (int n = b; n >= 0; n = parents[static_cast<std::size_t>(n)])
        if (n == a) return true;
    return false;
}

std::vector<std::vector<std::uint8_t>> DraftTree::visibility() const {
    const int n = size();
    std::vector<std::vector<std::uint8_t>> v(static_cast<std::size_t>(n), std::vector<std::uint8_t>(static_cast<std::size_t>(n), 0));
    for (int i = 0; i < n; ++i)
        for (int j = i; j >= 0; j = parents[static_cast<std::size_t>(j)]) v[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = 1;
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
