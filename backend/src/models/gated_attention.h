#pragma once
// Gated softmax attention of Qwen3.5 `full_attention` layers, as HF transformers 5.x
// `Qwen3_5Attention`: q_proj emits query and output gate interleaved per head
// ([head 0 query | head 0 gate | head 1 query | ...]), (1 + w) RMSNorm on q and k per head,
// partial rotary on the first rotary dims, output o_proj(attn * sigmoid(gate)).

#include "draftscope/model_config.h"
#include "models/layers.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

namespace draftscope {

struct TensorSpec;

/// One gated attention mixer (weights under `<layer>.self_attn.`).
class GatedAttention {
public:
    /// Loads the mixer's tensors under `prefix` (ending in "self_attn.").
    static GatedAttention load(const LoadTarget& lt, const std::string& prefix, const TransformerConfig& c);
    /// The checkpoint tensors under `prefix` and their shapes (q_proj is [2 * heads * D, H]).
    static void specs(std::vector<TensorSpec>& out, const std::string& prefix, const TransformerConfig& c);

    /// Mixes x ([T, H], already input-normed, compute dtype): rotates q and k with cos/sin
    /// ([T, rotary dims]), appends k/v to `cache` layer `layer` (the caller advances the
    /// cache), attends with `visible` (bool [T, cache + T], absent = all visible) and
    /// returns [T, H]. With `staticRows` (int64 [T] on the device: the static-shape verify
    /// step, TargetForwardRequest::staticShapes) k/v go to those rows of the cache's storage
    /// (KVCache::writeRows) and `visible` spans its whole capacity ([T, capacity]).
    at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, KVCache& cache,
                       std::size_t layer, const std::optional<at::Tensor>& visible,
                       const at::Tensor& staticRows = {}) const;

    /// The gated output before o_proj: attn [H, T, D] * sigmoid(gate [T, H, D]) as [T, H*D]
    /// (HF: attn_output * torch.sigmoid(gate), the sigmoid and the product rounded to the
    /// compute dtype). One fused CUDA kernel where kernels::sigmoidGate allows.
    static at::Tensor gatedHeads(const at::Tensor& attn, const at::Tensor& gate);

private:
    Linear q_, k_, v_, o_;
    RmsNorm qNorm_, kNorm_;
    std::int64_t hq_ = 0, hkv_ = 0, d_ = 0;
};

}  // namespace draftscope
