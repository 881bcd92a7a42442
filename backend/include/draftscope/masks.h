#pragma once
// Attention masks of the DFlash drafter (inference call and packed training), built from
// explicit conventions so that the known mask bugs (DFLASH.md section 7) can be drawn and
// diffed against the reference. Plain std C++: no torch, no Qt.
//
// Semantics follow docs DFLASH.md section 3 (one drafter call: the block attends to all
// context and to the whole block, no mask) and section 6 (packed training mask).

#include "draftscope/attention_layout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace draftscope {

/// The conventions a mask is built with. The defaults are the reference behaviour; each
/// other value reproduces one failure class of DFLASH.md section 7.
struct MaskConventions {
    /// Which context keys a block may see, relative to its anchor position a.
    /// Strict: kv < a (reference). Inclusive: kv <= a, i.e. the anchor's own target feature
    /// leaks into the context (the "anchor leak" bug; acceptance collapses to ~1).
    enum class Context { Strict, Inclusive };
    /// Attention inside a block. Bidirectional: every block row sees the whole block
    /// (reference). Causal: block row i sees block rows 0..i only (the "causal block" bug).
    enum class Block { Bidirectional, Causal };

    Context context = Context::Strict;
    Block block = Block::Bidirectional;
    /// Block positions start at anchor + positionOffset. 0 is the reference; 1 is the
    /// off-by-one position-id bug (`ctx_len + 1`). Changes positions only, never visibility.
    int positionOffset = 0;

    bool operator==(const MaskConventions&) const = default;
};

/// A rectangular boolean attention mask: rows are queries, columns are keys.
struct MaskMatrix {
    std::int64_t rows = 0, cols = 0;
    std::vector<std::uint8_t> visible;         ///< [rows * cols], row-major, 1 = may attend
    std::vector<std::int64_t> rowPositions;    ///< [rows] absolute position id of each query
    std::vector<std::int64_t> colPositions;    ///< [cols] absolute position id of each key
    std::vector<std::string> rowLabels;        ///< [rows] e.g. "b1+3" (block 1, offset 3)
    std::vector<std::string> colLabels;        ///< [cols] e.g. "ctx 5", "b1+3"
    /// Number of leading key columns that are context (the rest are block rows).
    std::int64_t contextCols = 0;

    /// True if query row r may attend to key column c. No bounds check beyond the vector's.
    bool at(std::int64_t r, std::int64_t c) const {
        return visible[static_cast<std::size_t>(r * cols + c)] != 0;
    }
    /// Number of visible (1) cells.
    std::int64_t visibleCount() const;
};

/// Mask of one DFlash drafter call at inference (DFLASH.md section 3).
///
/// Queries: the B block rows [anchor, MASK x (B-1)], the anchor at absolute position
/// `contextLength`; row i has position contextLength + positionOffset + i and label "b+i".
/// Keys: the context positions 0..contextLength-1 (labels "ctx j", positions j), then the B
/// block rows (same labels and positions as the queries).
///
/// Reference (Strict, Bidirectional): every query sees every key (no mask, not causal).
/// Inclusive: at inference the context only holds positions < anchor, so the leak is
/// modelled as one extra context column at position contextLength, labelled
/// "ctx N (anchor feat)", holding the anchor's own target feature; every query sees it.
/// With `anchorColumnAlways` the column is also present under Strict, fully masked, so that
/// strict and inclusive masks have the same shape and can be diffed.
/// Causal: block row i sees block key columns 0..i only (context unchanged).
/// positionOffset shifts only the block's row and column positions, never visibility.
///
/// Shape: rows = B, cols = contextLength [+ 1] + B.
/// Throws Error if contextLength < 0 or blockSize < 1 (the message names the value).
MaskMatrix inferenceMask(std::int64_t contextLength, std::int64_t blockSize, const MaskConventions& conventions,
                         bool anchorColumnAlways = false);

