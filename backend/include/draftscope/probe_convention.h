#pragma once
// The conventions a teacher-forced drafter probe can run under (docs/DIAGNOSE.md,
// "Convention probes"). A drafter's weights carry the convention it was trained with; the
// probe runs it under the declared convention (its config, DFLASH.md sections 2, 3 and 9)
// and under alternatives, and the one it was trained with stands out. Torch-free.

#include "draftscope/attention_layout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace draftscope {

/// One probe convention: overrides of the declared drafter call. The default is the
/// declared convention (the config as DFLASH.md reads it), i.e. the inference call.
struct ProbeConvention {
    /// Attention inside the block of one drafter layer.
    enum class BlockAttention { Declared, Causal, Bidirectional };
    /// Sliding window of one drafter layer: as declared, none, or `size` keys (counted
    /// including the query's own position, DFLASH.md section 9).
    struct Window {
        enum class Kind { Declared, None, Given };
        Kind kind = Kind::Declared;
        std::int64_t size = 0;  ///< with Kind::Given, >= 1
        bool operator==(const Window&) const = default;
    };

    /// Per drafter layer (index = layer); layers past the end keep their declared causality.
    std::vector<BlockAttention> blockAttention;
    /// Per drafter layer; layers past the end keep their declared window.
    std::vector<Window> window;
    /// d in {-1, 0, +1}: the block rows sit at positions a+d..a+d+B-1 while the context
    /// keeps positions 0..a-1 (d = +1 is the `ctx_len + 1` bug of DFLASH.md section 7).
    int positionOffset = 0;
    /// d in {-1, 0, +1}: the feature of tapped layer id is HF hidden_states[id + 1 + d]
    /// (d = -1: the drafter was trained on hidden_states[id], DFLASH.md section 7).
    int tapOffset = 0;
    /// The anchor's own target feature joins the context (positions 0..a), the training
    /// bug "context sees the anchor" (kv <= anchor, DFLASH.md section 7).
    bool anchorFeatureInContext = false;
    /// 0 or 1: draft slot j is scored against the token at a+1+j+labelShift (1 = labels
    /// shifted by one in training). Scoring only: the drafter call is the same.
    int labelShift = 0;

    /// True if nothing is overridden.
    bool isDeclared() const;
    /// True if the drafter call (not only its scoring) differs from the declared one.
    bool changesDrafterCall() const;
    bool operator==(const ProbeConvention&) const = default;
};

/// The per-layer attention layout under `convention`: `declared` (DrafterConfig::layers)
/// with each layer's causality and window overridden as given. A Given window keeps the
/// layer's (possibly overridden) causality. Throws Error if an override list is longer
/// than `declared` or a Given window is < 1 (the message names the layer).
std::vector<LayerAttention> probeLayout(const std::vector<LayerAttention>& declared, const ProbeConvention& convention);

/// HF hidden_states indices of the drafter's features under `tapOffset` d: id + 1 + d for
/// every id of `targetLayerIds`. Throws Error if one falls outside 0..numTargetLayers (the
/// message names the id and the index).
std::vector<std::int64_t> probeFeatureIndices(const std::vector<std::int64_t>& targetLayerIds, int tapOffset,
                                              std::int64_t numTargetLayers);

/// Short description of what `convention` overrides against `declared`, e.g.
/// "layer 0 causal", "block at a+1", "taps hidden_states[id]", "window 24 on layers 0, 1",
/// "anchor feature in context", "labels one position later"; "declared" if nothing.
std::string describeConvention(const ProbeConvention& convention, const std::vector<LayerAttention>& declared);

}  // namespace draftscope
