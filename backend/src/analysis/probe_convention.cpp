#include "draftscope/probe_convention.h"

#include "draftscope/errors.h"

#include <algorithm>

namespace draftscope {

bool ProbeConvention::isDeclared() const { return !changesDrafterCall() && labelShift == 0; }

bool ProbeConvention::changesDrafterCall() const {
    for (auto b : blockAttention)
        if (b != BlockAttention::Declared) return true;
    for (const auto& w : window)
        if (w.kind != Window::Kind::Declared) return true;
    return positionOffset != 0 || tapOffset != 0 || anchorFeatureInContext;
}

std::vector<LayerAttention> probeLayout(const std::vector<LayerAttention>& declared, const ProbeConvention& c) {
    if (c.blockAttention.size() > declared.size() || c.window.size() > declared.size())
        throw Error("probe convention: overrides for " +
                    std::to_string(std::max(c.blockAttention.size(), c.window.size())) + " layers, the drafter has " +
                    std::to_string(declared.size()));
    auto layout = declared;
    for (std::size_t i = 0; i < c.blockAttention.size(); ++i) {
        if (c.blockAttention[i] == ProbeConvention::BlockAttention::Causal) layout[i].causal = true;
        if (c.blockAttention[i] == ProbeConvention::BlockAttention::Bidirectional) layout[i].causal = false;
    }
    for (std::size_t i = 0; i < c.window.size(); ++i) {
        const auto& w = c.window[i];
        if (w.kind == ProbeConvention::Window::Kind::None) layout[i].window.reset();
        if (w.kind == ProbeConvention::Window::Kind::Given) {
            if (w.size < 1)
                throw Error("probe convention: layer " + std::to_string(i) + " window " + std::to_string(w.size) +
                            ", expected >= 1");
            layout[i].window = w.size;
        }
    }
    return layout;
}

std::vector<std::int64_t> probeFeatureIndices(const std::vector<std::int64_t>& targetLayerIds, int tapOffset,
                                              std::int64_t numTargetLayers) {
    std::vector<std::int64_t> indices;
    for (auto id : targetLayerIds) {
        const auto index = id + 1 + tapOffset;
        if (index < 0 || index > numTargetLayers)
            throw Error("probe convention: tap offset " + std::to_string(tapOffset) + " maps target layer " +
                        std::to_string(id) + " to hidden_states[" + std::to_string(index) +
                        "], outside 0.." + std::to_string(numTargetLayers));
        indices.push_back(index);
    }
    return indices;
}

std::string describeConvention(const ProbeConvention& c, const std::vector<LayerAttention>& declared) {
    std::string s;
    auto part = [&](const std::string& p) { s += (s.empty() ? "" : "; ") + p; };
    const auto layout = probeLayout(declared, c);
    for (std::size_t i = 0; i < layout.size(); ++i)
        if (!(layout[i] == declared[i])) part("layer " + std::to_string(i) + " " + describeLayerAttention(layout[i]));
    if (c.positionOffset != 0)
        part(std::string("block at a") + (c.positionOffset > 0 ? "+" : "") + std::to_string(c.positionOffset));
    if (c.tapOffset != 0)
        part(c.tapOffset < 0 ? "taps hidden_states[id]" : "taps hidden_states[id+" + std::to_string(1 + c.tapOffset) + "]");
    if (c.anchorFeatureInContext) part("anchor feature in context");
    if (c.labelShift != 0) part("labels " + std::to_string(c.labelShift) + " position(s) later");
    return s.empty() ? "declared" : s;
}

}  // namespace draftscope
