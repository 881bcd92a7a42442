#pragma once
// The fused CUDA kernels (fused_kernels.h) as torch operations for the model code. Each
// returns std::nullopt unless the kernels were built (-DDRAFTSCOPE_CUDA_KERNELS=ON, the GPU
// build) and compat::fastKernels holds for its input (bf16/fp16 on CUDA, not switched off by
// DRAFTSCOPE_EXACT_KERNELS=1), DRAFTSCOPE_FUSED_KERNELS is not 0 (that turns off these
// kernels alone), and the layout and dtypes are ones the kernels take; the caller then runs
// the plain-op reference, which stays the definition of the math (tests/gpu/
// check_fused_kernels compares the two on the GPU machine; docs/ENGINE.md "Fused kernels").
// Results are new contiguous tensors; the kernels run on the current CUDA stream of the
// input's device (graph capture included). Errors: a failed launch throws draftscope::Error
// naming the kernel and the CUDA error.

#include <ATen/ATen.h>

#include <optional>
#include <utility>

namespace draftscope::kernels {

/// True when the kernels are compiled into this build.
bool built();

/// RMSNorm of x [..., D] (HF Qwen3RMSNorm, or Qwen3_5RMSNorm with `zeroCentered`): the
/// shape of x, contiguous. RmsNorm::operator() (models/layers.h) is the reference.
std::optional<at::Tensor> rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps, bool zeroCentered);

/// The residual add and the RMSNorm after it: {x + delta, norm(x + delta)}, both of x's
/// shape (x, delta [..., D] of one shape). RmsNorm::addNorm is the reference.
std::optional<std::pair<at::Tensor, at::Tensor>> addRmsNorm(const at::Tensor& x, const at::Tensor& delta,
                                                            const at::Tensor& weight, double eps, bool zeroCentered);

/// Per-head RMSNorm of x [T, H, D] then the rotary embedding of the first rot dims with
/// cos/sin [T, rot], as attention heads [H, T, D]. RmsNorm::normRotary is the reference.
std::optional<at::Tensor> rmsNormRotary(const at::Tensor& x, const at::Tensor& weight, double eps,
                                        bool zeroCentered, const at::Tensor& cos, const at::Tensor& sin);

/// HF Qwen3_5RMSNormGated of x, gate [N, D]: [N, D]. GatedRmsNorm (gated_deltanet.h) is the reference.
std::optional<at::Tensor> gatedRmsNorm(const at::Tensor& x, const at::Tensor& gate, const at::Tensor& weight,
                                       double eps);

/// Gated DeltaNet gates from a, b [T, H]: {g float32 [T, H], beta [T, H] in b's dtype}.
/// GatedDeltaNet::gates is the reference.
std::optional<std::pair<at::Tensor, at::Tensor>> deltaNetGates(const at::Tensor& a, const at::Tensor& b,
                                                               const at::Tensor& aLog, const at::Tensor& dtBias);

/// Gated attention output attn [H, T, D] * sigmoid(gate [T, H, D]) as [T, H*D].
/// GatedAttention::gatedHeads is the reference.
std::optional<at::Tensor> sigmoidGate(const at::Tensor& attn, const at::Tensor& gate);

}  // namespace draftscope::kernels
