#pragma once
// The parts of Gemma 4 text targets that no other family has (HF transformers
// models/gemma4/modeling_gemma4.py, 5.17: Gemma4TextDecoderLayer, Gemma4TextAttention,
// Gemma4TextRouter, Gemma4TextExperts and Gemma4TextModel's per-layer inputs). The model
// around them (embedding scale, placement, taps, logit soft-capping) is TargetModel's.
// Activations are 2-D [T, H]; attention heads [heads, T, D].

#include "draftscope/model_config.h"
#include "models/layers.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace draftscope {

class KVCache;
struct TensorSpec;

/// Gemma4RMSNorm under `name` (a weight [D] applied in float32, HF's with_scale=True), as an
/// RmsNorm (RmsNorm::powHalf): loaded in the compute dtype, then held in float32 as HF's
/// `self.weight.float()` reads it.
RmsNorm gemma4Norm(const LoadTarget& lt, const std::string& name, double eps);
/// Gemma4RMSNorm with with_scale=False (the v norm and the router's norm): no weight.
RmsNorm gemma4PlainNorm(double eps);

/// Gemma 4's routed experts beside the dense MLP (HF Gemma4TextRouter + Gemma4TextExperts,
/// eager loop), with the decoder layer's pre_feedforward_layernorm_2 and
/// post_feedforward_layernorm_2 around the experts. Tensors under `<layer>.`:
/// `router.proj.weight` [E, H], `router.scale` [H], `router.per_expert_scale` [E],
/// `experts.gate_up_proj` [E, 2I, H] (rows 0..I-1 gate), `experts.down_proj` [E, H, I].
class Gemma4Moe {
public:
    static Gemma4Moe load(const LoadTarget& lt, const std::string& layerPrefix, const TransformerConfig& config);
    static void specs(std::vector<TensorSpec>& out, const std::string& layerPrefix, const TransformerConfig& config);

    /// residual: the layer's stream before pre_feedforward_layernorm, [T, H] in the compute
    /// dtype -> post_feedforward_layernorm_2(experts(pre_feedforward_layernorm_2(residual))).
    /// Router, in the compute dtype: r = plainnorm(residual) * scale * H^-0.5; probabilities
    /// softmax(r W_p^T); the top k (ties as torch.topk), divided by their sum, times
    /// per_expert_scale of the chosen expert. Experts in ascending index over their tokens:
    /// (gelu_tanh(x W_g^T) * x W_u^T) W_d^T times the token's weight, index-added into zeros.
    /// `chosen`, if given, receives the experts chosen (int64 [T, k]).
    at::Tensor operator()(const at::Tensor& residual, at::Tensor* chosen = nullptr) const;

private:
    RmsNorm preNorm_, postNorm_, routerNorm_;
    at::Tensor routerProj_, routerScale_, perExpertScale_;  ///< [E, H], [H], [E]
    at::Tensor gateUp_, down_;                              ///< [E, 2I, H], [E, H, I]
    std::int64_t topK_ = 0;
    double rootSize_ = 1.0;  ///< H^-0.5
};

/// What one Gemma 4 layer reads besides its input (TargetModel::forward builds it per layer).
struct Gemma4LayerInputs {
    const at::Tensor& cos;  ///< [T, D] of the layer's type (its rotary schedule)
    const at::Tensor& sin;
    const std::optional<at::Tensor>& visible;  ///< the layer type's visibility [T, S] (absent: all)
    const at::Tensor& perLayerInput;           ///< [T, P] (undefined without per-layer inputs)
    const at::Tensor& positions;               ///< int64 [T]: the KV rows written with static shapes
    bool staticShapes = false;
};

/// One Gemma 4 decoder layer (HF Gemma4TextDecoderLayer and its Gemma4TextAttention).
class Gemma4Layer {
public:
    /// Loads layer `layer` under `layerPrefix` ("model.layers.3."). Throws Error (via the
    /// loader) for missing or mis-shaped tensors.
    static Gemma4Layer load(const LoadTarget& lt, const std::string& layerPrefix, const TransformerConfig& config,
                            std::int64_t layer);
    /// The checkpoint tensors of layer `layer`: no k/v projections or norms on KV-shared
    /// layers, no v_proj on full layers with attention_k_eq_v.
    static void specs(std::vector<TensorSpec>& out, const std::string& layerPrefix, const TransformerConfig& config,
                      std::int64_t layer);

    /// x [T, H] -> the layer's output [T, H]:
    ///   a = o(attention(q_norm(q x) roped, keys, values; scale 1)); x += post_attention_norm(a)
    ///   m = mlp(pre_ff_norm(x)) [+ moe: post_ff_norm_1(m) + Gemma4Moe(x)]; x += post_ff_norm(m)
    ///   per-layer input: x += post_per_layer_norm(proj(gelu_tanh(gate(x)) * input))
    ///   x *= layer_scalar
    /// Keys k_norm(k x) roped, values v_norm(v x) (k x itself with attention_k_eq_v), appended
    /// to `cache` (or written at `positions` with static shapes); a KV-shared layer uses
    /// `kv[kvSourceLayer]` instead and writes nothing. `kv[layer]` receives the keys and
    /// values this layer attended with (cached rows and new). `chosen`: the MoE's experts.
    at::Tensor forward(const at::Tensor& x, const Gemma4LayerInputs& in, KVCache& cache, std::int64_t layer,
                       std::vector<std::pair<at::Tensor, at::Tensor>>& kv, at::Tensor* chosen = nullptr) const;

private:
    RmsNorm inputNorm_, postAttnNorm_, preFfNorm_, postFfNorm_;
    RmsNorm qNorm_, kNorm_, vNorm_;
    Linear q_, k_, v_, o_;  ///< k_/v_ undefined on KV-shared layers; v_ with attention_k_eq_v
    Linear gate_, up_, down_;
    std::optional<Gemma4Moe> moe_;
    RmsNorm postFfNorm1_;  ///< post_feedforward_layernorm_1 (MoE layers)
    Linear pleGate_, pleProjection_;
    RmsNorm plePostNorm_;
    at::Tensor layerScalar_;  ///< [1], compute dtype
    std::int64_t heads_ = 0, kvHeads_ = 0, headDim_ = 0, kvSource_ = -1;
};

/// Gemma 4's per-layer inputs (HF Gemma4TextModel.get_per_layer_inputs +
/// project_per_layer_inputs): `embed_tokens_per_layer.weight` [Vp, L*P] (rows x sqrt(P) in
/// the compute dtype), `per_layer_model_projection.weight` [L*P, H], `per_layer_projection_norm.weight` [P].
class Gemma4PerLayerInputs {
public:
    static Gemma4PerLayerInputs load(const LoadTarget& lt, const TransformerConfig& config);
    static void specs(std::vector<TensorSpec>& out, const TransformerConfig& config);
    /// ids int64 [T], scaledEmbeddings [T, H] (the embedding output the layers start from) ->
    /// [T, L, P]: (norm((e W^T) * H^-0.5) + table[ids] * sqrt(P)) * 2^-0.5. Throws Error for an
    /// id outside the per-layer vocabulary.
    at::Tensor operator()(const at::Tensor& ids, const at::Tensor& scaledEmbeddings) const;

private:
    at::Tensor table_, projection_;
    RmsNorm norm_;
    std::int64_t layers_ = 0, size_ = 0, hidden_ = 0;
};

}  // namespace draftscope
