#pragma once
// Sparse mixture-of-experts MLP of Qwen3-MoE, Qwen3-Next and Qwen3.5-MoE targets, as HF
// transformers 5.x `Qwen3MoeSparseMoeBlock` / `Qwen2MoeSparseMoeBlock` (Qwen3-Next) /
// `Qwen3_5MoeSparseMoeBlock` with their `*TopKRouter` and eager `*Experts` loop.
// Activations are 2-D [T, H].

#include "draftscope/model_config.h"
#include "models/layers.h"

#include <ATen/ATen.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace draftscope {

struct TensorSpec;

/// How a checkpoint stores a sparse layer's experts.
enum class ExpertLayout {
    /// `mlp.experts.{e}.{gate,up,down}_proj.weight`: [I, H], [I, H], [H, I] per expert
    /// (what HF 5.x `save_pretrained` writes and the released Qwen3-MoE / Qwen3-Next use).
    PerExpert,
    /// `mlp.experts.gate_up_proj` [E, 2I, H] (rows 0..I-1 gate, I..2I-1 up: HF conversion
    /// `MergeModulelist(dim=0)` + `Concatenate(dim=1)`) and `mlp.experts.down_proj` [E, H, I]
    /// (the in-memory layout of HF 5.x `*Experts`).
    Fused,
    /// `mlp.experts.{gate_up,down}_proj_blocks` / `_scales`: MXFP4-packed experts (gpt-oss
    /// only, models/gpt_oss.h; for gpt-oss, Fused means HF's GptOss parameter layout).
    Mxfp4,
};

/// The expert layout of checkpoint `weights` for a target whose language-model tensors
/// start with `weightPrefix`: Mxfp4 if any `<prefix>layers.*.mlp.experts.gate_up_proj_blocks`
/// exists, else Fused if any `<prefix>layers.*.mlp.experts.gate_up_proj`, else PerExpert.
ExpertLayout detectExpertLayout(const std::vector<std::string>& tensorNames, const std::string& weightPrefix);

/// HF's eager `*Experts` dispatch, shared by every MoE block: for each expert chosen by some
/// token (`chosen` int64 [T, k]), in ascending index, calls visit(e, token, position) with the
/// tokens that chose it and the top-k slot each chose it in (int64 [n], position-major, as
/// HF's `torch.where(expert_mask[e])`). One host synchronisation for the hit experts and one
/// per expert for its tokens.
void forEachChosenExpert(const at::Tensor& chosen, std::int64_t numExperts,
                         const std::function<void(std::int64_t, const at::Tensor&, const at::Tensor&)>& visit);

/// One sparse MoE MLP (weights under `<layer>.mlp.`): router `gate.weight` [E, H], E SwiGLU
/// experts of width `moe_intermediate_size`, and for Qwen3-Next / Qwen3.5-MoE a shared
/// SwiGLU expert (`shared_expert.*`, width `shared_expert_intermediate_size`) scaled by
/// sigmoid(`shared_expert_gate.weight` [1, H] x).
class SparseMoeMlp {
public:
    /// Loads the block under `prefix` (ending in "mlp.") in `layout`. Fused expert tensors
    /// are kept whole; each expert's gate/up/down are views into them.
    static SparseMoeMlp load(const LoadTarget& lt, const std::string& prefix, const MoeConfig& moe,
                             ExpertLayout layout);
    /// The checkpoint tensors under `prefix` and their shapes for `layout`.
    static void specs(std::vector<TensorSpec>& out, const std::string& prefix, std::int64_t hidden,
                      const MoeConfig& moe, ExpertLayout layout);

    /// x: [T, H] (post-attention-normed, compute dtype) -> [T, H] in x's dtype.
    /// Router (HF *TopKRouter): logits = x W_r^T in x's dtype; probabilities = softmax in
    /// float32; top-k by probability (ties as torch.topk); if normTopkProb the k weights
    /// are divided by their sum; the weights stay float32. Experts (HF *Experts eager loop):
    /// for each selected expert in ascending index, down(silu(gate(x_t)) * up(x_t)) of its
    /// tokens is multiplied by the float32 weight, cast to x's dtype and index-added into a
    /// zero output (so each token sums its k contributions in ascending expert order).
    /// Shared expert, if any: output += sigmoid(shared_expert_gate(x)) * shared_expert(x).
    /// `chosen`, if given, receives the experts chosen (int64 [T, k], by descending weight).
    at::Tensor operator()(const at::Tensor& x, at::Tensor* chosen = nullptr) const;

private:
    Linear router_;
    std::vector<SwiGluMlp> experts_;
    std::optional<SwiGluMlp> shared_;
    Linear sharedGate_;
    std::int64_t topK_ = 0;
    bool normTopk_ = false;
};

}  // namespace draftscope
