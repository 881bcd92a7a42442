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

/// Keys no drafter family draftscope implements may set: each changes the draft math, so a
/// config that sets one is refused by name (DFLASH.md section 12).
inline constexpr config::UnimplementedKey kUnimplementedDrafterKeys[] = {
    {"projector_type", "a drafter projector other than DFlash's fc + hidden_norm (SGLang projector_type)"},
};
/// DSpark's keys, refused in any other config (they would be ignored).
inline constexpr config::UnimplementedKey kDSparkOnlyKeys[] = {
    {"markov_rank", "the DSpark intra-block Markov logit bias (markov_w1, markov_w2) outside a DSpark config (a "
                    "DSpark drafter is in the speculators format: speculators_model_type 'dspark')"},
};
/// Speculators-format keys that change the drafting layout, refused in a z-lab config (where
/// the reference would ignore them: a half-converted checkpoint).
inline constexpr config::UnimplementedKey kSpeculatorsOnlyKeys[] = {
    {"sample_from_anchor", "the anchor's row drafting too, a speculators-format key (a speculators drafter's config "
                           "names speculators_model_type and transformer_layer_config)"},
};
/// DFlash2's keys, refused in a speculators config of another type (they would be ignored).
inline constexpr config::UnimplementedKey kDFlash2OnlyKeys[] = {
    {"conv_kernel_size", "DFlash2's dynamic causal convolution, in a config whose speculators_model_type is not dflash2"},
    {"conv_group_size", "DFlash2's dynamic causal convolution, in a config whose speculators_model_type is not dflash2"},
    {"selector_rank", "DFlash2's candidate selector, in a config whose speculators_model_type is not dflash2"},
    {"selector_top_k", "DFlash2's candidate selector, in a config whose speculators_model_type is not dflash2"},
};
/// Keys a speculators `dspark` config may not set: what its Markov walk would do differently.
inline constexpr config::UnimplementedKey kUnimplementedDSparkKeys[] = {
    {"dspark_draft_topk", "a Markov walk over the top-k candidates of the base logits only (vLLM's truncated "
                          "proposal)"},
};

/// speculators `DSparkSpeculatorConfig`'s head keys, with its defaults (rank 256, vanilla
/// head, confidence head over [z; W1[prev]]).
DSparkConfig parseDSpark(const Fields& top) {
    const auto& path = top.path();
    DSparkConfig c;
    c.markovRank = top.has("markov_rank") ? top.integer("markov_rank") : 256;
    if (c.markovRank < 0)
        throw Error("'" + path + "': markov_rank must be 0 (no Markov head) or positive, found " +
                    std::to_string(c.markovRank));
    if (top.has("markov_head_type")) {
        if (!top.raw("markov_head_type").is_string())
            top.wrong("markov_head_type", "a string", top.raw("markov_head_type"));
        const auto type = top.string("markov_head_type", "vanilla");
        if (type != "vanilla")
            throw Error("'" + path + "': markov_head_type '" + escapeNonPrintable(type) +
                        "' is not implemented (draftscope reads the 'vanilla' first-order Markov bias, the one vLLM "
                        "serves; 'gated' and 'rnn' change the bias)");
    }
    c.confidenceHead = top.boolean("enable_confidence_head", true);
    c.confidenceWithMarkov = top.boolean("confidence_head_with_markov", true);
    if (c.confidenceHead && c.confidenceWithMarkov && c.markovRank == 0)
        throw Error("'" + path + "': confidence_head_with_markov is true but markov_rank is 0: the confidence head's "
                    "input [z; W1[prev]] needs the Markov head (speculators refuses this config too)");
    return c;
}

/// The architectures loadDrafterConfig accepts, as the message refusing others lists them.
constexpr const char* kDrafterArchitectures = "DFlashDraftModel, DFlash2DraftModel";

