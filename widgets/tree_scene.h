#pragma once
// Draws one DDTree step into a QGraphicsScene: the boxes, edges, target choices and bonus
// box of AcceptanceTreeView, at the positions layoutTree() computed.

#include "tree_steps.h"

#include <QFont>
#include <QString>

#include <cstdint>
#include <functional>
#include <vector>

class QGraphicsPathItem;
class QGraphicsScene;
class QGraphicsSimpleTextItem;

namespace draftscope {

/// The items drawTreeStep() made, by node index (nullptr for nodes hidden in a folded
/// subtree; edges[0] is always nullptr, the root has no parent).
struct TreeSceneItems {
    std::vector<QGraphicsPathItem*> nodes, edges;
    std::vector<QGraphicsSimpleTextItem*> targetLabels;  ///< "target -> piece" of path nodes
    QGraphicsPathItem* bonus = nullptr;
    QGraphicsSimpleTextItem* bonusLabel = nullptr;
};

/// Adds `step` to `scene` (which it does not clear): `title` and a sub-title with the
/// step's root position, acceptance length and bonus; a box per shown node (piece,
/// drafter probability, index; the node index as item data 0) coloured by its state;
/// edges from parents (thick green on the accepted path); "+k" on folded nodes; the
/// target's choice under path nodes; the dashed bonus box. Geometry: box 124 x 40, columns
/// 164 apart, rows 66 apart, nodes from y = 76. `piece` gives a token's raw piece.
TreeSceneItems drawTreeStep(QGraphicsScene* scene, const TreeStep& step, const std::vector<TreeNodeState>& states,
                            const TreeLayout& layout, const QString& title,
                            const std::function<QString(std::int64_t)>& piece, const QFont& font);

/// The legend (HTML) of drawTreeStep()'s colours, plus the whitespace glyphs of pieces.
QString treeLegendHtml();

}  // namespace draftscope
