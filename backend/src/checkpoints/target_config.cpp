// A target model's config.json (loadTargetConfig): supported architectures, the nested
// text_config of vision-language checkpoints, MoE fields, and the keys a target refuses.

#include "checkpoints/config_fields.h"
#include "draftscope/errors.h"
#include "draftscope/model_config.h"

#include <algorithm>
#include <optional>

namespace draftscope {

using namespace config;

namespace {

/// Drafter-only keys (DFLASH.md section 9) that the target forward does not implement.
constexpr UnimplementedKey kUnimplementedInTargets[] = {
    {"use_sliding_window", "sliding-window attention in a target"},
    {"input_embedding_scale", "scaled input embeddings"},
    {"output_multiplier", "scaled output logits"},
    {"final_logit_softcapping", "final logit soft-capping in a target"},
};
/// The same for Gemma 4, which soft-caps its logits (Gemma4Config::finalLogitSoftcapping).
constexpr UnimplementedKey kUnimplementedInGemma4[] = {
    {"use_sliding_window", "sliding-window attention switched by use_sliding_window"},
    {"input_embedding_scale", "scaled input embeddings"},
    {"output_multiplier", "scaled output logits"},
};

/// Which HF MoE block an architecture uses (defaults and router rule differ).
enum class MoeKind { None, Qwen3Moe, Qwen3Next, Qwen3_5Moe, GptOss };

/// Reads the MoE fields of `f` into c.moe with the HF config class defaults of `kind`
/// (Qwen3MoeConfig: 128 experts, top 8, 768, norm_topk_prob false; Qwen3NextConfig: 512,
/// top 10, 512, shared 512, true; Qwen3_5MoeTextConfig: 256, top 8, 512, shared 512, router
/// always renormalises). Throws Error for inconsistent values.
void parseMoe(const Fields& f, MoeKind kind, TransformerConfig& c) {
    auto& m = c.moe;
    const bool q3 = kind == MoeKind::Qwen3Moe, next = kind == MoeKind::Qwen3Next;
    const char* expertsKey = f.has("num_experts") || !f.has("num_local_experts") ? "num_experts" : "num_local_experts";
    m.numExperts = f.positiveInt(expertsKey, q3 ? 128 : next ? 512 : 256);
    m.numExpertsPerToken = f.positiveInt("num_experts_per_tok", next ? 10 : 8);
    m.expertIntermediateSize = f.positiveInt("moe_intermediate_size", q3 ? 768 : 512);
    if (!q3) m.sharedExpertIntermediateSize = f.positiveInt("shared_expert_intermediate_size", 512);
    m.normTopkProb = kind == MoeKind::Qwen3_5Moe ? true : f.boolean("norm_topk_prob", next);
    if (kind != MoeKind::Qwen3_5Moe) {  // Qwen3_5MoeDecoderLayer: every layer is sparse
        m.decoderSparseStep = f.positiveInt("decoder_sparse_step", 1);
        if (f.has("mlp_only_layers")) m.mlpOnlyLayers = f.intList("mlp_only_layers");
    }
    if (m.numExpertsPerToken > m.numExperts)
        throw Error("'" + f.path() + "': " + f.name("num_experts_per_tok") + " (" + std::to_string(m.numExpertsPerToken) +
                    ") exceeds the number of experts " + f.name(expertsKey) + " (" + std::to_string(m.numExperts) + ")");
    for (auto l : m.mlpOnlyLayers)
        if (l < 0 || l >= c.numLayers)
            throw Error("'" + f.path() + "': " + f.name("mlp_only_layers") + " names layer " + std::to_string(l) +
                        ", outside 0.." + std::to_string(c.numLayers - 1));
    for (std::int64_t l = 0; l < c.numLayers; ++l)
        if (!m.isSparseLayer(l) && c.intermediateSize <= 0)
            throw Error("'" + f.path() + "': layer " + std::to_string(l) + " has a dense MLP (mlp_only_layers / "
                        "decoder_sparse_step) but required field '" + f.name("intermediate_size") + "' is missing");
}

/// gpt-oss's fields with HF GptOssConfig's defaults: 128 experts (`num_local_experts`, alias
/// `num_experts`), top 4, expert width `intermediate_size` (2880), every layer sparse;
/// `sliding_window` 128; head_dim 64; rms_norm_eps 1e-5; attention_bias true; rope_theta
/// 150000 and, without rope_parameters / rope_scaling, YaRN factor 32 over 4096 positions,
/// beta 32 / 1, truncate false. `swiglu_limit` other than 7 is refused: HF's eager experts
/// hard-code 7 while its MXFP4 kernels read the key, so the two disagree.
void parseGptOss(const Fields& f, TransformerConfig& c) {
    if (!f.has("head_dim")) c.headDim = 64;
    if (!f.has("rms_norm_eps")) c.rmsNormEps = 1e-5;
    if (!f.has("attention_bias")) c.attentionBias = true;
    if (!f.has("rope_parameters") && !f.has("rope_scaling")) {
        c.rope.type = "yarn";
        c.rope.factor = 32.0;
        c.rope.betaFast = 32.0;
        c.rope.betaSlow = 1.0;
        c.rope.truncate = false;
        c.rope.originalMaxPositions = 4096;
    }
    if (!ropeKeyGiven(f, "rope_theta")) c.rope.theta = 150000.0;
    c.slidingWindow = f.positiveInt("sliding_window", 128);
    if (f.has("swiglu_limit") && f.number("swiglu_limit", 7.0) != 7.0)
        throw Error("'" + f.path() + "': '" + f.name("swiglu_limit") + "' = " + f.raw("swiglu_limit").dump() +
                    " asks for an expert clamp other than 7, which HF transformers' GptOssExperts does not apply "
                    "(it hard-codes 7); refusing to run the model with different math");
    auto& m = c.moe;
    const char* expertsKey = f.has("num_experts") || !f.has("num_local_experts") ? "num_experts" : "num_local_experts";
    m.numExperts = f.positiveInt(expertsKey, 128);
    m.numExpertsPerToken = f.positiveInt("num_experts_per_tok", 4);
    if (c.intermediateSize == 0) c.intermediateSize = 2880;
    m.expertIntermediateSize = c.intermediateSize;
    m.normTopkProb = true;  // softmax over the chosen k
    if (m.numExpertsPerToken > m.numExperts)
        throw Error("'" + f.path() + "': " + f.name("num_experts_per_tok") + " (" + std::to_string(m.numExpertsPerToken) +
                    ") exceeds the number of experts " + f.name(expertsKey) + " (" + std::to_string(m.numExperts) + ")");
}

/// One layer type's entry of Gemma 4's `rope_parameters` (HF Gemma4TextRotaryEmbedding): rope
/// type "default" or "proportional" (optional `factor`, `partial_rotary_factor`), theta;
/// `headDim` is the head size the schedule is computed over (HF: head_dim for default,
/// global_head_dim for a proportional full layer). Other types are refused by name.
RopeConfig parseGemma4Rope(const Fields& params, const std::string& type, std::int64_t headDim,
                           std::int64_t layerHeadDim) {
    RopeConfig r;
    r.type = params.string("rope_type", "default");
    r.theta = params.number("rope_theta", type == "full_attention" ? 1e6 : 10000.0);
    if (!(r.theta > 0)) throw Error("'" + params.path() + "': " + params.name("rope_theta") + " must be positive");
    if (r.type == "proportional") {
        r.factor = params.number("factor", 1.0);
        r.partialRotaryFactor = params.number("partial_rotary_factor", 1.0);
        if (!(r.factor > 0)) throw Error("'" + params.path() + "': " + params.name("factor") + " must be positive");
        if (!(r.partialRotaryFactor > 0 && r.partialRotaryFactor <= 1))
            throw Error("'" + params.path() + "': " + params.name("partial_rotary_factor") + " must be in (0, 1]");
        return r;
    }
    if (r.type != "default")
        throw Error("'" + params.path() + "': " + params.name("rope_type") + " '" + escapeNonPrintable(r.type) +
                    "' is not supported for Gemma 4 " + type + " layers (supported: default, proportional)");
    for (const char* key : {"factor", "partial_rotary_factor"})
        if (params.has(key))
            throw Error("'" + params.path() + "': " + params.name(key) + " with rope_type default: HF's default "
                        "Gemma 4 schedule ignores it; refusing a config whose intent is unclear");
    if (headDim != layerHeadDim)  // HF computes the default schedule over head_dim for every layer
        throw Error("'" + params.path() + "': rope_type default on " + type + " layers rotates head_dim (" +
                    std::to_string(headDim) + ") dimensions, but those layers have " + std::to_string(layerHeadDim) +
                    " (global_head_dim); HF transformers cannot run this config either");
    return r;
}

/// Gemma 4's fields with HF Gemma4TextConfig's defaults (transformers 5.17): head_dim 256,
/// 4 kv heads, sliding_window 512, layer_types five sliding then one full (the last layer
/// always full, as HF forces), rope_parameters per layer type (sliding: default, theta 1e4;
/// full: proportional, partial 0.25, theta 1e6), global_head_dim 512, per-layer inputs of
/// 256 over 262144 tokens, tied embeddings; `hidden_activation` gelu_pytorch_tanh only,
/// `use_bidirectional_attention` "all" refused (text prompts are causal under "vision").
void parseGemma4(const Fields& f, TransformerConfig& c) {
    auto& g = c.gemma4;
    if (!f.has("head_dim")) c.headDim = 256;
    if (!f.has("num_key_value_heads")) c.numKvHeads = 4;
    if (c.numHeads % c.numKvHeads)
        throw Error("'" + f.path() + "': num_attention_heads (" + std::to_string(c.numHeads) +
                    ") is not a multiple of num_key_value_heads (" + std::to_string(c.numKvHeads) +
                    (f.has("num_key_value_heads") ? ")" : ", HF Gemma4TextConfig's default)"));
    if (!f.has("max_position_embeddings")) c.maxPositions = 131072;
    c.slidingWindow = f.positiveInt("sliding_window", 512);
    const auto act = f.string("hidden_activation", "gelu_pytorch_tanh");
    if (act != "gelu_pytorch_tanh")
        throw Error("'" + f.path() + "': " + f.name("hidden_activation") + " '" + escapeNonPrintable(act) +
                    "' is not supported for Gemma 4 (expected gelu_pytorch_tanh)");
    c.hiddenAct = act;
    if (f.has("use_bidirectional_attention")) {
        const auto b = f.string("use_bidirectional_attention", "");
        if (b != "vision")
            throw Error("'" + f.path() + "': " + f.name("use_bidirectional_attention") + " = \"" + escapeNonPrintable(b) +
                        "\" makes text tokens attend bidirectionally, which draftscope does not implement (\"vision\" "
                        "and null keep text causal)");
    }
    c.layerTypes.back() = "full_attention";  // HF Gemma4TextConfig forces the last layer full
    // Full layers' head size and kv heads: HF < 5.15 reads the flat keys (global_head_dim,
    // null or absent -> 512 / head_dim; num_global_key_value_heads with attention_k_eq_v);
    // from 5.15 the config saves them as per_layer_config overrides, which then decide.
    g.attentionKEqV = f.boolean("attention_k_eq_v", false);
    g.globalHeadDim = f.present("global_head_dim") && !f.has("global_head_dim") ? c.headDim
                                                                               : f.positiveInt("global_head_dim", 512);
    g.numGlobalKvHeads = g.attentionKEqV ? f.positiveInt("num_global_key_value_heads", 0) : 0;
    g.layerHeadDims.clear();
    g.layerKvHeads.clear();
    const bool perLayer = f.has("per_layer_config");
    for (std::int64_t l = 0; l < c.numLayers; ++l) {
        const bool full = !c.isSlidingLayer(l) && !perLayer;
        g.layerHeadDims.push_back(full ? g.globalHeadDim : c.headDim);
        g.layerKvHeads.push_back(full && g.numGlobalKvHeads ? g.numGlobalKvHeads : c.numKvHeads);
    }
    if (perLayer) {
        const auto& plc = f.raw("per_layer_config");
        if (!plc.is_object()) f.wrong("per_layer_config", "an object keyed by layer index", plc);
        for (const auto& [key, entry] : plc.items()) {
            const auto name = f.name("per_layer_config") + "." + escapeNonPrintable(key);
            std::size_t used = 0;
            long long layer = -1;
            try {
                layer = std::stoll(key, &used);
            } catch (const std::exception&) {
            }
            if (used != key.size() || layer < 0 || layer >= c.numLayers)
                throw Error("'" + f.path() + "': " + name + ": expected a layer index 0.." + std::to_string(c.numLayers - 1));
            if (!entry.is_object()) throw Error("'" + f.path() + "': " + name + " must be an object");
            const Fields e(entry, f.path(), name);
            for (const auto& [k, v] : entry.items())
                if (k != "head_dim" && k != "num_key_value_heads")
                    throw Error("'" + f.path() + "': " + name + "." + escapeNonPrintable(k) +
                                " overrides a field per layer, which draftscope does not implement (it reads head_dim "
                                "and num_key_value_heads); refusing to run the model with different math");
            const auto li = static_cast<std::size_t>(layer);
            g.layerHeadDims[li] = e.positiveInt("head_dim", g.layerHeadDims[li]);
            g.layerKvHeads[li] = e.positiveInt("num_key_value_heads", g.layerKvHeads[li]);
        }
    }
    std::optional<std::int64_t> fullDim;
    for (std::int64_t l = 0; l < c.numLayers; ++l) {
        const auto li = static_cast<std::size_t>(l);
        if (c.numHeads % g.layerKvHeads[li])
            throw Error("'" + f.path() + "': layer " + std::to_string(l) + ": num_attention_heads (" +
                        std::to_string(c.numHeads) + ") is not a multiple of its " + std::to_string(g.layerKvHeads[li]) +
                        " kv heads");
        if (c.isSlidingLayer(l) && g.layerHeadDims[li] != c.headDim)
            throw Error("'" + f.path() + "': sliding layer " + std::to_string(l) + " has head_dim " +
                        std::to_string(g.layerHeadDims[li]) + ", but the sliding layers' rotary schedule spans head_dim " +
                        std::to_string(c.headDim));
        if (c.isSlidingLayer(l)) continue;
        if (fullDim && *fullDim != g.layerHeadDims[li])
            throw Error("'" + f.path() + "': the full_attention layers have different head sizes (" +
                        std::to_string(*fullDim) + " and " + std::to_string(g.layerHeadDims[li]) +
                        "), but one rotary schedule spans them all");
        fullDim = g.layerHeadDims[li];
    }
    if (fullDim) g.globalHeadDim = *fullDim;
    // hidden_size_per_layer_input: HF's default is 256 when the key is absent; null or 0 turn
    // per-layer inputs off (HF tests the value's truth).
    if (!f.present("hidden_size_per_layer_input")) g.perLayerInputSize = 256;
    else if (!f.has("hidden_size_per_layer_input") || (f.raw("hidden_size_per_layer_input").is_number_integer() &&
                                                       f.raw("hidden_size_per_layer_input").get<std::int64_t>() == 0))
        g.perLayerInputSize = 0;
    else g.perLayerInputSize = f.positiveInt("hidden_size_per_layer_input");
    g.perLayerVocabSize = g.perLayerInputSize ? f.positiveInt("vocab_size_per_layer_input", 262144) : 0;
    if (f.has("num_kv_shared_layers") && !(f.raw("num_kv_shared_layers").is_number_integer() &&
                                           f.raw("num_kv_shared_layers").get<std::int64_t>() == 0))
        g.numKvSharedLayers = f.positiveInt("num_kv_shared_layers");
    if (g.numKvSharedLayers >= c.numLayers)
        throw Error("'" + f.path() + "': " + f.name("num_kv_shared_layers") + " (" + std::to_string(g.numKvSharedLayers) +
                    ") must be less than num_hidden_layers (" + std::to_string(c.numLayers) + ")");
    for (auto l = c.numLayers - g.numKvSharedLayers; l < c.numLayers; ++l)
        if (c.kvSourceLayer(l) < 0)
            throw Error("'" + f.path() + "': layer " + std::to_string(l) + " (" + c.layerTypes[static_cast<std::size_t>(l)] +
                        ") shares keys and values (num_kv_shared_layers " + std::to_string(g.numKvSharedLayers) +
                        ") but no earlier layer has its type");
    g.doubleWideMlp = f.boolean("use_double_wide_mlp", false);
    if (f.has("final_logit_softcapping")) {
        g.finalLogitSoftcapping = f.number("final_logit_softcapping", 0.0);
        if (!(*g.finalLogitSoftcapping > 0))
            throw Error("'" + f.path() + "': " + f.name("final_logit_softcapping") + " must be positive");
    }
    // rope_parameters: {layer type: {rope_type, rope_theta, ...}}; null takes HF's defaults.
    c.rope = RopeConfig{};
    c.rope.theta = 10000.0;
    g.fullRope = RopeConfig{};
    g.fullRope.type = "proportional";
    g.fullRope.partialRotaryFactor = 0.25;
    g.fullRope.theta = 1e6;
    if (f.has("rope_parameters")) {
        const auto& rp = f.raw("rope_parameters");
        if (!rp.is_object()) f.wrong("rope_parameters", "an object keyed by layer type", rp);
        for (const auto& [key, value] : rp.items())
            if (key != "sliding_attention" && key != "full_attention")
                throw Error("'" + f.path() + "': " + f.name("rope_parameters") + " has an entry '" + escapeNonPrintable(key) +
                            "'; Gemma 4 expects one per layer type (sliding_attention, full_attention)");
        for (const char* type : {"sliding_attention", "full_attention"}) {
            const bool used = std::find(c.layerTypes.begin(), c.layerTypes.end(), type) != c.layerTypes.end();
            if (!used) continue;
            const auto name = f.name("rope_parameters") + "." + type;
            if (!rp.contains(type) || !rp[type].is_object())
                throw Error("'" + f.path() + "': " + name + " must be an object (the layers of that type rotate "
                            "their queries and keys)");
            const bool full = std::string(type) == "full_attention";
            const Fields params(rp[type], f.path(), name);
            (full ? g.fullRope : c.rope) = parseGemma4Rope(params, type, c.headDim, full ? g.globalHeadDim : c.headDim);
        }
    }
    // The parallel MoE block.
    if (f.boolean("enable_moe_block", false)) {
        g.moeBlock = true;
        auto& m = c.moe;
        m.numExperts = f.positiveInt("num_experts");
        m.numExpertsPerToken = f.positiveInt("top_k_experts");
        m.expertIntermediateSize = f.positiveInt("moe_intermediate_size");
        m.normTopkProb = true;
        if (m.numExpertsPerToken > m.numExperts)
            throw Error("'" + f.path() + "': " + f.name("top_k_experts") + " (" + std::to_string(m.numExpertsPerToken) +
                        ") exceeds the number of experts " + f.name("num_experts") + " (" + std::to_string(m.numExperts) + ")");
    }
}

/// `quantization_config`: gpt-oss's MXFP4 experts are read (c.quantization = "mxfp4"); any
/// other method, or MXFP4 on another architecture, is refused by name.
void parseQuantization(const Fields& top, const json& j, TransformerConfig& c) {
    if (!top.has("quantization_config")) return;
    const auto& q = j["quantization_config"];
    if (!q.is_object()) top.wrong("quantization_config", "an object", q);
    const Fields qf(q, top.path(), "quantization_config");
    const auto method = qf.string("quant_method", "");
    if (c.family == TargetFamily::GptOss && method == "mxfp4") {
        c.quantization = method;
        if (c.hiddenSize % 32 || c.intermediateSize % 32)
            throw Error("'" + top.path() + "': MXFP4 experts need hidden_size (" + std::to_string(c.hiddenSize) +
                        ") and intermediate_size (" + std::to_string(c.intermediateSize) +
                        ") to be multiples of 32 (the block size)");
        return;
    }
    throw Error("'" + top.path() + "': '" + qf.name("quant_method") + "' = \"" + escapeNonPrintable(method) +
                "\" asks for quantized weights, which draftscope does not read for " + c.architecture +
                " (it reads the MXFP4 experts of GptOssForCausalLM); refusing to run the model with different math");
}

}  // namespace

TransformerConfig loadTargetConfig(const std::string& dir) {
    std::string path;
    const json j = readConfigJson(dir, path);
    Fields top(j, path);
    TransformerConfig c;
    c.configPath = path;
    if (!top.has("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
        !j["architectures"][0].is_string())
        throw Error("'" + path + "': required field 'architectures' (a list naming the model class) is missing");
    c.architecture = j["architectures"][0].get<std::string>();
    c.modelType = top.string("model_type", "");

    struct Supported {
        const char* name;
        TargetFamily family;
        MoeKind moe;
    };
    static const Supported kSupported[] = {
        {"Qwen3ForCausalLM", TargetFamily::Qwen3, MoeKind::None},
        {"Qwen2ForCausalLM", TargetFamily::Qwen2, MoeKind::None},
        {"LlamaForCausalLM", TargetFamily::Llama, MoeKind::None},
        {"MistralForCausalLM", TargetFamily::Llama, MoeKind::None},
        {"Qwen3_5ForCausalLM", TargetFamily::Qwen3_5, MoeKind::None},
        {"Qwen3_5ForConditionalGeneration", TargetFamily::Qwen3_5, MoeKind::None},
        {"Qwen3MoeForCausalLM", TargetFamily::Qwen3, MoeKind::Qwen3Moe},
        {"Qwen3NextForCausalLM", TargetFamily::Qwen3_5, MoeKind::Qwen3Next},
        {"Qwen3_5MoeForCausalLM", TargetFamily::Qwen3_5, MoeKind::Qwen3_5Moe},
        {"Qwen3_5MoeForConditionalGeneration", TargetFamily::Qwen3_5, MoeKind::Qwen3_5Moe},
        {"GptOssForCausalLM", TargetFamily::GptOss, MoeKind::GptOss},
        {"Gemma4ForCausalLM", TargetFamily::Gemma4, MoeKind::None},
        {"Gemma4ForConditionalGeneration", TargetFamily::Gemma4, MoeKind::None},
    };
    bool known = false;
    MoeKind moeKind = MoeKind::None;
    for (const auto& s : kSupported)
        if (c.architecture == s.name) {
            c.family = s.family;
            moeKind = s.moe;
            known = true;
        }
    if (!known) {
        if (c.architecture == "DFlashDraftModel")
            throw Error("'" + path + "' describes a DFlash drafter (DFlashDraftModel), not a target model; pass it as the drafter");
        throw Error("'" + path + "': architecture '" + c.architecture +
                    "' is not supported (supported targets: Qwen3ForCausalLM, Qwen2ForCausalLM, "
                    "LlamaForCausalLM, MistralForCausalLM, Qwen3_5ForCausalLM, "
                    "Qwen3_5ForConditionalGeneration, Qwen3MoeForCausalLM, Qwen3NextForCausalLM, "
                    "Qwen3_5MoeForCausalLM, Qwen3_5MoeForConditionalGeneration, GptOssForCausalLM, "
                    "Gemma4ForCausalLM, Gemma4ForConditionalGeneration)");
    }

    // Vision-language checkpoints nest the language model's fields under text_config.
    const json* lm = &j;
    if (top.has("text_config")) {
        if (!j["text_config"].is_object()) top.wrong("text_config", "an object", j["text_config"]);
        lm = &j["text_config"];
        c.weightPrefix = "model.language_model.";
    }
    Fields f(*lm, path, lm == &j ? "" : "text_config");
    c.linearAttention.fusedProjections = moeKind == MoeKind::Qwen3Next;
    parseTransformer(f, c, /*intermediateOptional=*/moeKind != MoeKind::None);
    if (moeKind == MoeKind::GptOss) parseGptOss(f, c);
    else if (moeKind != MoeKind::None) parseMoe(f, moeKind, c);
    if (c.family == TargetFamily::Gemma4) parseGemma4(f, c);
    parseQuantization(top, j, c);
    // HF Gemma4TextConfig and Gemma4Config tie the head to the embeddings by default; for
    // Gemma4ForConditionalGeneration the top-level config decides (HF's tied-weights rule
    // reads the model's own config).
    if (c.family == TargetFamily::Gemma4 && lm != &j) {
        c.tieWordEmbeddings = top.boolean("tie_word_embeddings", true);
        auto& g = c.gemma4;
        for (const char* key : {"image_token_id", "video_token_id", "audio_token_id"}) {
            const std::int64_t fallback = std::string(key) == "image_token_id" ? 258880 : std::string(key) == "video_token_id" ? 258884 : 258881;
            if (!top.present(key)) g.placeholderIds.push_back(fallback);
            else if (top.has(key)) g.placeholderIds.push_back(top.integer(key));
        }
        g.padTokenId = f.has("pad_token_id") ? f.integer("pad_token_id") : 0;
        if (g.padTokenId < 0 || g.padTokenId >= c.vocabSize)
            throw Error("'" + path + "': " + f.name("pad_token_id") + " " + std::to_string(g.padTokenId) +
                        " is outside the vocabulary (" + std::to_string(c.vocabSize) + " tokens)");
    } else {
        const bool tiedByDefault = c.family == TargetFamily::Gemma4;
        c.tieWordEmbeddings = f.boolean("tie_word_embeddings", top.boolean("tie_word_embeddings", tiedByDefault));
    }
    if (c.eosTokenIds.empty() && top.has("eos_token_id")) {
        const auto& e = j["eos_token_id"];
        if (e.is_number_integer()) c.eosTokenIds = {e.get<std::int64_t>()};
        else c.eosTokenIds = top.intList("eos_token_id");
    }
    if (c.family == TargetFamily::Qwen2) c.attentionBias = true;  // Qwen2 always has q/k/v bias
    if (c.family == TargetFamily::Gemma4) refuseUnimplemented(f, kUnimplementedInGemma4);
    else refuseUnimplemented(f, kUnimplementedInTargets);
    if (c.architecture == "MistralForCausalLM" && f.has("sliding_window"))  // HF Mistral always applies it
        throw Error("'" + path + "': '" + f.name("sliding_window") +
                    "' asks for sliding-window attention in a target, which draftscope does not implement");
    return c;
}

}  // namespace draftscope
