#include "draftscope/model_config.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <filesystem>
#include <map>

namespace draftscope {

namespace {

using nlohmann::json;

json readConfigJson(const std::string& dir, std::string& pathOut) {
    std::error_code ec;
    if (dir.empty()) throw Error("no model directory given");
    if (!std::filesystem::exists(dir, ec)) throw Error("model directory not found: '" + dir + "'");
    if (!std::filesystem::is_directory(dir, ec))
        throw Error("expected a model directory but found a file: '" + dir + "'");
    pathOut = (std::filesystem::path(dir) / "config.json").string();
    if (!std::filesystem::exists(pathOut, ec))
        throw Error("no config.json in model directory '" + dir + "'");
    const std::string text = readFileToString(pathOut);
    try {
        checkJsonDepth(text.data(), text.data() + text.size(), pathOut);
        json j = json::parse(text);
        if (!j.is_object()) throw Error("'" + pathOut + "' is not a JSON object");
        return j;
    } catch (const json::exception& e) {
        throw Error("'" + pathOut + "' is not valid JSON: " + e.what());
    }
}

/// Field access with messages that name the file and the field.
class Fields {
public:
    Fields(const json& j, std::string path, std::string scope = "")
        : j_(j), path_(std::move(path)), scope_(std::move(scope)) {}

    bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
    const json& raw(const char* key) const { return j_[key]; }

    std::int64_t positiveInt(const char* key) const {
        if (!has(key)) missing(key);
        return positiveIntValue(key);
    }
    std::int64_t positiveInt(const char* key, std::int64_t fallback) const {
        return has(key) ? positiveIntValue(key) : fallback;
    }
    std::int64_t integer(const char* key) const {
        if (!has(key)) missing(key);
        const auto& v = j_[key];
        if (!v.is_number_integer()) wrong(key, "an integer", v);
        return v.get<std::int64_t>();
    }
    double number(const char* key, double fallback) const {
        if (!has(key)) return fallback;
        const auto& v = j_[key];
        if (!v.is_number()) wrong(key, "a number", v);
        return v.get<double>();
    }
    bool boolean(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        const auto& v = j_[key];
        if (!v.is_boolean()) wrong(key, "true or false", v);
        return v.get<bool>();
    }
    std::string string(const char* key, const std::string& fallback) const {
        if (!has(key)) return fallback;
        const auto& v = j_[key];
        if (!v.is_string()) wrong(key, "a string", v);
        return v.get<std::string>();
    }
    std::vector<std::int64_t> intList(const char* key) const {
        const auto& v = j_[key];
        if (!v.is_array()) wrong(key, "a list of integers", v);
        std::vector<std::int64_t> out;
        for (const auto& e : v) {
            if (!e.is_number_integer()) wrong(key, "a list of integers", v);
            out.push_back(e.get<std::int64_t>());
        }
        return out;
    }
    std::string name(const char* key) const { return scope_.empty() ? key : scope_ + "." + key; }
    const std::string& path() const { return path_; }

