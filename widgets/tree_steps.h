#pragma once
// Torch-free, Qt-free helpers over DDTree steps (DFLASH.md section 5): which nodes the
// target visited or rejected, the tree-verify attention mask, and which tree step covers a
// position of the chain (DFlash) run.

#include "draftscope/masks.h"
#include "draftscope/run_types.h"

#include <cstdint>
#include <vector>

namespace draftscope {

/// What the target's walk made of a tree node.
enum class TreeNodeState {
    Accepted,   ///< on the accepted path (the root included)
    Rejected,   ///< child of an accepted node whose token is not the target's choice there
    Unreached,  ///< below a rejected node: never compared with the target's choice
};

/// State of every node of `step` ([N+1], node 0 = root). A node is Accepted iff it is on
/// step.acceptedPath, Rejected iff its parent is Accepted and it is not, else Unreached.
std::vector<TreeNodeState> treeNodeStates(const TreeStep& step);

/// The tree-verify attention mask of `step`: queries = the root and the N nodes in creation
/// order, keys = (with `pastColumn`) one column standing for all past positions
/// 0..start-1, then the same N+1 nodes. The cells are treeVisibility() (ddtree.h) of the
/// step's parents, the mask the DDTree loop applies: node i sees node j iff j is i or an
/// ancestor of i, and every node sees the past. Row and column positions are start + depth
/// (the past column has position start - 1); labels are "root" and "n<i>" (the past column
/// "past 0..<start-1>"). contextCols is 1 with the past column, else 0. Throws Error if the
/// parents are not a tree.
MaskMatrix treeVerifyMask(const TreeStep& step, bool pastColumn);

/// The folds of "Focus accepted path": [N+1], true for every Rejected node (of `states`,
/// treeNodeStates(step)) that has children.
std::vector<bool> focusFolds(const TreeStep& step, const std::vector<TreeNodeState>& states);

/// Where the DDTree view draws the nodes of `step`, in cell units. With n =
/// step.tokens.size() (the root and N nodes), index n is the bonus token, a virtual last
/// child of the last accepted-path node; every vector has n + 1 entries. Node v sits in column
/// column[v] (its depth; the bonus one right of its parent). The accepted path (root,
/// accepted nodes, bonus) is the spine along row 0: each path node's on-path child is laid
/// out first and the path node takes its row. Other leaves (and folded nodes) take
/// consecutive rows below in creation order, an off-path parent is centred between its
/// first and last child. `folded` [n] (shorter = unfolded) folds a node's subtree: its descendants are
/// not shown and hiddenBelow counts them (the bonus too, when below).
struct TreeLayout {
    int bonus = 0;                 ///< index of the bonus box (= n)
    std::vector<int> column;       ///< depth (the bonus: its parent's + 1)
    std::vector<double> row;       ///< row, fractional for a parent between its children
    std::vector<bool> shown;       ///< false inside a folded subtree
    std::vector<int> hiddenBelow;  ///< nodes hidden below a folded node, else 0
};
TreeLayout layoutTree(const TreeStep& step, const std::vector<bool>& folded);

/// Index of the tree step of `run` in which absolute `position` was verified: the step
/// with start <= position < start + acceptance length (the root and its accepted nodes).
/// A position before the first step gives 0, one after the last step's committed tokens
/// gives the last step; -1 if the run has no steps.
int treeStepCovering(const TreeRunResult& run, std::int64_t position);

}  // namespace draftscope
