// draftscope's CUDA kernels: see fused_kernels.h. Each reproduces the plain-op reference
// (models/layers.cpp RmsNorm and RotaryEmbedding::apply, models/gated_deltanet.cpp
// GatedRmsNorm and the gates, models/gated_attention.cpp) op by op: float32 arithmetic, a
// rounding to the storage dtype wherever the reference stores a bf16/fp16 tensor.

#include "kernels/fused_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace draftscope::kernels {
namespace {

__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T fromFloat(float v);
template <> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half fromFloat<__half>(float v) { return __float2half_rn(v); }
/// v rounded to T and back: what storing a float result in a T tensor does.
template <typename T> __device__ __forceinline__ float rounded(float v) { return toFloat(fromFloat<T>(v)); }

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
__device__ float blockSum(float v) {
    __shared__ float partial[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    const int warps = blockDim.x / 32;
    v = lane < warps ? partial[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();  // partial[] is reused by the next call
    return v;
}

/// torch's mean(-1) in float32: the sum times float(1/D), rounded; + eps, rounded (no fused
/// multiply-add: the reference rounds the mean into a tensor); CUDA's rsqrtf, as at::rsqrt.
__device__ __forceinline__ float invRms(float sumSquares, long long D, float eps) {
    return rsqrtf(__fadd_rn(__fmul_rn(sumSquares, 1.0f / static_cast<float>(D)), eps));
}
/// One term of the sum of squares: xf.pow(2) is a rounded float32 tensor in the reference.
__device__ __forceinline__ float square(float v) { return __fmul_rn(v, v); }

template <typename T>
__global__ void __launch_bounds__(1024) normKernel(NormLaunch p) {
    extern __shared__ float row[];  // [D]: the normalised row in T, as float
    const long long r = blockIdx.x;
    const long long a = r / p.B, b = r % p.B;
    const T* x = static_cast<const T*>(p.x) + a * p.sA + b * p.sB;
    const T* w = static_cast<const T*>(p.weight);
    const T* res = p.residual ? static_cast<const T*>(p.residual) + a * p.rA + b * p.rB : nullptr;
    T* sum = p.residual ? static_cast<T*>(p.sumOut) + r * p.D : nullptr;
    float ss = 0.0f;
    for (long long j = threadIdx.x; j < p.D; j += blockDim.x) {
        float v = toFloat(x[j]);
        if (res) {  // x = x + residual, stored in T
            const T s = fromFloat<T>(v + toFloat(res[j]));
            sum[j] = s;
            v = toFloat(s);
        }
        row[j] = v;
        ss += square(v);  // xf.pow(2)
    }
    const float inv = invRms(blockSum(ss), p.D, p.eps);
    for (long long j = threadIdx.x; j < p.D; j += blockDim.x) {
        const float n = row[j] * inv;
        // Qwen3_5RMSNorm: (xf * r * (1 + w.float())).to(dtype); Qwen3RMSNorm: w * (xf * r).to(dtype)
        row[j] = p.zeroCentered ? rounded<T>(n * (1.0f + toFloat(w[j]))) : rounded<T>(toFloat(w[j]) * rounded<T>(n));
    }
    T* out = static_cast<T*>(p.out) + (p.headsFirst ? (b * p.A + a) : r) * p.D;
    if (p.rot == 0) {
        for (long long j = threadIdx.x; j < p.D; j += blockDim.x) out[j] = fromFloat<T>(row[j]);
        return;
    }
    __syncthreads();  // the rotation reads other threads' elements
    const T* cs = static_cast<const T*>(p.cos) + a * p.rot;
    const T* sn = static_cast<const T*>(p.sin) + a * p.rot;
    const long long halfRot = p.rot / 2;
    for (long long j = threadIdx.x; j < p.D; j += blockDim.x) {
        if (j >= p.rot) {
            out[j] = fromFloat<T>(row[j]);
            continue;
        }
        // x * cos + cat(-x2, x1) * sin, each product and the sum stored in T.
        const float partner = j < halfRot ? -row[j + halfRot] : row[j - halfRot];
        const float c = rounded<T>(row[j] * toFloat(cs[j]));
        const float s = rounded<T>(partner * toFloat(sn[j]));
        out[j] = fromFloat<T>(c + s);
    }
}

template <typename T>
__global__ void __launch_bounds__(1024) gatedNormKernel(const T* x, long long xStride, const T* z, long long zStride, const T* w,
                                long long D, float eps, T* out) {
    const long long r = blockIdx.x;
    x += r * xStride;
    z += r * zStride;
    out += r * D;
    float ss = 0.0f;
    for (long long j = threadIdx.x; j < D; j += blockDim.x) {
        ss += square(toFloat(x[j]));
    }
    const float inv = invRms(blockSum(ss), D, eps);
    for (long long j = threadIdx.x; j < D; j += blockDim.x) {
        const float h = rounded<T>(toFloat(w[j]) * rounded<T>(toFloat(x[j]) * inv));  // weight * norm.to(dtype)
        const float g = toFloat(z[j]);
        out[j] = fromFloat<T>(h * (g / (1.0f + expf(-g))));  // * silu(gate.float()), then .to(dtype)
    }
}

template <typename T>
__global__ void gatesKernel(const T* a, long long aStride, const T* b, long long bStride, const T* aLog,
                            const T* dtBias, long long T_, long long H, float* g, T* beta) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i >= T_ * H) return;
    const long long t = i / H, h = i % H;
    const float bv = toFloat(b[t * bStride + h]);
    beta[i] = fromFloat<T>(1.0f / (1.0f + expf(-bv)));
    const float x = toFloat(a[t * aStride + h]) + toFloat(dtBias[h]);
    const float softplus = x > 20.0f ? x : log1pf(expf(x));  // torch softplus, beta 1, threshold 20
    g[i] = -expf(toFloat(aLog[h])) * softplus;
}

template <typename T>
__global__ void __launch_bounds__(1024) sigmoidGateKernel(const T* attn, long long sH, long long sT, const T* gate, long long gT,
                                  long long gH, long long H, long long D, T* out) {
    const long long r = blockIdx.x;  // t * H + h
    const long long t = r / H, h = r % H;
    const T* in = attn + h * sH + t * sT;
    const T* gt = gate + t * gT + h * gH;
    out += r * D;
    for (long long j = threadIdx.x; j < D; j += blockDim.x) {
        const float gv = toFloat(gt[j]);
        out[j] = fromFloat<T>(toFloat(in[j]) * rounded<T>(1.0f / (1.0f + expf(-gv))));
    }
}

/// Threads per row: by the row's width, then doubled (up to 1024, keeping at least 4 elements
/// per thread) while the launch has fewer than 32768 threads in all: a verify step normalises
/// 16 rows of 5120, where 16 blocks of 256 threads left each thread a long serial loop. (So
/// the float32 summation order of a row's norm, and rarely its last bf16 bit, can depend on
/// how many rows the launch has: prefill and verify may round one row differently.)
int threadsFor(long long D, long long rows) {
    int threads = D >= 2048 ? 256 : D >= 256 ? 128 : 64;
    while (threads < 1024 && rows * threads < 32768 && D / (2 * threads) >= 4) threads *= 2;
    return threads;
}
// The wrappers (fused_ops.cpp) decline more rows than a grid holds (kMaxRows).

std::string status() {
    const auto e = cudaGetLastError();
    return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e));
}

}  // namespace