/// DFlash2's conv_* and selector_* keys (dflash_config first, then the top level), checked
/// against the body: the group size divides hidden_size, top-k <= vocab_size.
DFlash2Config parseDFlash2(const Fields& top, const Fields* dflash, const TransformerConfig& body) {
    const auto& path = top.path();
    std::string groupKey = "conv_group_size", topKKey = "selector_top_k";
    auto value = [&](const char* key, std::string* named = nullptr) {
        const Fields* f = dflash && dflash->has(key) ? dflash : top.has(key) ? &top : nullptr;
        if (!f)
            throw Error("'" + path + "': a DFlash2 drafter needs " + (dflash ? "'dflash_config." : "'") + key + "'" +
                        (dflash ? std::string(" (or a top-level '") + key + "')" : std::string()) +
                        " (the reference's DFlash2 reads it to build the drafter), but it is missing");
        if (named) *named = f->name(key);
        return f->positiveInt(key);
    };
    DFlash2Config c;
    c.convKernelSize = value("conv_kernel_size");
    c.convGroupSize = value("conv_group_size", &groupKey);
    c.selectorRank = value("selector_rank");
    c.selectorTopK = value("selector_top_k", &topKKey);
    if (body.hiddenSize % c.convGroupSize != 0)
        throw Error("'" + path + "': " + groupKey + " " + std::to_string(c.convGroupSize) + " does not divide hidden_size " +
                    std::to_string(body.hiddenSize) + " (expected a divisor of it: channels form equal groups)");
    if (c.selectorTopK > body.vocabSize)
        throw Error("'" + path + "': " + topKKey + " " + std::to_string(c.selectorTopK) + " exceeds vocab_size " +
                    std::to_string(body.vocabSize) + " (the candidates are the top-k of the vocabulary)");
    return c;
}

/// `architectures[0]`, "" when the key is absent or null. Throws Error naming the field if it
/// is not a non-empty list of strings or names two different models.
std::string drafterArchitecture(const Fields& top) {
    if (!top.has("architectures")) return {};
    const auto& a = top.raw("architectures");
    if (!a.is_array() || a.empty()) top.wrong("architectures", "a non-empty list of strings", a);
    for (const auto& e : a)
        if (!e.is_string()) top.wrong("architectures", "a non-empty list of strings", a);
    for (const auto& e : a)
        if (e != a[0])
            throw Error("'" + top.path() + "': architectures lists several models (" +
                        escapeNonPrintable(a[0].get<std::string>()) + ", " + escapeNonPrintable(e.get<std::string>()) +
                        "); a drafter's config names one");
    return a[0].get<std::string>();
}

/// HF Qwen3Config's defaults: speculators writes `transformer_layer_config` with
/// `to_diff_dict()`, so a key equal to its default is absent (rope: parseRope's theta 10000).
json qwen3ConfigDefaults() {
    return {{"vocab_size", 151936},          {"hidden_size", 4096},         {"intermediate_size", 22016},
            {"num_hidden_layers", 32},       {"num_attention_heads", 32},   {"num_key_value_heads", 32},
            {"head_dim", 128},               {"hidden_act", "silu"},        {"max_position_embeddings", 32768},
            {"rms_norm_eps", 1e-6},          {"attention_bias", false},     {"use_sliding_window", false},
            {"sliding_window", 4096},        {"max_window_layers", 28}};
}