/// Visibility of one drafter layer (DFLASH.md section 9) for queries at absolute positions
/// `queryPositions` over keys at `keyPositions`: [queries * keys] row-major, 1 = may attend,
/// cell (q, k) = layer.visible(queryPositions[q], keyPositions[k]). The one definition of
/// the per-layer inference mask: the drafter forward turns it into its attention mask and
/// the mask view draws it. Throws Error if the result would exceed the mask size limit.
std::vector<std::uint8_t> layerVisibility(const LayerAttention& layer, const std::vector<std::int64_t>& queryPositions,
                                          const std::vector<std::int64_t>& keyPositions);

/// inferenceMask() of one drafter layer: the same rows, columns, labels and positions, with
/// the reference conventions' visibility intersected with `layer`'s (layerVisibility over
/// the row and column positions). The base layout ({} = bidirectional, no window) gives
/// inferenceMask(contextLength, blockSize, conventions, anchorColumnAlways) unchanged.
MaskMatrix inferenceMask(std::int64_t contextLength, std::int64_t blockSize, const MaskConventions& conventions,
                         bool anchorColumnAlways, const LayerAttention& layer);

/// Packed training mask (DFLASH.md section 6).
///
/// Keys: [context 0..S-1 | block_0 | ... | block_{N-1}], N = anchors.size(); queries: the
/// N*B block rows. Block i (anchor a_i) sits at positions a_i + positionOffset + k,
/// k = 0..B-1; its rows and columns are labelled "bi+k"; context column j is "ctx j" at
/// position j.
///
/// A query at offset o of block i sees:
///  - context kv < a_i (Strict) or kv <= a_i (Inclusive);
///  - with slidingWindow W > 0, additionally only context kv >= a_i + o - (W-1) (window
///    measured from the reference position a_i + o, independent of positionOffset);
///  - its own block: all B columns (Bidirectional) or columns 0..o (Causal, or whenever W > 0);
///  - nothing of any other block.
///
/// Shape: rows = N*B, cols = S + N*B. Anchors need not be sorted or distinct.
/// Throws Error (naming the bad value) if S < 0, B < 1, W < 0 or an anchor is outside [0, S).
MaskMatrix trainingMask(std::int64_t contextLength, std::int64_t blockSize, const std::vector<std::int64_t>& anchors,
                        const MaskConventions& conventions, std::int64_t slidingWindow = 0);

/// trainingMask() of one drafter layer (DFLASH.md sections 6 and 9): the same rows, columns,
/// labels and positions, with the conventions' visibility (no slidingWindow) intersected with
/// `layer`'s, layerVisibility() over the reference positions (block i row/column k at
/// a_i + k, context j at j; positionOffset moves positions, never visibility). A sliding
/// causal layer thus sees context kv >= a_i + o - (W-1) and block rows o-(W-1)..o. The base
/// layout ({}) gives trainingMask(contextLength, blockSize, anchors, conventions) unchanged.
/// Throws as trainingMask().
MaskMatrix trainingMask(std::int64_t contextLength, std::int64_t blockSize, const std::vector<std::int64_t>& anchors,
                        const MaskConventions& conventions, const LayerAttention& layer);

/// Counts of a mask comparison.
struct MaskDiffCounts {
    std::int64_t onlyA = 0;             ///< cells visible in a but masked in b
    std::int64_t onlyB = 0;             ///< cells visible in b but masked in a
    std::int64_t positionMismatches = 0;///< rows + columns whose position id differs (offset bug)
    std::int64_t total() const { return onlyA + onlyB; }
};

/// Cell-wise disagreement of two masks of the same shape: visible = 1 where a and b differ.
/// Positions and labels are taken from a. If `counts` is given it receives the a-only and
/// b-only cell counts and the number of rows/columns whose positions differ.
/// Throws Error if the shapes differ (the message names both shapes).
MaskMatrix maskDifference(const MaskMatrix& a, const MaskMatrix& b, MaskDiffCounts* counts = nullptr);

/// Parses a comma (or whitespace) separated list of integers such as "1, 4,9". Throws Error
/// naming the offending piece if one is not an integer. Empty input gives an empty list.
std::vector<std::int64_t> parseIndexList(const std::string& text);

}  // namespace draftscope