    [[noreturn]] void missing(const char* key) const {
        throw Error("'" + path_ + "': required field '" + name(key) + "' is missing");
    }
    [[noreturn]] void wrong(const char* key, const char* expected, const json& found) const {
        std::string f = found.dump();
        if (f.size() > 60) f = f.substr(0, 57) + "...";
        throw Error("'" + path_ + "': field '" + name(key) + "' must be " + expected +
                    ", found " + f);
    }

private:
    std::int64_t positiveIntValue(const char* key) const {
        const auto& v = j_[key];
        if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
            wrong(key, "a positive integer", v);
        // Sizes far beyond any real model mean a corrupt or hostile config; refusing them
        // here keeps allocations sized from the config bounded.
        const auto value = v.get<std::int64_t>();
        const auto limit = maximumOf(key);
        if (value > limit)
            throw Error("'" + path_ + "': field '" + name(key) + "' is " + std::to_string(value) +
                        ", more than draftscope accepts (" + std::to_string(limit) + "); the config is probably corrupt");
        return value;
    }
    static std::int64_t maximumOf(const char* key) {
        static const std::map<std::string, std::int64_t> limits = {
            {"num_hidden_layers", 1024},       {"num_attention_heads", 1024},   {"num_key_value_heads", 1024},
            {"head_dim", 4096},                {"hidden_size", 1 << 17},        {"intermediate_size", 1 << 20},
            {"vocab_size", 1 << 24},           {"max_position_embeddings", 1 << 24},
            {"block_size", 1024},              {"linear_conv_kernel_dim", 64},  {"linear_num_key_heads", 1024},
            {"linear_num_value_heads", 1024},  {"linear_key_head_dim", 4096},   {"linear_value_head_dim", 4096},
            {"num_experts", 4096},             {"num_local_experts", 4096},     {"num_experts_per_tok", 4096},
            {"moe_intermediate_size", 1 << 20}, {"shared_expert_intermediate_size", 1 << 20},
            {"num_target_layers", 1024},       {"full_attention_interval", 1024}};
        const auto it = limits.find(key);
        return it == limits.end() ? (std::int64_t{1} << 30) : it->second;
    }
    const json& j_;
    std::string path_;
    std::string scope_;
};

RopeConfig parseRope(const Fields& f, std::int64_t maxPositions) {
    RopeConfig rope;
    // 5.x: rope_parameters {rope_theta, rope_type, ...}; 4.x: rope_theta + rope_scaling.
    std::optional<Fields> params;
    if (f.has("rope_parameters")) {
        if (!f.raw("rope_parameters").is_object())
            f.wrong("rope_parameters", "an object", f.raw("rope_parameters"));
        params.emplace(f.raw("rope_parameters"), f.path(), f.name("rope_parameters"));
    } else if (f.has("rope_scaling")) {
        if (!f.raw("rope_scaling").is_object())
            f.wrong("rope_scaling", "an object", f.raw("rope_scaling"));
        params.emplace(f.raw("rope_scaling"), f.path(), f.name("rope_scaling"));
    }
    rope.theta = f.number("rope_theta", params ? params->number("rope_theta", 10000.0) : 10000.0);
    rope.partialRotaryFactor = f.number("partial_rotary_factor",
        params ? params->number("partial_rotary_factor", 1.0) : 1.0);
    if (params) {
        rope.type = params->string("rope_type", params->string("type", "default"));
        if (rope.type != "default") {
            rope.factor = params->number("factor", 1.0);
            rope.lowFreqFactor = params->number("low_freq_factor", 1.0);
            rope.highFreqFactor = params->number("high_freq_factor", 4.0);
            rope.originalMaxPositions = params->positiveInt("original_max_position_embeddings",
                                                            rope.type == "yarn" ? maxPositions : 8192);
        }
        if (rope.type == "yarn") {  // HF _compute_yarn_parameters
            if (!params->has("factor")) params->missing("factor");
            rope.betaFast = params->number("beta_fast", 32.0);
            rope.betaSlow = params->number("beta_slow", 1.0);
            auto optional = [&](const char* key) {
                return params->has(key) ? std::optional<double>(params->number(key, 0.0)) : std::nullopt;
            };
            rope.mscale = optional("mscale");
            rope.mscaleAllDim = optional("mscale_all_dim");
            rope.attentionFactor = optional("attention_factor");
            rope.truncate = params->boolean("truncate", true);
            if (!(rope.factor > 0)) throw Error("'" + f.path() + "': " + params->name("factor") + " must be positive");
        }
    }
    if (rope.type != "default" && rope.type != "linear" && rope.type != "llama3" && rope.type != "yarn")
        throw Error("'" + f.path() + "': rope type '" + rope.type +
                    "' is not supported (supported: default, linear, llama3, yarn)");
    if (!(rope.theta > 0)) throw Error("'" + f.path() + "': rope_theta must be positive");
    if (!(rope.partialRotaryFactor > 0 && rope.partialRotaryFactor <= 1))
        throw Error("'" + f.path() + "': partial_rotary_factor must be in (0, 1]");
    return rope;
}

/// A config key that changes the math and that draftscope does not implement, with why.
struct UnimplementedKey {
    const char* key;
    const char* what;
};

/// Keys no model may set (to anything but null or false): each one changes the forward
/// pass and is not implemented, so running without it would silently compute something
/// else. One table per kind of model; refuseUnimplemented() applies it.
constexpr UnimplementedKey kUnimplementedEverywhere[] = {
    {"mlp_bias", "MLP projections with bias"},
    {"attn_logit_softcapping", "attention logit soft-capping"},
    {"query_pre_attn_scalar", "an attention scale other than head_dim^-0.5"},
    {"attention_multiplier", "an attention scale other than head_dim^-0.5"},
    {"embedding_multiplier", "scaled input embeddings"},
    {"residual_multiplier", "scaled residual branches"},
    {"logits_scaling", "scaled output logits"},
    {"transformer_layer_config", "the vllm-project/speculators drafter format (nested transformer fields, its own "
                                 "embed_tokens and lm_head)"},
    {"aux_hidden_state_layer_ids", "the vllm-project/speculators drafter format (taps named "
                                   "aux_hidden_state_layer_ids)"},
    {"draft_vocab_size", "a reduced draft vocabulary (d2t / t2d token maps)"},
};
/// Drafter-only keys (DFLASH.md section 9) that the target forward does not implement.
constexpr UnimplementedKey kUnimplementedInTargets[] = {
    {"use_sliding_window", "sliding-window attention in a target"},
    {"input_embedding_scale", "scaled input embeddings"},
    {"output_multiplier", "scaled output logits"},
    {"final_logit_softcapping", "final logit soft-capping in a target"},
};

template <std::size_t N>
void refuseUnimplemented(const Fields& f, const UnimplementedKey (&table)[N]) {
    for (const auto& k : table) {
        if (!f.has(k.key)) continue;
        const auto& v = f.raw(k.key);
        if (v.is_boolean() && v == false) continue;
        std::string value = v.dump();
        if (value.size() > 40) value = value.substr(0, 37) + "...";
        throw Error("'" + f.path() + "': '" + f.name(k.key) + "' = " + value + " asks for " + k.what +
                    ", which draftscope does not implement; refusing to run the model with different math");
    }
}

/// Fills the transformer fields shared by targets and drafters from `f`. With
/// `intermediateOptional` (MoE targets, whose dense intermediate_size may be absent when
/// every layer is sparse), a missing intermediate_size leaves 0.
/// `drafter`: sliding_attention layers are allowed (their window is resolved by
/// loadDrafterConfig); targets accept full_attention and, for Qwen3_5, linear_attention.
void parseTransformer(const Fields& f, TransformerConfig& c, bool intermediateOptional = false,
                      bool drafter = false) {
    c.hiddenSize = f.positiveInt("hidden_size");
    c.intermediateSize = intermediateOptional ? f.positiveInt("intermediate_size", 0) : f.positiveInt("intermediate_size");
    c.numLayers = f.positiveInt("num_hidden_layers");
    c.numHeads = f.positiveInt("num_attention_heads");
    c.numKvHeads = f.positiveInt("num_key_value_heads", c.numHeads);
    c.headDim = f.positiveInt("head_dim", c.hiddenSize / c.numHeads);
    c.vocabSize = f.positiveInt("vocab_size");
    c.maxPositions = f.positiveInt("max_position_embeddings", 32768);
    c.rmsNormEps = f.number("rms_norm_eps", 1e-6);
    c.attentionBias = f.boolean("attention_bias", false);
    c.hiddenAct = f.string("hidden_act", "silu");
    c.modelType = f.string("model_type", c.modelType);
    c.rope = parseRope(f, c.maxPositions);
    refuseUnimplemented(f, kUnimplementedEverywhere);
    c.checkpointDtype = f.string("dtype", f.string("torch_dtype", c.checkpointDtype));
    if (c.numHeads % c.numKvHeads != 0)
        throw Error("'" + f.path() + "': num_attention_heads (" + std::to_string(c.numHeads) +
                    ") is not a multiple of num_key_value_heads (" +
                    std::to_string(c.numKvHeads) + ")");
    if (c.hiddenAct != "silu")
        throw Error("'" + f.path() + "': hidden_act '" + c.hiddenAct +
                    "' is not supported (expected silu)");
    if (f.has("layer_types")) {
        const auto& lt = f.raw("layer_types");
        if (!lt.is_array()) f.wrong("layer_types", "a list of strings", lt);
        for (const auto& e : lt) {
            if (!e.is_string()) f.wrong("layer_types", "a list of strings", lt);
            c.layerTypes.push_back(e.get<std::string>());
        }
        if (static_cast<std::int64_t>(c.layerTypes.size()) != c.numLayers)
            throw Error("'" + f.path() + "': layer_types has " +
                        std::to_string(c.layerTypes.size()) + " entries, expected num_hidden_layers = " +
                        std::to_string(c.numLayers));
    } else if (c.family == TargetFamily::Qwen3_5) {
        // HF Qwen3_5TextConfig: every full_attention_interval-th layer is full attention.
        const auto interval = f.positiveInt("full_attention_interval", 4);
        for (std::int64_t i = 0; i < c.numLayers; ++i)
            c.layerTypes.push_back((i + 1) % interval ? "linear_attention" : "full_attention");
    } else {
        c.layerTypes.assign(static_cast<std::size_t>(c.numLayers), "full_attention");
    }
    for (const auto& t : c.layerTypes) {
        if (t == "full_attention") continue;
        if (t == "sliding_attention" && drafter) continue;
        if (t == "linear_attention" && c.family == TargetFamily::Qwen3_5) continue;
        throw Error("'" + f.path() + "': layer type '" + t + "' is not supported " +
                    (c.family == TargetFamily::Qwen3_5
                         ? std::string("(Qwen3.5 layers are full_attention or linear_attention)")
                         : drafter ? std::string("in a drafter (layer_types entries must be full_attention or "
                                                 "sliding_attention)")
                                   : std::string("for this architecture (only full_attention layers; linear_attention "
                                                 "needs a Qwen3_5 architecture)")));
    }
    if (c.family == TargetFamily::Qwen3_5) {
        // HF Qwen3_5TextConfig defaults when the config does not say: rope_theta 1e7 and
        // partial_rotary_factor 0.25 (Qwen3NextConfig: rope_theta 10000, partial 0.25).
        auto given = [&](const char* key) {
            if (f.has(key)) return true;
            for (const char* group : {"rope_parameters", "rope_scaling"})
                if (f.has(group) && f.raw(group).is_object() && f.raw(group).contains(key) &&
                    !f.raw(group)[key].is_null())
                    return true;
            return false;
        };
        if (!given("rope_theta")) c.rope.theta = c.linearAttention.fusedProjections ? 10000.0 : 1e7;
        if (!given("partial_rotary_factor")) c.rope.partialRotaryFactor = 0.25;
        auto& la = c.linearAttention;
        la.numKeyHeads = f.positiveInt("linear_num_key_heads", la.numKeyHeads);
        la.numValueHeads = f.positiveInt("linear_num_value_heads", la.numValueHeads);
        la.keyHeadDim = f.positiveInt("linear_key_head_dim", la.keyHeadDim);
        la.valueHeadDim = f.positiveInt("linear_value_head_dim", la.valueHeadDim);
        la.convKernel = f.positiveInt("linear_conv_kernel_dim", la.convKernel);
        if (la.numValueHeads % la.numKeyHeads != 0)
            throw Error("'" + f.path() + "': linear_num_value_heads (" + std::to_string(la.numValueHeads) +
                        ") is not a multiple of linear_num_key_heads (" + std::to_string(la.numKeyHeads) + ")");
    }
    if (f.has("eos_token_id")) {
        const auto& e = f.raw("eos_token_id");
        if (e.is_number_integer()) c.eosTokenIds = {e.get<std::int64_t>()};
        else c.eosTokenIds = f.intList("eos_token_id");
    }
}

/// Which HF MoE block an architecture uses (defaults and router rule differ).
enum class MoeKind { None, Qwen3Moe, Qwen3Next, Qwen3_5Moe };

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

}  // namespace

YarnParameters yarnParameters(const RopeConfig& rope, std::int64_t headDim) {
    YarnParameters y;
    // HF: dim = int(head_dim * partial_rotary_factor)
    y.rotaryDim = static_cast<std::int64_t>(static_cast<double>(headDim) * rope.partialRotaryFactor);
    if (y.rotaryDim <= 0) throw Error("yarn rope: rotary dimension is zero (head_dim " + std::to_string(headDim) + ")");
    if (!(rope.factor > 0)) throw Error("yarn rope: factor must be positive, found " + std::to_string(rope.factor));
    const double dim = static_cast<double>(y.rotaryDim), f = rope.factor, base = rope.theta;
    const auto getMscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
    if (rope.attentionFactor) y.attentionFactor = *rope.attentionFactor;
    else if (rope.mscale && *rope.mscale != 0 && rope.mscaleAllDim && *rope.mscaleAllDim != 0)  // HF: `if mscale and mscale_all_dim`
        y.attentionFactor = getMscale(f, *rope.mscale) / getMscale(f, *rope.mscaleAllDim);
    else y.attentionFactor = getMscale(f, 1.0);
    const double orig = static_cast<double>(rope.originalMaxPositions);
    const auto correctionDim = [&](double rotations) {
        return dim * std::log(orig / (rotations * 2 * M_PI)) / (2 * std::log(base));
    };
    double low = correctionDim(rope.betaFast), high = correctionDim(rope.betaSlow);
    if (rope.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    y.low = std::max(low, 0.0);
    y.high = std::min(high, dim - 1);
    if (y.low == y.high) y.high += 0.001;  // HF linear_ramp_factor: avoid a division by zero
    return y;
}

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
                    "Qwen3_5MoeForCausalLM, Qwen3_5MoeForConditionalGeneration)");
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
    if (moeKind != MoeKind::None) parseMoe(f, moeKind, c);
    c.tieWordEmbeddings = f.boolean("tie_word_embeddings", top.boolean("tie_word_embeddings", false));
    if (c.eosTokenIds.empty() && top.has("eos_token_id")) {
        const auto& e = j["eos_token_id"];
        if (e.is_number_integer()) c.eosTokenIds = {e.get<std::int64_t>()};
        else c.eosTokenIds = top.intList("eos_token_id");
    }
    if (c.family == TargetFamily::Qwen2) c.attentionBias = true;  // Qwen2 always has q/k/v bias
    refuseUnimplemented(f, kUnimplementedInTargets);
    if (c.architecture == "MistralForCausalLM" && f.has("sliding_window"))  // HF Mistral always applies it
        throw Error("'" + path + "': '" + f.name("sliding_window") +
                    "' asks for sliding-window attention in a target, which draftscope does not implement");
    return c;
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
    if (d.body.architecture != "DFlashDraftModel" && !hasDflash)
        throw Error("'" + path + "' is not a DFlash drafter: expected architectures "
                    "[\"DFlashDraftModel\"] or a 'dflash_config' field, found architecture '" +
                    (d.body.architecture.empty() ? std::string("none") : d.body.architecture) + "'");
    d.body.family = TargetFamily::Qwen3;
    parseTransformer(top, d.body, /*intermediateOptional=*/false, /*drafter=*/true);
    d.body.weightPrefix = "";

    std::optional<Fields> dflash;
    if (hasDflash) {
        if (!j["dflash_config"].is_object()) top.wrong("dflash_config", "an object", j["dflash_config"]);
        dflash.emplace(j["dflash_config"], path, "dflash_config");
        refuseUnimplemented(*dflash, kUnimplementedEverywhere);
    }
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
