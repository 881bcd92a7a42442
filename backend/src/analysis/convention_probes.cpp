#include "analysis/convention_probes.h"

#include "draftscope/errors.h"
#include "draftscope/masks.h"

#include <algorithm>
#include <cstdio>

namespace draftscope {

namespace {

using Block = ProbeConvention::BlockAttention;
using WindowKind = ProbeConvention::Window::Kind;

const std::vector<std::string> kConventionFamilies = {"context-leak", "label-shift", "block-causal",
                                                      "position-offset", "tap-offset", "window"};


std::string layerList(const std::vector<std::size_t>& layers) {
    std::string s;
    for (auto l : layers) s += (s.empty() ? "" : ", ") + std::to_string(l);
    return (layers.size() == 1 ? "layer " : "layers ") + s;
}

/// A set of drafter layers an override applies to, with its name.
struct Unit {
    std::string name;
    std::vector<std::size_t> layers;
};

/// Every layer, each layer type group (if there are several types), each single layer
/// (if there are several layers), restricted to the layers `keep` accepts; empty units and
/// repeats are dropped.
template <class Keep>
std::vector<Unit> layerUnits(const ModelSummary& d, Keep&& keep) {
    const auto n = d.layout.size();
    std::vector<Unit> units;
    auto push = [&](std::string name, std::vector<std::size_t> layers) {
        std::erase_if(layers, [&](std::size_t l) { return !keep(l); });
        if (layers.empty()) return;
        for (const auto& u : units)
            if (u.layers == layers) return;
        units.push_back({std::move(name), std::move(layers)});
    };
    std::vector<std::size_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = i;
    push("every layer", all);
    std::vector<std::string> types;
    for (std::size_t i = 0; i < n && i < d.layerTypes.size(); ++i)
        if (std::find(types.begin(), types.end(), d.layerTypes[i]) == types.end()) types.push_back(d.layerTypes[i]);
    if (types.size() > 1)
        for (const auto& t : types) {
            std::vector<std::size_t> group;
            for (std::size_t i = 0; i < n; ++i)
                if (d.layerTypes[i] == t) group.push_back(i);
            push("the " + t + " layers", group);
        }
    if (n > 1)
        for (std::size_t i = 0; i < n; ++i) push("layer " + std::to_string(i), {i});
    return units;
}

/// How the config resolves a sliding_attention layer's causality (DFLASH.md section 9).
bool slidingCausal(const std::optional<DrafterConfig>& c) {
    if (c && c->isCausal) return *c->isCausal;
    if (c && c->dflashCausal) return *c->dflashCausal;
    return true;
}

/// The fix for a block-causal alternative whose layout has causality `causal` per layer.
std::string causalFix(const std::vector<bool>& causal, const ModelSummary& d) {
    const bool all = std::all_of(causal.begin(), causal.end(), [](bool c) { return c; });
    const bool none = std::none_of(causal.begin(), causal.end(), [](bool c) { return c; });
    if (all) return "set `is_causal: true` (or `dflash_config.causal: true`) in config.json";
    if (none) return "set `is_causal: false` (or `dflash_config.causal: false`) in config.json";
    bool sectionNine = d.layerTypes.size() == causal.size();
    for (std::size_t i = 0; sectionNine && i < causal.size(); ++i)
        sectionNine = causal[i] == (d.layerTypes[i] == "sliding_attention");
    if (sectionNine)
        return "remove `is_causal` and `dflash_config.causal` from config.json: the default layout (docs/ENGINE.md, \"Drafter attention layouts\") then runs the "
               "sliding_attention layers causal and the full_attention layers bidirectional";
    std::vector<std::size_t> causalLayers;
    for (std::size_t i = 0; i < causal.size(); ++i)
        if (causal[i]) causalLayers.push_back(i);
    return "no single key states this mix: declare " + layerList(causalLayers) +
           " `sliding_attention` in `layer_types` with the window they were trained with (sliding layers are causal "
           "when `is_causal` is absent) and the others `full_attention`";
}

std::vector<ConventionAlternative> blockCausal(const ModelSummary& d) {
    std::vector<ConventionAlternative> out;
    std::vector<std::vector<LayerAttention>> seen = {d.layout};
    auto push = [&](ProbeConvention c) {
        const auto layout = probeLayout(d.layout, c);
        if (std::find(seen.begin(), seen.end(), layout) != seen.end()) return;
        seen.push_back(layout);
        std::vector<bool> causal;
        std::vector<std::size_t> changed;
        for (std::size_t i = 0; i < layout.size(); ++i) {
            causal.push_back(layout[i].causal);
            if (layout[i].causal != d.layout[i].causal) changed.push_back(i);
        }
        std::string trained;
        for (auto l : changed) trained += std::string(trained.empty() ? "" : ", ") + (layout[l].causal ? "a causal" : "a bidirectional") + " block in layer " + std::to_string(l);
        out.push_back({"block-causal", std::move(c), trained, causalFix(causal, d)});
    };
    const auto n = d.layout.size();
    for (const auto b : {Block::Causal, Block::Bidirectional}) {
        ProbeConvention c;
        c.blockAttention.assign(n, b);
        push(c);
    }
    for (const auto& u : layerUnits(d, [](std::size_t) { return true; })) {
        ProbeConvention c;
        c.blockAttention.assign(n, Block::Declared);
        for (auto l : u.layers) c.blockAttention[l] = d.layout[l].causal ? Block::Bidirectional : Block::Causal;
        push(c);
    }
    return out;
}

std::vector<ConventionAlternative> positionOffset() {
    std::vector<ConventionAlternative> out;
    for (int dOff : {-1, 1}) {
        ProbeConvention c;
        c.positionOffset = dOff;
        out.push_back({"position-offset", c,
                       dOff > 0 ? "its block at positions a+1..a+B (`ctx_len + 1`)" : "its block at positions a-1..a+B-2",
                       "no config key moves the block: fix the position ids of the training (or evaluation) code, "
                       "which must place the block at the anchor's own position a (docs/ENGINE.md, \"Training-time mask\"), "
                       "and retrain"});
    }
    return out;
}

std::vector<ConventionAlternative> tapOffset(const ModelSummary& d, std::int64_t targetLayers) {
    std::vector<ConventionAlternative> out;
    for (int dOff : {-1, 1}) {
        ProbeConvention c;
        c.tapOffset = dOff;
        try {
            probeFeatureIndices(d.targetLayerIds, dOff, targetLayers);
        } catch (const Error&) {
            continue;  // a tap outside the target: not a convention this target can have trained
        }
        std::vector<std::int64_t> ids;
        bool expressible = true;
        for (auto id : d.targetLayerIds) {
            ids.push_back(id + dOff);
            expressible = expressible && id + dOff >= 0;
        }
        const std::string taps = dOff < 0 ? "hidden_states[id]" : "hidden_states[id+2]";
        // The fix as the checkpoint's config writes its taps (speculators: HF hidden_states indices).
        std::vector<std::int64_t> aux;
        for (auto id : ids) aux.push_back(id + 1);
        const auto fix = d.speculatorsFormat ? "aux_hidden_state_layer_ids should be " + idListText(aux)
                                             : "target_layer_ids should be " + idListText(ids);
        out.push_back({"tap-offset", c, "features " + taps + " (one layer " + (dOff < 0 ? "shallower" : "deeper") + ")",
                       expressible ? fix
                                   : "target_layer_ids cannot name hidden_states[0] (the embeddings): fix the "
                                     "training code's taps (layer id k is hidden_states[k+1], docs/ENGINE.md \"Drafter call\")"});
    }
    return out;
}

std::vector<ConventionAlternative> window(const ModelSummary& d, const std::optional<DrafterConfig>& config,
                                          std::int64_t longestSequence) {
    std::vector<ConventionAlternative> out;
    const auto n = d.layout.size();
    std::vector<std::vector<LayerAttention>> seen = {d.layout};
    auto push = [&](ProbeConvention c, std::string trained, std::string fix) {
        const auto layout = probeLayout(d.layout, c);
        if (std::find(seen.begin(), seen.end(), layout) != seen.end()) return;
        seen.push_back(layout);
        out.push_back({"window", std::move(c), std::move(trained), std::move(fix)});
    };
    // Declared windows dropped.
    for (const auto& u : layerUnits(d, [&](std::size_t l) { return d.layout[l].window.has_value(); })) {
        ProbeConvention c;
        c.window.assign(n, {});
        for (auto l : u.layers) c.window[l].kind = WindowKind::None;
        push(c, "no sliding window in " + layerList(u.layers),
             "declare " + layerList(u.layers) + " `full_attention` in `layer_types` (and set `is_causal` if they "
             "were trained causal), or drop `sliding_window` / `dflash_config.swa_window_size`");
    }
    // A window the config does not declare: a few sizes, as a sliding_attention layer resolves.
    std::vector<std::int64_t> sizes;
    for (int div : {8, 4, 2}) {
        const auto W = longestSequence / div;
        if (W >= d.blockSize && W < longestSequence && std::find(sizes.begin(), sizes.end(), W) == sizes.end())
            sizes.push_back(W);
    }
    const auto best = [&](std::int64_t W) {
        return std::to_string(W) + " is the best of the probed windows (" + std::to_string(sizes.size()) +
               " sizes), so use the window the drafter was trained with if it is known";
    };
    const bool causal = slidingCausal(config);
    for (const auto& u : layerUnits(d, [&](std::size_t l) { return !d.layout[l].window.has_value(); }))
        for (auto W : sizes) {
            ProbeConvention c;
            c.window.assign(n, {});
            c.blockAttention.assign(n, Block::Declared);
            for (auto l : u.layers) {
                c.window[l] = {WindowKind::Given, W};
                c.blockAttention[l] = causal ? Block::Causal : Block::Bidirectional;
            }
            const bool everyLayer = u.layers.size() == n;
            push(c, "a sliding window of about " + std::to_string(W) + " in " + layerList(u.layers),
                 std::string("declare ") + layerList(u.layers) + " `sliding_attention` in `layer_types`" +
                     (everyLayer ? " (or set `dflash_config.use_swa: true` with `swa_window_size`)" : "") +
                     " and set `sliding_window: " + std::to_string(W) + "` and `use_sliding_window: true`; " +
                     best(W));
        }
    // A config that states no causality may also have lost a bidirectional window on every
    // layer (ModelOpt's `dflash_config {use_swa, swa_window_size, causal: false}`, or
    // DFlash2/Muse-style `is_causal: false` with every layer sliding; DFLASH.md section 9).
    const bool causalityStated = config && (config->isCausal || config->dflashCausal);
    const bool noWindow = std::none_of(d.layout.begin(), d.layout.end(), [](const LayerAttention& a) { return a.window.has_value(); });
    if (!causalityStated && noWindow && n > 0)
        for (auto W : sizes) {
            ProbeConvention c;
            c.window.assign(n, {WindowKind::Given, W});
            c.blockAttention.assign(n, Block::Bidirectional);
            push(c, "a bidirectional sliding window of about " + std::to_string(W) + " in every layer",
                 "set `dflash_config: {use_swa: true, swa_window_size: " + std::to_string(W) +
                     ", causal: false}` (or `is_causal: false` with every layer `sliding_attention`, `sliding_window: " +
                     std::to_string(W) + "` and `use_sliding_window: true`); " + best(W));
        }
    return out;
}

}  // namespace

std::string fixedDigits(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string idListText(const std::vector<std::int64_t>& ids) {
    std::string s = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

bool isConventionFamily(const std::string& family) {
    return std::find(kConventionFamilies.begin(), kConventionFamilies.end(), family) != kConventionFamilies.end();
}

std::vector<ConventionAlternative> conventionAlternatives(const std::string& family, const ModelSummary& drafter,
                                                          const std::optional<DrafterConfig>& config,
                                                          std::int64_t targetLayers, std::int64_t longestSequence) {
    if (family == "context-leak") {
        ProbeConvention c;
        c.anchorFeatureInContext = true;
        return {{family, c, "a context that includes the anchor's own feature (kv <= anchor instead of kv < anchor)",
                 "a feature that does not exist at inference; no config key repairs it: fix the training mask "
                 "(docs/ENGINE.md, \"Training-time mask\") and retrain"}};
    }
    if (family == "label-shift") {
        ProbeConvention c;
        c.labelShift = 1;
        return {{family, c, "labels shifted by one (slot j learned the token one position later)",
                 "no config key repairs it: train with same-position labels (row k of a block learns token a+k, "
                 "docs/ENGINE.md, \"Training-time mask\")"}};
    }
    if (family == "block-causal") return blockCausal(drafter);
    if (family == "position-offset") return positionOffset();
    if (family == "tap-offset") return tapOffset(drafter, targetLayers);
    if (family == "window") return window(drafter, config, longestSequence);
    throw Error("unknown convention probe family '" + family + "'");
}

bool conventionContains(const ProbeConvention& b, const ProbeConvention& a, const std::vector<LayerAttention>& declared) {
    const auto la = probeLayout(declared, a), lb = probeLayout(declared, b);
    if (la == lb && a.positionOffset == b.positionOffset && a.tapOffset == b.tapOffset &&
        a.anchorFeatureInContext == b.anchorFeatureInContext && a.labelShift == b.labelShift)
        return false;
    for (std::size_t i = 0; i < la.size(); ++i) {
        if (la[i].causal != declared[i].causal && lb[i].causal != la[i].causal) return false;
        if (la[i].window != declared[i].window && lb[i].window != la[i].window) return false;
    }
    return (a.positionOffset == 0 || a.positionOffset == b.positionOffset) &&
           (a.tapOffset == 0 || a.tapOffset == b.tapOffset) && (!a.anchorFeatureInContext || b.anchorFeatureInContext) &&
           (a.labelShift == 0 || a.labelShift == b.labelShift);
}

Finding conventionFinding(const ConventionProbe& p, const ConventionAlternative& alt,
                          const std::vector<LayerAttention>& declaredLayout,
                          std::vector<std::pair<std::string, double>> evidence) {
    Finding f;
    f.id = p.family == "context-leak" || p.family == "label-shift" ? p.family : "convention-" + p.family;
    f.severity = Severity::Error;
    const auto pct = static_cast<int>(kConventionConfidence * 100 + 0.5);
    f.message = "the drafter accepts " + fixedDigits(p.tau) + " tokens per block with " + p.alternative + " against " +
                fixedDigits(p.declaredTau) + " as declared (" +
                (declaredLayout.empty() ? std::string("declared") : describeLayout(declaredLayout)) +
                "; expected acceptance " + fixedDigits(p.expectedTau, 3) + " against " +
                fixedDigits(p.expectedDeclaredTau, 3) + ", " + std::to_string(pct) + "% interval of the gain " +
                fixedDigits(p.expectedDifference.lower, 3) + ".." + fixedDigits(p.expectedDifference.upper, 3) +
                " over " + std::to_string(p.expectedDifference.pairs) + " anchors): it was trained with " +
                alt.trainedWith + "; " + alt.fix;
    evidence.insert(evidence.end(), {{"declared_tau", p.declaredTau},
                                     {"alternative_tau", p.tau},
                                     {"declared_expected_acceptance", p.expectedDeclaredTau},
                                     {"alternative_expected_acceptance", p.expectedTau},
                                     {"difference_lower", p.expectedDifference.lower},
                                     {"difference_upper", p.expectedDifference.upper},
                                     {"anchors", double(p.expectedDifference.pairs)}});
    f.evidence = std::move(evidence);
    return f;
}

}  // namespace draftscope
