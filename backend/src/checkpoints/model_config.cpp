// The config parts every model shares (backend/src/checkpoints/config_fields.h): config.json
// reading, the transformer fields, rotary settings and YaRN parameters. The target and the
// drafter configs are read in target_config.cpp and drafter_config.cpp.

#include "draftscope/model_config.h"

#include "checkpoints/config_fields.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

namespace draftscope {

namespace config {

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
        throw Error("'" + pathOut + "' is not valid JSON: " + escapeNonPrintable(e.what()));
    }
}

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

bool ropeKeyGiven(const Fields& f, const char* key) {
    if (f.has(key)) return true;
    for (const char* group : {"rope_parameters", "rope_scaling"})
        if (f.has(group) && f.raw(group).is_object() && f.raw(group).contains(key) && !f.raw(group)[key].is_null())
            return true;
    return false;
}

void parseTransformer(const Fields& f, TransformerConfig& c, bool intermediateOptional,
                      bool drafter) {
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
    if (const auto rot = static_cast<std::int64_t>(static_cast<double>(c.headDim) * c.rope.partialRotaryFactor); rot % 2)
        throw Error("'" + f.path() + "': head_dim " + std::to_string(c.headDim) + " x partial_rotary_factor " +
                    std::to_string(c.rope.partialRotaryFactor) + " gives a rotary dimension of " + std::to_string(rot) +
                    ", which is odd; rotary embeddings rotate pairs of dimensions, so it must be even");
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
    } else if (c.family == TargetFamily::GptOss) {
        // HF GptOssConfig: even layers (0, 2, ...) slide, odd layers see everything.
        for (std::int64_t i = 0; i < c.numLayers; ++i)
            c.layerTypes.push_back((i + 1) % 2 ? "sliding_attention" : "full_attention");
    } else if (c.family == TargetFamily::Gemma4) {
        // HF Gemma4TextConfig: five sliding layers, then one full (parseGemma4 sets them).
        for (std::int64_t i = 0; i < c.numLayers; ++i)
            c.layerTypes.push_back((i + 1) % 6 ? "sliding_attention" : "full_attention");
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
        const bool slides = c.family == TargetFamily::GptOss || c.family == TargetFamily::Gemma4;
        if (t == "sliding_attention" && (drafter || slides)) continue;
        if (t == "linear_attention" && c.family == TargetFamily::Qwen3_5) continue;
        throw Error("'" + f.path() + "': layer type '" + t + "' is not supported " +
                    (c.family == TargetFamily::Qwen3_5
                         ? std::string("(Qwen3.5 layers are full_attention or linear_attention)")
                         : drafter || c.family == TargetFamily::GptOss || c.family == TargetFamily::Gemma4
                               ? std::string(drafter ? "in a drafter" : "in a " + std::string(targetFamilyName(c.family)) + " target") +
                                     " (layer_types entries must be full_attention or sliding_attention)"
                                   : std::string("for this architecture (only full_attention layers; linear_attention "
                                                 "needs a Qwen3_5 architecture)")));
    }
    if (c.family == TargetFamily::Qwen3_5) {
        // HF Qwen3_5TextConfig defaults when the config does not say: rope_theta 1e7 and
        // partial_rotary_factor 0.25 (Qwen3NextConfig: rope_theta 10000, partial 0.25).
        if (!ropeKeyGiven(f, "rope_theta")) c.rope.theta = c.linearAttention.fusedProjections ? 10000.0 : 1e7;
        if (!ropeKeyGiven(f, "partial_rotary_factor")) c.rope.partialRotaryFactor = 0.25;
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

}  // namespace config

const char* targetFamilyName(TargetFamily family) {
    switch (family) {
        case TargetFamily::Qwen3: return "Qwen3";
        case TargetFamily::Qwen2: return "Qwen2";
        case TargetFamily::Llama: return "Llama";
        case TargetFamily::Qwen3_5: return "Qwen3_5";
        case TargetFamily::GptOss: return "GptOss";
        case TargetFamily::Gemma4: return "Gemma4";
    }
    return "?";
}

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

}  // namespace draftscope
