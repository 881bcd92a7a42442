#pragma once
// Tiny random Gemma 4 text checkpoints for the suites (tst_gemma4, tst_verify_graph): float32
// weights under HF modeling_gemma4.py's names and shapes, written here (no HF needed).

#include "draftscope/safetensors.h"
#include "test_support.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace testsupport::gemma4 {

using draftscope::SafetensorsWriter;

inline constexpr std::int64_t kV = 512, kH = 32, kLayers = 6, kHeads = 4, kD = 8, kGlobalD = 16, kI = 48, kWindow = 6;

/// Which Gemma 4 parts a tiny checkpoint has.
struct Variant {
    bool kEqV = false;          ///< attention_k_eq_v, 1 global kv head
    std::int64_t ple = 0;       ///< hidden_size_per_layer_input
    std::int64_t shared = 0;    ///< num_kv_shared_layers (with use_double_wide_mlp)
    bool moe = false;           ///< enable_moe_block: 4 experts top-2, width 16
    std::optional<double> softcap = 30.0;
};

inline const std::vector<std::string> kTypes = {"sliding_attention", "sliding_attention", "full_attention",
                                                "sliding_attention", "sliding_attention", "full_attention"};

inline nlohmann::json tinyConfig(const Variant& v) {
    nlohmann::json c = {
        {"architectures", {"Gemma4ForCausalLM"}}, {"model_type", "gemma4_text"},
        {"vocab_size", kV}, {"hidden_size", kH}, {"intermediate_size", kI}, {"num_hidden_layers", kLayers},
        {"num_attention_heads", kHeads}, {"num_key_value_heads", 2}, {"head_dim", kD}, {"global_head_dim", kGlobalD},
        {"max_position_embeddings", 512}, {"rms_norm_eps", 1e-6}, {"sliding_window", kWindow}, {"layer_types", kTypes},
        {"hidden_activation", "gelu_pytorch_tanh"}, {"tie_word_embeddings", true}, {"eos_token_id", 1},
        {"rope_parameters",
         {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
          {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}}}}},
        {"attention_k_eq_v", v.kEqV}, {"hidden_size_per_layer_input", v.ple}, {"num_kv_shared_layers", v.shared},
        {"use_double_wide_mlp", v.shared > 0}, {"enable_moe_block", v.moe}, {"dtype", "float32"}};
    if (v.kEqV) c["num_global_key_value_heads"] = 1;
    if (v.ple) c["vocab_size_per_layer_input"] = kV;
    if (v.moe) c.update({{"num_experts", 4}, {"top_k_experts", 2}, {"moe_intermediate_size", 16}});
    c["final_logit_softcapping"] = v.softcap ? nlohmann::json(*v.softcap) : nlohmann::json(nullptr);
    return c;
}

/// Writes a random Gemma4ForCausalLM (config.json + model.safetensors, float32) into `dir`;
/// tensor names under `prefix` ("model." text-only, "model.language_model." multimodal).
/// Returns the parameter count, by hand from the shapes written.
inline std::int64_t writeTinyGemma4(const std::string& dir, const Variant& v, std::uint32_t seed,
                                    const std::string& prefix = "model.") {
    std::filesystem::create_directories(dir);
    writeJson(dir + "/config.json", tinyConfig(v));
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    SafetensorsWriter w;
    std::int64_t params = 0;
    auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float mean, float scale, bool count = true) {
        std::int64_t n = 1;
        for (auto d : shape) n *= d;
        std::vector<float> x(static_cast<std::size_t>(n));
        for (auto& e : x) e = mean + normal(gen) * scale;
        w.addFloat32(name, shape, x);
        if (count) params += n;
    };
    auto norm = [&](const std::string& name, std::int64_t n) { add(name, {n}, 1.0f, 0.2f); };
    const float s = 1.0f / std::sqrt(static_cast<float>(kH));
    add(prefix + "embed_tokens.weight", {kV, kH}, 0, 0.5f);
    norm(prefix + "norm.weight", kH);
    if (v.ple) {
        add(prefix + "embed_tokens_per_layer.weight", {kV, kLayers * v.ple}, 0, 0.5f);
        add(prefix + "per_layer_model_projection.weight", {kLayers * v.ple, kH}, 0, s);
        norm(prefix + "per_layer_projection_norm.weight", v.ple);
    }
    for (std::int64_t l = 0; l < kLayers; ++l) {
        const auto lp = prefix + "layers." + std::to_string(l) + ".";
        const bool full = kTypes[static_cast<std::size_t>(l)] == "full_attention";
        const auto D = full ? kGlobalD : kD;
        const auto kv = full && v.kEqV ? 1 : 2;
        const bool shared = l >= kLayers - v.shared;
        for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                              "post_feedforward_layernorm"})
            norm(lp + n + ".weight", kH);
        add(lp + "self_attn.q_proj.weight", {kHeads * D, kH}, 0, s);
        add(lp + "self_attn.o_proj.weight", {kH, kHeads * D}, 0, 1.0f / std::sqrt(static_cast<float>(kHeads * D)));
        norm(lp + "self_attn.q_norm.weight", D);
        if (!shared) {
            add(lp + "self_attn.k_proj.weight", {kv * D, kH}, 0, s);
            if (!(full && v.kEqV)) add(lp + "self_attn.v_proj.weight", {kv * D, kH}, 0, s);
            norm(lp + "self_attn.k_norm.weight", D);
        }
        const auto I = shared ? 2 * kI : kI;
        add(lp + "mlp.gate_proj.weight", {I, kH}, 0, s);
        add(lp + "mlp.up_proj.weight", {I, kH}, 0, s);
        add(lp + "mlp.down_proj.weight", {kH, I}, 0, 1.0f / std::sqrt(static_cast<float>(I)));
        if (v.moe) {
            add(lp + "router.proj.weight", {4, kH}, 0, 1.0f);
            norm(lp + "router.scale", kH);
            norm(lp + "router.per_expert_scale", 4);
            add(lp + "experts.gate_up_proj", {4, 32, kH}, 0, s);
            add(lp + "experts.down_proj", {4, kH, 16}, 0, 0.25f);
            for (const char* n : {"post_feedforward_layernorm_1", "pre_feedforward_layernorm_2", "post_feedforward_layernorm_2"})
                norm(lp + n + ".weight", kH);
        }
        if (v.ple) {
            add(lp + "per_layer_input_gate.weight", {v.ple, kH}, 0, s);
            add(lp + "per_layer_projection.weight", {kH, v.ple}, 0, 1.0f / std::sqrt(static_cast<float>(v.ple)));
            norm(lp + "post_per_layer_input_norm.weight", kH);
        }
        add(lp + "layer_scalar", {1}, 1.0f, 0.2f);
    }
    w.write(dir + "/model.safetensors");
    return params;
}

/// Dense: values = keys on full layers, per-layer inputs of 4, the last 2 layers KV-shared.
inline const Variant kDense{true, 4, 2, false, 30.0};
/// MoE: the parallel expert block, no per-layer inputs, no sharing.
inline const Variant kMoe{false, 0, 0, true, 30.0};

}  // namespace testsupport::gemma4
