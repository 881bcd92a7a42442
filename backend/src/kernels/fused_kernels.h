#pragma once
// Launchers of draftscope's own CUDA kernels (fused_kernels.cu): the hot elementwise chains
// of a verify step, each one kernel instead of five to fifteen (issue 16, item 3). Plain
// C++: neither torch nor the CUDA headers, so the torch wrappers (fused_ops.h) compile with
// the host compiler. Built only with -DDRAFTSCOPE_CUDA_KERNELS=ON (tools/gpu-build.sh).
//
// Every kernel computes what the plain-op reference computes (models/*.cpp), with the same
// roundings to the storage dtype in the same places; only the order of the float32 sums
// inside a row's reduction differs (docs/ENGINE.md, "Fused kernels"). Pointers are device
// pointers; strides count elements; `stream` is a cudaStream_t. Each returns "" or the CUDA
// error's text.

#include <cstdint>
#include <string>

namespace draftscope::kernels {

/// Storage dtype of the activations and weights a kernel reads and writes.
enum class Dtype { BFloat16, Half };

/// A row-wise RMSNorm over an [A, B, D] view (strides sA, sB; the last dim contiguous),
/// optionally after a residual add (the row is x + residual, rounded to dtype, and that sum
/// is written to sumOut) or followed by the rotate-half rotary embedding of the first `rot`
/// dims (not both).
struct NormLaunch {
    Dtype dtype;
    const void* x;                 ///< [A, B, D] at x + a*sA + b*sB
    std::int64_t A, B, D, sA, sB;
    const void* weight;            ///< [D]
    float eps;
    bool zeroCentered;             ///< HF Qwen3_5RMSNorm (1 + w, one rounding) vs Qwen3RMSNorm
    const void* cos = nullptr;     ///< [A, rot] (A = tokens) or null: no rotary
    const void* sin = nullptr;
    std::int64_t rot = 0;
    bool headsFirst = false;       ///< output [B, A, D] (attention heads) instead of [A, B, D]
    void* out;                     ///< contiguous
    const void* residual = nullptr;  ///< [A, B, D] at residual + a*rA + b*rB, or null
    std::int64_t rA = 0, rB = 0;
    void* sumOut = nullptr;          ///< contiguous [A, B, D]: x + residual (with residual)
};
std::string launchNorm(const NormLaunch& p, void* stream);

/// HF Qwen3_5RMSNormGated over rows: out = (w * norm(x).to(dtype) * silu(z.float())).to(dtype).
/// x, z: [rows, D] with row strides; out contiguous [rows, D].
std::string launchGatedNorm(Dtype dtype, const void* x, std::int64_t xStride, const void* z, std::int64_t zStride,
                            const void* weight, std::int64_t rows, std::int64_t D, float eps, void* out,
                            void* stream);

/// Gated DeltaNet gates: g = -exp(A_log) * softplus(a + dt_bias) (float32) and
/// beta = sigmoid(b) (dtype), a/b: [T, H] with row strides, A_log/dt_bias: [H] in dtype;
/// g, beta: contiguous [T, H].
std::string launchDeltaNetGates(Dtype dtype, const void* a, std::int64_t aStride, const void* b,
                                std::int64_t bStride, const void* aLog, const void* dtBias, std::int64_t T,
                                std::int64_t H, float* g, void* beta, void* stream);

/// Gated attention output: out[t, h*D + j] = attn[h, t, j] * sigmoid(gate[t, h, j]), each
/// product and the sigmoid rounded to dtype. attn strides (sH, sT), gate strides (gT, gH);
/// out contiguous [T, H*D].
std::string launchSigmoidGate(Dtype dtype, const void* attn, std::int64_t sH, std::int64_t sT, const void* gate,
                              std::int64_t gT, std::int64_t gH, std::int64_t H, std::int64_t T, std::int64_t D,
                              void* out, void* stream);

}  // namespace draftscope::kernels
