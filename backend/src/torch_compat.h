#pragma once
// The one place that knows which libtorch it is built against (Debian's 1.13 CPU build or
// a CUDA libtorch 2.x). Every API difference between the two is guarded here.

#include <ATen/ATen.h>

#include <optional>
#include <string>

namespace draftscope::compat {

/// Multi-head attention over already-rotated heads.
/// q: [Hq, Tq, D], k and v: [Hkv, Tk, D] with Hq a multiple of Hkv (GQA: query head h reads
/// kv head h / (Hq/Hkv), as HF's repeat_kv). `visible`: optional bool [Tq, Tk], true where the
/// query may attend; absent means every key is visible. Softmax in float32, as HF eager
/// attention; on libtorch 2.x CUDA it uses at::scaled_dot_product_attention (flash or
/// memory-efficient kernels). Returns [Hq, Tq, D] in q's dtype.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const std::optional<at::Tensor>& visible, double scale);

/// Same as attention() but always the explicit path, also returning the attention
/// probabilities [Hq, Tq, Tk] (float32) for the attention-weights view.
at::Tensor attentionWithWeights(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const std::optional<at::Tensor>& visible, double scale,
                                at::Tensor& weightsOut);

/// Parses "cpu", "cuda" or "cuda:N"; throws Error if CUDA is requested but unavailable.
at::Device parseDevice(const std::string& name);
/// Parses "float32" / "bfloat16" (also "fp32", "bf16", "float16"); throws Error otherwise.
at::ScalarType parseDtype(const std::string& name);
/// Sets the intra-op thread count (0 = all hardware threads). libtorch defaults to 1 here.
void configureThreads(int threads);
/// "libtorch 1.13.0 (CPU)" style description for logs and result files.
std::string libtorchDescription();

}  // namespace draftscope::compat
