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
};

/// The tree-verify attention mask (DFLASH.md section 5) of the tree whose node i has parent
/// `parents[i]` (node 0 the root with parent -1, nodes in creation order, so 0 <= parents[i]
/// < i): rows are the N+1 nodes as queries; columns are `pastColumns` keys standing for the
/// committed past, then the N+1 nodes. Row-major [(N+1) * (pastColumns + N+1)], 1 = may
/// attend: node i sees every past column, and node j iff j is i or an ancestor of i.
/// The one definition of the tree mask: the DDTree loop applies it to the target (one column
/// per cached position) and the tree mask view draws it (one column for the whole past).
/// Throws Error naming the node if `parents` is not such a tree, or if pastColumns < 0.
std::vector<std::uint8_t> treeVisibility(const std::vector<int>& parents, std::int64_t pastColumns = 0);

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
