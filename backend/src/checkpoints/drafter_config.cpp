// A DFlash drafter's config.json (loadDrafterConfig): dflash_config, block size, mask
// token, tapped target layers, scalings, and the per-layer attention layout (DFLASH.md
// section 9).

#include "checkpoints/config_fields.h"
#include "draftscope/errors.h"
#include "draftscope/model_config.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <optional>

namespace draftscope {

using namespace config;

namespace {

/// DFLASH.md section 9: per-layer {causal, window} from layer_types, sliding_window +
/// use_sliding_window, is_causal and dflash_config.{causal, use_swa, swa_window_size}.
/// parseTransformer already checked layer_types' length and entries.
void resolveDrafterLayout(const Fields& top, const Fields* dflash, DrafterConfig& d) {
    const auto& path = top.path();
    auto types = d.body.layerTypes;  // every entry full_attention or sliding_attention
    std::optional<std::int64_t> window;
    std::string windowKey;
    if (dflash && dflash->has("swa_window_size")) {
        window = dflash->positiveInt("swa_window_size");
        windowKey = dflash->name("swa_window_size");
    } else if (top.has("sliding_window") && top.boolean("use_sliding_window", false)) {
        window = top.positiveInt("sliding_window");
        windowKey = "sliding_window";
    }
    const auto isSliding = [](const std::string& t) { return t == "sliding_attention"; };
    if (dflash && dflash->boolean("use_swa", false) && std::none_of(types.begin(), types.end(), isSliding))
        std::fill(types.begin(), types.end(), std::string("sliding_attention"));
    if (top.has("is_causal")) d.isCausal = top.boolean("is_causal", false);
    if (dflash && dflash->has("causal")) d.dflashCausal = dflash->boolean("causal", false);
    d.layers.clear();
    for (std::size_t i = 0; i < types.size(); ++i) {
        LayerAttention a;
        if (isSliding(types[i])) {
            if (!window)
                throw Error("'" + path + "': drafter layer " + std::to_string(i) + " is sliding_attention (" +
                            (top.has("layer_types") ? "layer_types" : "dflash_config.use_swa") +
                            ") but no window is given: " +
                            (top.has("sliding_window")
                                 ? "sliding_window is set but use_sliding_window is not true, and HF Qwen3Config "
                                   "then drops the window; set use_sliding_window true or "
                                 : "set sliding_window with use_sliding_window true, or ") +
                            "dflash_config.swa_window_size");
            if (*window < d.blockSize)
                throw Error("'" + path + "': " + windowKey + " = " + std::to_string(*window) +
                            " is smaller than block_size = " + std::to_string(d.blockSize) +
                            ": a block would not see all of itself");
            a.window = window;
        }
        a.causal = d.isCausal ? *d.isCausal : d.dflashCausal ? *d.dflashCausal : isSliding(types[i]);
        d.layers.push_back(a);
    }
}

/// Keys of drafter families draftscope does not implement yet: each changes the draft math,
/// so a config that sets one is refused by name (DFLASH.md section 12).
inline constexpr config::UnimplementedKey kUnimplementedDrafterKeys[] = {
    {"speculators_model_type", "a drafter in the vllm-project/speculators format"},
    {"markov_rank", "the DSpark intra-block Markov logit bias (markov_w1, markov_w2)"},
    {"projector_type", "a drafter projector other than DFlash's fc + hidden_norm (SGLang projector_type)"},
};

/// The architectures loadDrafterConfig accepts, as the message refusing others lists them.
constexpr const char* kDrafterArchitectures = "DFlashDraftModel, DFlash2DraftModel";

/// DFlash2's conv_* and selector_* keys (dflash_config first, then the top level), checked
/// against the body: the group size divides hidden_size, top-k <= vocab_size.
DFlash2Config parseDFlash2(const Fields& top, const Fields* dflash, const TransformerConfig& body) {
    const auto& path = top.path();
    auto value = [&](const char* key) {
        if (dflash && dflash->has(key)) return dflash->positiveInt(key);
        if (top.has(key)) return top.positiveInt(key);
        throw Error("'" + path + "': a DFlash2DraftModel needs 'dflash_config." + key +
                    "' (the reference's DFlash2 reads it to build the drafter), but it is missing");
    };
    DFlash2Config c;
    c.convKernelSize = value("conv_kernel_size");
    c.convGroupSize = value("conv_group_size");
    c.selectorRank = value("selector_rank");
    c.selectorTopK = value("selector_top_k");
    if (body.hiddenSize % c.convGroupSize != 0)
        throw Error("'" + path + "': conv_group_size " + std::to_string(c.convGroupSize) +
                    " does not divide hidden_size " + std::to_string(body.hiddenSize));
    if (c.selectorTopK > body.vocabSize)
        throw Error("'" + path + "': selector_top_k " + std::to_string(c.selectorTopK) +
                    " exceeds vocab_size " + std::to_string(body.vocabSize));
    return c;
}

}  // namespace

const char* drafterFamilyName(DrafterFamily family) {
    switch (family) {
        case DrafterFamily::DFlash: return "DFlash";
        case DrafterFamily::DFlash2: return "DFlash2";
    }
    return "?";
}

std::string describeFamily(const DrafterConfig& c) {
    if (!c.dflash2) return {};
    const auto& d = *c.dflash2;
    return "conv kernel " + std::to_string(d.convKernelSize) + ", groups of " + std::to_string(d.convGroupSize) +
           " around attention and MLP; candidate selector rank " + std::to_string(d.selectorRank) + ", top-" +
           std::to_string(d.selectorTopK);
}

DrafterConfig loadDrafterConfig(const std::string& dir) {
    std::string path;
    const json j = readConfigJson(dir, path);
    Fields top(j, path);
    DrafterConfig d;
    d.body.configPath = path;
    if (top.has("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
        j["architectures"][0].is_string())
        d.body.architecture = j["architectures"][0].get<std::string>();
    const bool hasDflash = top.has("dflash_config");
    refuseUnimplemented(top, kUnimplementedDrafterKeys);
    const auto& arch = d.body.architecture;
    if (arch == "DFlash2DraftModel") {
        d.family = DrafterFamily::DFlash2;
    } else if (arch == "DFlashDraftModel" || (arch.empty() && hasDflash)) {
        d.family = DrafterFamily::DFlash;
    } else if (arch.empty()) {
        throw Error("'" + path + "' is not a block drafter: it names no architecture and has no 'dflash_config' "
                    "(drafter architectures draftscope implements: " + kDrafterArchitectures + ")");
    } else {
        throw Error("'" + path + "': architecture '" + arch + "' is not a drafter family draftscope implements (" +
                    kDrafterArchitectures + "); refusing to run it as another family" +
                    (hasDflash ? " (it has a dflash_config, but its architecture says it is something else)" : ""));
    }
    d.body.family = TargetFamily::Qwen3;
    parseTransformer(top, d.body, /*intermediateOptional=*/false, /*drafter=*/true);
    d.body.weightPrefix = "";

    std::optional<Fields> dflash;
    if (hasDflash) {
        if (!j["dflash_config"].is_object()) top.wrong("dflash_config", "an object", j["dflash_config"]);
        dflash.emplace(j["dflash_config"], path, "dflash_config");
        refuseUnimplemented(*dflash, kUnimplementedEverywhere);
        refuseUnimplemented(*dflash, kUnimplementedDrafterKeys);
    }
    if (d.family == DrafterFamily::DFlash2) d.dflash2 = parseDFlash2(top, dflash ? &*dflash : nullptr, d.body);
    auto pick = [&](const char* key) -> const Fields* {
        if (dflash && dflash->has(key)) return &*dflash;
        if (top.has(key)) return &top;
        return nullptr;
    };
    const Fields* bs = pick("block_size");
    d.blockSize = bs ? bs->positiveInt("block_size") : 16;
    if (d.blockSize < 2)
        throw Error("'" + path + "': block_size must be at least 2, found " + std::to_string(d.blockSize));
    const Fields* mt = pick("mask_token_id");
    if (!mt) throw Error("'" + path + "': required field 'dflash_config.mask_token_id' is missing");
    d.maskTokenId = mt->integer("mask_token_id");
    if (d.maskTokenId < 0)
        throw Error("'" + path + "': mask_token_id must be non-negative, found " + std::to_string(d.maskTokenId));
    if (top.has("num_target_layers")) d.numTargetLayers = top.positiveInt("num_target_layers");
    if (const Fields* ids = pick("target_layer_ids")) {
        d.targetLayerIds = ids->intList("target_layer_ids");
        if (d.targetLayerIds.empty())
            throw Error("'" + path + "': target_layer_ids is empty");
    } else {
        if (d.numTargetLayers == 0)
            throw Error("'" + path + "': neither 'dflash_config.target_layer_ids' nor "
                        "'num_target_layers' is given, so the tapped layers are unknown");
        d.targetLayerIds = fallbackTargetLayerIds(d.numTargetLayers, d.body.numLayers);
        d.targetLayerIdsDerived = true;
    }
    for (auto id : d.targetLayerIds)
        if (id < 0) throw Error("'" + path + "': target_layer_ids contains a negative id " + std::to_string(id));

    // Output and input scalings (DFLASH.md section 9): dflash_config first, then top level.
    if (const Fields* s = pick("input_embedding_scale")) d.inputEmbeddingScale = s->number("input_embedding_scale", 1.0);
    if (const Fields* m = pick("output_multiplier")) d.outputMultiplier = m->number("output_multiplier", 1.0);
    if (const Fields* c = pick("final_logit_softcapping")) {
        d.finalLogitSoftcapping = c->number("final_logit_softcapping", 0.0);
        if (!(*d.finalLogitSoftcapping > 0))
            throw Error("'" + path + "': " + c->name("final_logit_softcapping") + " must be positive, found " +
                        std::to_string(*d.finalLogitSoftcapping));
    }
    resolveDrafterLayout(top, dflash ? &*dflash : nullptr, d);
    return d;
}

std::vector<std::int64_t> fallbackTargetLayerIds(std::int64_t numTargetLayers,
                                                 std::int64_t numDraftLayers) {
    if (numTargetLayers < 1 || numDraftLayers < 1)
        throw Error("cannot derive target_layer_ids from " + std::to_string(numTargetLayers) +
                    " target layers and " + std::to_string(numDraftLayers) + " draft layers");
    if (numDraftLayers == 1) return {numTargetLayers / 2};
    std::vector<std::int64_t> ids;
    const int saved = std::fegetround();
    std::fesetround(FE_TONEAREST);  // nearbyint then rounds half to even, as Python's round
    for (std::int64_t i = 0; i < numDraftLayers; ++i) {
        const double v = 1.0 + static_cast<double>(i * (numTargetLayers - 4)) /
                                   static_cast<double>(numDraftLayers - 1);
        ids.push_back(static_cast<std::int64_t>(std::nearbyint(v)));
    }
    std::fesetround(saved);
    return ids;
}

}  // namespace draftscope