/// A drafter in the vllm-project/speculators format (DrafterFormat::Speculators; speculators
/// `models/dflash` and `models/dflash2` configs, docs/ENGINE.md "Drafter families").
DrafterConfig loadSpeculatorsConfig(const json& j, const std::string& path) {
    const Fields top(j, path);
    DrafterConfig d;
    d.format = DrafterFormat::Speculators;
    d.body.configPath = path;
    if (!top.raw("speculators_model_type").is_string())
        top.wrong("speculators_model_type", "a string", top.raw("speculators_model_type"));
    const auto type = top.string("speculators_model_type", "");
    if (type == "dflash") d.family = DrafterFamily::DFlash;
    else if (type == "dflash2") d.family = DrafterFamily::DFlash2;
    else if (type == "dspark") d.family = DrafterFamily::DSpark;
    else
        throw Error("'" + path + "': speculators_model_type '" + escapeNonPrintable(type) +
                    "' is not a drafter family draftscope implements (speculators formats read: dflash, dflash2, dspark)");
    d.body.architecture = drafterArchitecture(top);
    // An architecture naming another model than the type says: refused, not run as the type.
    if (const auto& arch = d.body.architecture; !arch.empty()) {
        const auto named = arch.find("DSpark") != std::string::npos    ? std::string("dspark")
                           : arch.find("DFlash2") != std::string::npos ? std::string("dflash2")
                           : arch.find("DFlash") != std::string::npos  ? std::string("dflash")
                                                                       : std::string();
        if (named != type)
            throw Error("'" + path + "': architectures names '" + escapeNonPrintable(arch) + "', " +
                        (named.empty() ? std::string("which is no DFlash, DFlash2 or DSpark model,")
                                       : "a " + named + " model,") +
                        " but speculators_model_type is '" + type + "'; refusing to guess which one the weights are");
    }
    refuseUnimplemented(top, kUnimplementedDrafterKeys);
    if (d.family == DrafterFamily::DSpark) refuseUnimplemented(top, kUnimplementedDSparkKeys);
    else refuseUnimplemented(top, kDSparkOnlyKeys);
    if (d.family != DrafterFamily::DFlash2) refuseUnimplemented(top, kDFlash2OnlyKeys);
    if (!top.has("transformer_layer_config"))
        throw Error("'" + path + "': a speculators-format drafter (speculators_model_type '" + type +
                    "') needs 'transformer_layer_config' (its decoder layers), which is missing");
    const auto& layer = top.raw("transformer_layer_config");
    if (!layer.is_object()) top.wrong("transformer_layer_config", "an object", layer);
    const auto modelType = layer.contains("model_type") && layer["model_type"].is_string()
                               ? layer["model_type"].get<std::string>() : std::string("qwen3");
    if (modelType != "qwen3")
        throw Error("'" + path + "': transformer_layer_config.model_type '" + escapeNonPrintable(modelType) +
                    "' is not implemented (draftscope runs speculators drafters with a qwen3 body)");
    json body = qwen3ConfigDefaults();
    for (const auto& [k, v] : layer.items()) body[k] = v;
    if (layer.contains("final_logit_softcapping") && !layer["final_logit_softcapping"].is_null())
        throw Error("'" + path + "': transformer_layer_config.final_logit_softcapping = " +
                    layer["final_logit_softcapping"].dump() + " asks for soft-capped draft logits inside the body "
                    "config, which no speculators reference applies; draftscope refuses rather than ignore it");
    const Fields bf(body, path, "transformer_layer_config");
    d.body.family = TargetFamily::Qwen3;
    parseTransformer(bf, d.body, /*intermediateOptional=*/false, /*drafter=*/true);
    d.body.weightPrefix = "";
    const bool useSliding = bf.boolean("use_sliding_window", false);
    if (!layer.contains("layer_types")) {  // HF Qwen3Config: sliding from max_window_layers on
        const auto from = bf.positiveInt("max_window_layers", 28);
        for (std::int64_t i = 0; i < d.body.numLayers; ++i)
            d.body.layerTypes[static_cast<std::size_t>(i)] = useSliding && i >= from ? "sliding_attention" : "full_attention";
    }

    d.blockSize = top.positiveInt("block_size", 8);  // speculators' default
    if (d.blockSize < 2)
        throw Error("'" + path + "': block_size must be at least 2, found " + std::to_string(d.blockSize));
    d.maskTokenId = top.integer("mask_token_id");
    if (d.maskTokenId < 0)
        throw Error("'" + path + "': mask_token_id must be non-negative, found " + std::to_string(d.maskTokenId));
    // aux_hidden_state_layer_ids are HF hidden_states indices (vLLM capture ids): tap k + 1 is
    // z-lab's target layer k.
    if (!top.has("aux_hidden_state_layer_ids"))
        throw Error("'" + path + "': required field 'aux_hidden_state_layer_ids' (the tapped target layers, HF "
                    "hidden_states indices) is missing");
    const auto aux = top.intList("aux_hidden_state_layer_ids");
    if (aux.empty()) throw Error("'" + path + "': aux_hidden_state_layer_ids is empty");
    for (auto a : aux) {
        if (a < 1)
            throw Error("'" + path + "': aux_hidden_state_layer_ids contains " + std::to_string(a) +
                        " (hidden_states index " + std::to_string(a) + " is " +
                        (a == 0 ? "the embedding output" : "not a layer") + "; taps start at 1, the output of layer 0)");
        d.targetLayerIds.push_back(a - 1);
    }
    d.draftVocabSize = top.positiveInt("draft_vocab_size", 32000);
    if (d.draftVocabSize > d.body.vocabSize)
        throw Error("'" + path + "': draft_vocab_size " + std::to_string(d.draftVocabSize) +
                    " exceeds transformer_layer_config.vocab_size " + std::to_string(d.body.vocabSize));
    // speculators: DSpark drafts from the anchor's row by default, DFlash and DFlash2 do not;
    // speculators' DFlash2DraftModel refuses it (its selector starts from the anchor).
    d.sampleFromAnchor = top.boolean("sample_from_anchor", d.family == DrafterFamily::DSpark);
    if (d.sampleFromAnchor && d.family == DrafterFamily::DFlash2)
        throw Error("'" + path + "': sample_from_anchor is true for a dflash2 drafter; speculators' DFlash2 requires "
                    "sample_from_anchor false (its candidate selector walks from the anchor), and no reference "
                    "defines the combination");
    // vLLM scales a speculators drafter's logits (and DSpark's Markov bias) by `logit_scale`.
    if (top.has("logit_scale") && top.number("logit_scale", 1.0) != 1.0)
        throw Error("'" + path + "': logit_scale = " + top.raw("logit_scale").dump() + " asks for scaled draft logits "
                    "(vLLM's LogitsProcessor scale), which draftscope does not implement for the speculators format");
    // speculators: only sliding layers can be causal; full layers stay bidirectional.
    const bool nonCausal = top.boolean("sliding_window_non_causal", d.family == DrafterFamily::DFlash2);
    for (std::size_t i = 0; i < d.body.layerTypes.size(); ++i) {
        LayerAttention a;
        if (d.body.layerTypes[i] == "sliding_attention") {
            if (!useSliding)
                throw Error("'" + path + "': drafter layer " + std::to_string(i) + " is sliding_attention but "
                            "transformer_layer_config.use_sliding_window is not true, and HF Qwen3Config then drops the window");
            a.window = bf.positiveInt("sliding_window");
            if (*a.window < d.blockSize)
                throw Error("'" + path + "': transformer_layer_config.sliding_window = " + std::to_string(*a.window) +
                            " is smaller than block_size = " + std::to_string(d.blockSize));
            a.causal = !nonCausal;
        }
        d.layers.push_back(a);
    }
    if (top.has("input_embedding_scale")) d.inputEmbeddingScale = top.number("input_embedding_scale", 1.0);
    if (top.has("output_multiplier")) d.outputMultiplier = top.number("output_multiplier", 1.0);
    if (top.has("final_logit_softcapping")) {
        d.finalLogitSoftcapping = top.number("final_logit_softcapping", 0.0);
        if (!(*d.finalLogitSoftcapping > 0))
            throw Error("'" + path + "': final_logit_softcapping must be positive");
    }
    if (d.family == DrafterFamily::DFlash2) d.dflash2 = parseDFlash2(top, nullptr, d.body);
    if (d.family == DrafterFamily::DSpark) {
        d.dspark = parseDSpark(top);
        if (d.finalLogitSoftcapping)
            throw Error("'" + path + "': final_logit_softcapping with a DSpark Markov bias: neither reference says "
                        "whether the bias is added before or after the cap, so draftscope refuses the combination");
    }
    return d;
}

}  // namespace

