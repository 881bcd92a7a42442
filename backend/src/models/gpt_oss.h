#pragma once
// The parts of gpt-oss targets that no other family has (HF transformers
// models/gpt_oss/modeling_gpt_oss.py, 5.17): attention with per-head sinks and the MoE block
// with its biased top-k router and clamped, biased experts, stored in bf16 or packed as MXFP4
// (integrations/mxfp4.py). The decoder layer around them is TargetModel's. Activations are
// 2-D [T, H]; attention heads [heads, T, D].

#include "draftscope/model_config.h"
#include "models/layers.h"
#include "models/moe_mlp.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

namespace draftscope {

struct TensorSpec;

/// Eager attention with sinks (HF `eager_attention_forward` of gpt-oss): logits q k^T * scale,
/// masked by `visible` (bool [T, S], true = may attend; absent = all), joined by the head's
/// sink logit as one more column, the row's maximum subtracted, softmax, the sink column
/// dropped, then times v. So the probabilities of a row sum to less than 1 by what the sink
/// took. q: [Hq, T, D]; k, v: [Hkv, S, D] (Hq a multiple of Hkv, head h reads kv head
/// h / (Hq / Hkv)); sinks: [Hq]. Logits and softmax in float32 (HF's eager code keeps the
/// compute dtype; its fused kernels, like this, accumulate in float32); returns [Hq, T, D] in
/// q's dtype. Long prefills run in chunks of query rows (same values, bounded memory).
at::Tensor sinkAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& visible, double scale, const at::Tensor& sinks);

/// gpt-oss's MoE block (HF `GptOssMLP`) under `<layer>.mlp.`: router `router.weight` [E, H]
/// and `router.bias` [E]; experts `experts.gate_up_proj` [E, H, 2I] and `experts.down_proj`
/// [E, I, H] (HF's parameter layout, ExpertLayout::Fused) or their MXFP4 packing
/// `*_blocks` / `*_scales` ([E, 2I, H/32, 16] / [E, 2I, H/32] and [E, H, I/32, 16] /
/// [E, H, I/32], ExpertLayout::Mxfp4), plus `experts.gate_up_proj_bias` [E, 2I] and
/// `experts.down_proj_bias` [E, H]. Packed experts stay packed on the device (4.25 bits per
/// weight) and are dequantised per forward, one expert at a time, only for the experts
/// the tokens chose (docs/ENGINE.md, "gpt-oss").
class GptOssMoe {
public:
    /// Loads the block under `prefix` (ending in "mlp."). Packed blocks and scales are checked
    /// once here (checkMxfp4: shapes, E8M0 NaN, overflow of the compute dtype); throws Error
    /// naming the tensor.
    /// With `unpack`, packed experts are dequantised here into HF's parameter layout in the
    /// compute dtype (one expert at a time), as if the checkpoint held them so.
    static GptOssMoe load(const LoadTarget& lt, const std::string& prefix, const TransformerConfig& config,
                          ExpertLayout layout, bool unpack = false);
    /// The checkpoint tensors under `prefix` for `layout` (Fused or Mxfp4).
    static void specs(std::vector<TensorSpec>& out, const std::string& prefix, const TransformerConfig& config,
                      ExpertLayout layout);

    /// x: [T, H] (post-attention-normed, compute dtype) -> [T, H] in x's dtype.
    /// Router: logits = x W_r^T + b_r in x's dtype; the top k logits (ties as torch.topk) are
    /// softmaxed in x's dtype. Experts, in ascending index, each over its tokens
    /// (position-major, as HF's torch.where): gu = x W_gu + b_gu; gate = gu[..., 0::2]
    /// clamped above at 7, up = gu[..., 1::2] clamped to [-7, 7]; y = ((up + 1) * gate *
    /// sigmoid(1.702 gate)) W_down + b_down, times the token's routing weight, index-added
    /// into a zero output. `chosen`, if given, receives the experts chosen (int64 [T, k]).
    at::Tensor operator()(const at::Tensor& x, at::Tensor* chosen = nullptr) const;

    bool packed() const { return gateUpBlocks_.defined(); }

private:
    /// Expert e's weights in HF's orientation: gate_up [H, 2I] and down [I, H], compute dtype.
    std::pair<at::Tensor, at::Tensor> expert(std::int64_t e) const;

    Linear router_;
    at::Tensor gateUp_, down_;                  ///< bf16 storage: [E, H, 2I], [E, I, H]
    at::Tensor gateUpBlocks_, gateUpScales_;    ///< MXFP4 storage: [E, 2I, H/32, 16], [E, 2I, H/32]
    at::Tensor downBlocks_, downScales_;        ///< [E, H, I/32, 16], [E, H, I/32]
    at::Tensor gateUpBias_, downBias_;          ///< [E, 2I], [E, H]
    at::Tensor decodeTable_;                    ///< mxfp4PairTable on the experts' device
    std::int64_t topK_ = 0;
    at::ScalarType dtype_ = at::kFloat;
};

}  // namespace draftscope
