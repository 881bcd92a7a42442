#pragma once
// What MaskView draws, computed without a widget or a plot: the masks of the chosen mode and
// conventions, their diff, the cell values, tick labels, title and summary. Semantics:
// draftscope/masks.h (DFLASH.md sections 3, 6, 7 and 9) and tree_steps.h (section 5).

#include "draftscope/masks.h"
#include "draftscope/run_types.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

namespace draftscope {

/// Which mask MaskView draws.
enum class MaskMode { Inference, Training, TreeVerify };

/// Everything a mask figure depends on: the view's inputs and its controls' values.
struct MaskFigureInput {
    MaskMode mode = MaskMode::Inference;
    // Inference: the selected verify step (anchor at contextLength, block of blockSize rows);
    // pieces[p] is the piece at absolute position p (may be shorter or empty).
    bool haveStep = false;
    std::int64_t contextLength = 0, blockSize = 0;
    std::vector<QString> pieces;
    // The drafter's per-layer layout (empty: base layout) and the selected layer, as named
    // in the layer selector (title text).
    std::vector<LayerAttention> layout;
    int layer = 0;
    QString layerName;
    // Training: context length S, block size B, anchors as typed ("3, 10, 17"), window.
    std::int64_t trainingContext = 24, trainingBlock = 4, window = 0;
    QString anchors;
    // Tree verify: the DDTree step, its budget and 0-based index, node pieces, past column.
    bool haveTree = false;
    TreeStep tree;
    int treeBudget = 0, treeStepIndex = -1;
    std::vector<QString> treePieces;
    bool pastColumn = true;
    // Conventions of mask A (drawn) and B (diffed against when diff is on; not in tree mode).
    MaskConventions a, b;
    bool diff = false;

    /// Training mode draws the selected layer's mask when the layout has a causal or
    /// sliding-window layer; a base layout keeps the hand-set window (what-if masks).
    bool trainsPerLayer() const;
    /// The selected layer's attention (the base layout beyond the layout).
    LayerAttention selectedLayerAttention() const;
};

/// The computed figure. Cell values (shown, [rows * cols] row-major): plain 1 = visible,
/// 0 = masked; diff 0 = masked in both, 1 = visible in both, 2 = only A, 3 = only B.
struct MaskFigure {
    MaskMatrix maskA, maskB;  ///< maskB empty unless diff
    MaskDiffCounts counts;
    bool isDiff = false;
    std::vector<std::uint8_t> shown;
    QStringList columnLabels, rowLabels;  ///< tick labels: "b+2 @17 'piece'", "5", "n3 @9 'x'"
    QString error;                        ///< the backend's message on bad input ("" if none)
    QString summary;                      ///< one line: shape and visible count, or the diff counts
    QString title;                        ///< the plot's title (several lines)
};

/// Largest mask drawn (cells); a bigger one is an error naming its size.
constexpr std::int64_t kMaxMaskCells = std::int64_t(4) << 20;

/// Builds the figure of `in`. Never throws: bad input (an anchor outside [0, S), an
/// unparsable anchor list, a mask over kMaxMaskCells) gives empty masks and `error`.
MaskFigure buildMaskFigure(const MaskFigureInput& in);

/// "kv < anchor, bidirectional block, block at anchor+0": one convention set in words.
QString describeConventions(const MaskConventions& c);

/// The mask as drawn for `layer`: describeConventions(c) with the layer's causality and
/// sliding window applied ("kv < anchor, causal block (the layer is causal), block at
/// anchor+1, keys within the last 24 positions"); `layer` without a mask gives
/// describeConventions(c). Semantics: docs/ENGINE.md "Drafter attention layouts".
QString describeDrawnMask(const MaskConventions& c, const LayerAttention& layer);

}  // namespace draftscope