const char* drafterFamilyName(DrafterFamily family) {
    switch (family) {
        case DrafterFamily::DFlash: return "DFlash";
        case DrafterFamily::DFlash2: return "DFlash2";
        case DrafterFamily::DSpark: return "DSpark";
    }
    return "?";
}

std::string describeFamily(const DrafterConfig& c) {
    std::vector<std::string> parts;
    if (c.format == DrafterFormat::Speculators)
        parts.push_back("speculators format, own embedding and head" +
                        (c.draftVocabSize < c.body.vocabSize
                             ? ", draft vocabulary " + std::to_string(c.draftVocabSize) + " of " +
                                   std::to_string(c.body.vocabSize) + " (d2t)"
                             : std::string()));
    if (c.dflash2) {
        const auto& d = *c.dflash2;
        parts.push_back("conv kernel " + std::to_string(d.convKernelSize) + ", groups of " +
                        std::to_string(d.convGroupSize) + " around attention and MLP; candidate selector rank " +
                        std::to_string(d.selectorRank) + ", top-" + std::to_string(d.selectorTopK));
    }
    if (c.dspark) {
        const auto& d = *c.dspark;
        parts.push_back(d.markovRank > 0 ? "Markov logit bias rank " + std::to_string(d.markovRank)
                                         : std::string("no Markov head"));
        if (d.confidenceHead)
            parts.push_back(d.confidenceWithMarkov ? "confidence head over [z; W1[prev]]" : "confidence head over z");
    }
    if (c.sampleFromAnchor)
        parts.push_back("drafts from the anchor's row (" + std::to_string(c.draftSlots()) + " tokens per block)");
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
}

