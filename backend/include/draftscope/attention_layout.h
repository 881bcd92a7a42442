#pragma once
// Per-layer attention layout of a DFlash drafter (DFLASH.md section 9): causal or
// bidirectional, with or without a sliding window. Torch-free; the mask built from it is
// layerVisibility() in masks.h, shared by the drafter forward and the mask view.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace draftscope {

/// How one drafter layer attends. The default (bidirectional, no window) is the base
/// DFlash layout: the block sees every key, no mask.
struct LayerAttention {
    bool causal = false;                 ///< a key is visible only if key position <= query position
    std::optional<std::int64_t> window;  ///< sliding window W (keys counted including the query's own position)

    /// True if this layer masks anything (the base layout runs mask-free).
    bool needsMask() const { return causal || window.has_value(); }
    /// DFLASH.md section 9, by absolute positions:
    /// (!causal || key <= query) && (no window || (query - key < W && (causal || key - query < W))).
    bool visible(std::int64_t query, std::int64_t key) const {
        if (causal && key > query) return false;
        if (!window) return true;
        return query - key < *window && (causal || key - query < *window);
    }
    bool operator==(const LayerAttention&) const = default;
};

/// "sliding 24 causal", "full bidirectional", "full causal", "sliding 24 bidirectional".
std::string describeLayerAttention(const LayerAttention& layer);

/// Whole-drafter summary: one description if every layer is alike ("2 x full bidirectional"),
/// else the layers in order separated by ", " ("sliding 24 causal, full bidirectional").
/// Empty input gives "".
std::string describeLayout(const std::vector<LayerAttention>& layers);

}  // namespace draftscope