std::string launchNorm(const NormLaunch& p, void* stream) {
    const auto rows = p.A * p.B;
    if (rows == 0) return {};
    const auto s = static_cast<cudaStream_t>(stream);
    const auto smem = static_cast<size_t>(p.D) * sizeof(float);
    if (p.dtype == Dtype::BFloat16)
        normKernel<__nv_bfloat16><<<static_cast<unsigned>(rows), threadsFor(p.D, rows), smem, s>>>(p);
    else
        normKernel<__half><<<static_cast<unsigned>(rows), threadsFor(p.D, rows), smem, s>>>(p);
    return status();
}

std::string launchGatedNorm(Dtype dtype, const void* x, std::int64_t xStride, const void* z, std::int64_t zStride,
                            const void* weight, std::int64_t rows, std::int64_t D, float eps, void* out,
                            void* stream) {
    if (rows == 0) return {};
    const auto s = static_cast<cudaStream_t>(stream);
    const auto grid = static_cast<unsigned>(rows);
    if (dtype == Dtype::BFloat16) {
        using T = __nv_bfloat16;
        gatedNormKernel<T><<<grid, threadsFor(D, rows), 0, s>>>(static_cast<const T*>(x), xStride, static_cast<const T*>(z),
                                                          zStride, static_cast<const T*>(weight), D, eps,
                                                          static_cast<T*>(out));
    } else {
        using T = __half;
        gatedNormKernel<T><<<grid, threadsFor(D, rows), 0, s>>>(static_cast<const T*>(x), xStride, static_cast<const T*>(z),
                                                          zStride, static_cast<const T*>(weight), D, eps,
                                                          static_cast<T*>(out));
    }
    return status();
}

std::string launchDeltaNetGates(Dtype dtype, const void* a, std::int64_t aStride, const void* b,
                                std::int64_t bStride, const void* aLog, const void* dtBias, std::int64_t T,
                                std::int64_t H, float* g, void* beta, void* stream) {
    const auto n = T * H;
    if (n == 0) return {};
    const auto s = static_cast<cudaStream_t>(stream);
    const auto grid = static_cast<unsigned>((n + 255) / 256);
    if (dtype == Dtype::BFloat16) {
        using E = __nv_bfloat16;
        gatesKernel<E><<<grid, 256, 0, s>>>(static_cast<const E*>(a), aStride, static_cast<const E*>(b), bStride,
                                            static_cast<const E*>(aLog), static_cast<const E*>(dtBias), T, H, g,
                                            static_cast<E*>(beta));
    } else {
        using E = __half;
        gatesKernel<E><<<grid, 256, 0, s>>>(static_cast<const E*>(a), aStride, static_cast<const E*>(b), bStride,
                                            static_cast<const E*>(aLog), static_cast<const E*>(dtBias), T, H, g,
                                            static_cast<E*>(beta));
    }
    return status();
}

std::string launchSigmoidGate(Dtype dtype, const void* attn, std::int64_t sH, std::int64_t sT, const void* gate,
                              std::int64_t gT, std::int64_t gH, std::int64_t H, std::int64_t T, std::int64_t D,
                              void* out, void* stream) {
    const auto rows = T * H;
    if (rows == 0) return {};
    const auto s = static_cast<cudaStream_t>(stream);
    const auto grid = static_cast<unsigned>(rows);
    if (dtype == Dtype::BFloat16) {
        using E = __nv_bfloat16;
        sigmoidGateKernel<E><<<grid, threadsFor(D, rows), 0, s>>>(static_cast<const E*>(attn), sH, sT,
                                                            static_cast<const E*>(gate), gT, gH, H, D,
                                                            static_cast<E*>(out));
    } else {
        using E = __half;
        sigmoidGateKernel<E><<<grid, threadsFor(D, rows), 0, s>>>(static_cast<const E*>(attn), sH, sT,
                                                            static_cast<const E*>(gate), gT, gH, H, D,
                                                            static_cast<E*>(out));
    }
    return status();
}

}  // namespace draftscope::kernels