DrafterConfig loadDrafterConfig(const std::string& dir) {
    std::string path;
    const json j = readConfigJson(dir, path);
    Fields top(j, path);
    if (top.has("speculators_model_type")) return loadSpeculatorsConfig(j, path);
    DrafterConfig d;
    d.body.configPath = path;
    d.body.architecture = drafterArchitecture(top);
    const bool hasDflash = top.has("dflash_config");
    refuseUnimplemented(top, kUnimplementedDrafterKeys);
    refuseUnimplemented(top, kDSparkOnlyKeys);
    refuseUnimplemented(top, kSpeculatorsOnlyKeys);
    const auto& arch = d.body.architecture;
    if (arch == "DFlash2DraftModel") {
        d.family = DrafterFamily::DFlash2;
    } else if (arch == "DFlashDraftModel" || (arch.empty() && hasDflash)) {
        d.family = DrafterFamily::DFlash;
    } else if (arch.empty()) {
        throw Error("'" + path + "' is not a block drafter: it names no architecture and has no 'dflash_config' "
                    "(drafter architectures draftscope implements: " + kDrafterArchitectures + ")");
    } else {
        throw Error("'" + path + "': architecture '" + escapeNonPrintable(arch) + "' is not a drafter family draftscope "
                    "implements (" + kDrafterArchitectures + "); refusing to run it as another family" +
                    (hasDflash ? " (it has a dflash_config, but its architecture says it is something else)" : "") +
                    (arch.find("Speculator") != std::string::npos
                         ? "; a vllm-project/speculators drafter's config also names speculators_model_type (dflash, "
                           "dflash2, dspark) and transformer_layer_config"
                         : ""));
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
        refuseUnimplemented(*dflash, kDSparkOnlyKeys);
        refuseUnimplemented(*dflash, kSpeculatorsOnlyKeys);
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
