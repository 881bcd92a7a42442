#pragma once
// DDTree: a tree of drafts built best-first from the drafter's per-position distributions and
// verified by the target in one pass (DFLASH.md section 5). Torch-free.

#include <cstdint>
#include <vector>

namespace draftscope {

/// A draft tree. Node 0 is the root (the anchor, depth 0); nodes 1..N are in creation order.
struct DraftTree {
    std::vector<std::int64_t> tokens;    ///< [N+1]; tokens[0] = anchor
    std::vector<int> depths;             ///< [N+1]; depths[0] = 0
    std::vector<int> parents;            ///< [N+1]; parents[0] = -1
    std::vector<int> ranks;              ///< [N+1]; rank of the node's token at its depth (root -1)
    std::vector<double> logProbs;        ///< [N+1]; path log-probability (sum over depths), root 0
    std::vector<float> drafterProbs;     ///< [N+1]; drafter's probability of the node's own token, root 1
    int size() const { return static_cast<int>(tokens.size()); }
    /// True if node `a` is `b` or one of b's ancestors.
    bool isAncestorOrSelf(int a, int b) const;
    /// [N+1][N+1] visibility: row i may attend to column j iff j is i or an ancestor of i.
    std::vector<std::vector<std::uint8_t>> visibility() const;
};

/// Builds the tree best-first. `topLogProbs[d][r]` / `topIds[d][r]`: rank-r log-probability
/// (float32, logit - logsumexp, descending) and token at depth d+1, for d = 0..D-1. A heap on
/// the path's summed log-probability (accumulated in double) starts with (depth 1, rank 0);
/// popping a node adds it and pushes its next sibling (same depth, rank + 1) and its first
/// child (depth + 1, rank 0), until `budget` nodes or the heap is empty. Ties pop the
/// lexicographically smaller rank path first. budget <= 0 gives the root only.
/// Throws Error if the rows are ragged or empty where a depth exists.
DraftTree buildDraftTree(std::int64_t anchor, const std::vector<std::vector<float>>& topLogProbs,
                         const std::vector<std::vector<std::int64_t>>& topIds, int budget);

}  // namespace draftscope
