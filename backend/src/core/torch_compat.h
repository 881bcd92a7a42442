#pragma once
// The one place that knows which libtorch it is built against (Debian's 1.13 CPU build or
// a CUDA libtorch 2.x). Every API difference between the two is guarded here.

#include "draftscope/errors.h"

#include <ATen/ATen.h>

#include <functional>
#include <memory>
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

/// Reduced-precision fast paths: true for bfloat16/float16 on a CUDA device with libtorch
/// 2.x, unless switched off by setFastKernels(false) or the environment variable
/// DRAFTSCOPE_EXACT_KERNELS=1. They change rounding only (a fused RMSNorm rounds once
/// instead of twice; a fused gate/up projection may pick another GEMM algorithm), never
/// the function computed; float32 and CPU runs always take the exact, golden-tested paths.
bool fastKernels(const at::Device& device, at::ScalarType dtype);
inline bool fastKernels(const at::Tensor& x) { return fastKernels(x.device(), x.scalar_type()); }
void setFastKernels(bool enabled);

/// Fused RMSNorm y = x * rsqrt(mean(x^2) + eps) * w (at::rms_norm, libtorch >= 2.4) when
/// fastKernels(x); std::nullopt otherwise (the caller then runs the explicit HF formula).
std::optional<at::Tensor> fusedRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

/// Waits for all work queued on `device` (no-op on the CPU); never during a graph capture
/// (DeviceGraph::capture), which a device-wide sync would invalidate.
void synchronize(const at::Device& device);

/// The CUDA caching allocator's statistics for `device`, in bytes; every field is -1 on
/// the CPU or where the build cannot read them.
struct DeviceMemoryStats {
    std::int64_t allocated = -1;      ///< currently allocated by tensors
    std::int64_t peakAllocated = -1;  ///< peak allocated since the last resetPeakMemory()
    std::int64_t peakReserved = -1;   ///< peak reserved by the allocator (allocated + cached)
};
DeviceMemoryStats deviceMemoryStats(const at::Device& device);
/// Starts a new peak-memory window on `device` (no-op on the CPU).
void resetPeakMemory(const at::Device& device);

/// Bytes free on `device` as the CUDA driver reports them (cudaMemGetInfo, looked up in the
/// loaded CUDA runtime, so no link dependency), or std::nullopt on the CPU or where that
/// runtime is not loaded.
std::optional<std::uint64_t> deviceFreeBytes(const at::Device& device);
/// Number of visible CUDA devices (0 in a CPU build).
int cudaDeviceCount();

/// Why CUDA graphs cannot run on `device` ("the device is the CPU", "this build is libtorch
/// 1.13.0 (CPU)"), or an empty string where they can: a CUDA device and a CUDA libtorch >= 2.1
/// built with the CUDA runtime headers (docs/ENGINE.md, "CUDA graphs").
std::string cudaGraphsUnsupportedReason(const at::Device& device);

/// A CUDA graph could not be captured (libtorch or CUDA refused, or capture is impossible
/// on the device); nothing was captured. Errors the captured body itself throws (its own
/// precondition checks) pass through unchanged.
class GraphCaptureError : public Error {
public:
    using Error::Error;
};

/// One captured sequence of kernels on one CUDA device (at::cuda::CUDAGraph), replayed with
/// the same tensor addresses. capture() runs `body` once eagerly on a side stream (warm-up:
/// lazy library initialisation, per-stream workspaces), then records it on that stream in
/// thread-local capture mode, so engines on other threads keep running. Tensors the body
/// allocates during capture live in the graph's private memory pool and are rewritten by
/// each replay(): the body's inputs and outputs must be tensors that outlive the graph.
/// The body must not synchronise with the host or copy from the host (both end a capture).
class DeviceGraph {
public:
    DeviceGraph();
    ~DeviceGraph();
    DeviceGraph(const DeviceGraph&) = delete;
    DeviceGraph& operator=(const DeviceGraph&) = delete;
    /// Throws GraphCaptureError naming the cause where cudaGraphsUnsupportedReason(device)
    /// is not empty, the warm-up fails (out of memory) or the capture fails (an op that
    /// synchronises, a host-to-device copy); nothing is captured then. After a failed
    /// capture the device is not tried again in this process (cudaGraphsUnsupportedReason
    /// says why). Captures and compat::synchronize() exclude each other process-wide.
    void capture(const at::Device& device, const std::function<void()>& body);
    /// Runs the captured kernels on the current stream. Throws Error if nothing is captured.
    void replay();
    bool captured() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d_;
};

/// Parses "cpu", "cuda" or "cuda:N"; throws Error if CUDA is requested but unavailable.
at::Device parseDevice(const std::string& name);
/// Parses "float32" / "bfloat16" (also "fp32", "bf16", "float16"); throws Error otherwise.
at::ScalarType parseDtype(const std::string& name);
/// Sets the intra-op thread count of the calling thread (0 = all hardware threads; libtorch
/// defaults to 1 here). libtorch's OpenMP count is per thread, but a thread's first parallel
/// op resets it to the count set last by any thread: this initialises the calling thread
/// first, so two engines on two threads keep their own counts. Cheap when unchanged.
void configureThreads(int threads);
/// "libtorch 1.13.0 (CPU)" style description for logs and result files.
std::string libtorchDescription();

}  // namespace draftscope::compat
