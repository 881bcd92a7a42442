#pragma once
// The nodes of one DDTree step as a table: the DDTree view's table, exported as
// ddtree_nodes.{csv,json}.

#include "tree_steps.h"

#include <QStandardItemModel>

#include <cstdint>
#include <functional>
#include <vector>

namespace draftscope {

/// Columns: index, token id, piece, depth, parent, draft prob, target choice id, target
/// choice piece (the last two empty off the accepted path's choices), on path, state
/// ("accepted", "rejected", "unreached"). One row per node, the root first. Pieces are
/// shown with whitespace glyphs (displayPiece) and exported raw (kExportRole).
class TreeNodesTable : public QStandardItemModel {
public:
    using PieceFn = std::function<QString(std::int64_t)>;
    explicit TreeNodesTable(QObject* parent = nullptr);
    /// Shows `step` (nullptr: headers only) with its treeNodeStates() `states`; `piece`
    /// gives a token's raw piece.
    void showStep(const TreeStep* step, const std::vector<TreeNodeState>& states, const PieceFn& piece);
};

/// "accepted", "rejected" or "unreached".
QString treeNodeStateName(TreeNodeState state);

}  // namespace draftscope
