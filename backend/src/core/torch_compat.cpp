#include "core/torch_compat.h"

#include "draftscope/errors.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <limits>
#include <thread>

#if TORCH_VERSION_MAJOR >= 2
#define DRAFTSCOPE_HAVE_SDPA 1
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define DRAFTSCOPE_HAVE_RMS_NORM 1  // at::rms_norm (fused on CUDA in recent releases)
#define DRAFTSCOPE_HAVE_CUDNN_SDP 1  // Context::setSDPUseCuDNN (2.3+)
#endif
// DRAFTSCOPE_TORCH_CUDA comes from CMake when the libtorch found has CUDA libraries; the
// allocator header also needs the CUDA runtime headers on the include path.
#if defined(DRAFTSCOPE_TORCH_CUDA) && __has_include(<cuda_runtime_api.h>) && \
    __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define DRAFTSCOPE_HAVE_CUDA_ALLOCATOR_STATS 1
// CUDA graphs: capture_begin(pool, mode) since 2.1 (thread-local capture mode).
#if (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)) && \
    __has_include(<ATen/cuda/CUDAGraph.h>)
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#define DRAFTSCOPE_HAVE_CUDA_GRAPHS 1
#endif
#endif

namespace draftscope::compat {

namespace {
at::Tensor expandKv(const at::Tensor& kv, std::int64_t numQueryHeads) {
    const auto groups = numQueryHeads / kv.size(0);
    return groups == 1 ? kv : kv.repeat_interleave(groups, 0);
}

#ifdef DRAFTSCOPE_HAVE_SDPA
/// SDPA wants an additive mask whose rows are 16-element aligned (else it converts and pads
/// it in every call). A forward passes the same `visible` tensor to every layer, so the
/// additive form is made once per tensor: the cache holds the key tensor, so its identity
/// cannot be reused by another tensor while cached.
at::Tensor additiveMask(const at::Tensor& visible, at::ScalarType dtype) {
    thread_local at::Tensor key, additive;
    if (key.defined() && key.unsafeGetTensorImpl() == visible.unsafeGetTensorImpl() &&
        additive.scalar_type() == dtype)
        return additive;
    const auto rows = visible.size(0), cols = visible.size(1);
    const auto padded = (cols + 15) / 16 * 16;
    auto m = at::full({rows, padded}, -std::numeric_limits<float>::infinity(),
                      at::TensorOptions().dtype(dtype).device(visible.device()));
    m = m.narrow(1, 0, cols);
    m.masked_fill_(visible, 0.0);
    key = visible;
    additive = m;
    return m;
}
#endif
}  // namespace

at::Tensor attentionWithWeights(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const std::optional<at::Tensor>& visible, double scale,
                                at::Tensor& weightsOut) {
    const auto kk = expandKv(k, q.size(0));
    const auto vv = expandKv(v, q.size(0));
    auto scores = at::matmul(q, kk.transpose(-2, -1)).mul_(scale).to(at::kFloat);
    if (visible) scores.masked_fill_(visible->logical_not(), -std::numeric_limits<float>::infinity());
    weightsOut = at::softmax(scores, -1);
    return at::matmul(weightsOut.to(q.scalar_type()), vv);
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const std::optional<at::Tensor>& visible, double scale) {
#ifdef DRAFTSCOPE_HAVE_SDPA
    if (q.is_cuda()) {
#ifdef DRAFTSCOPE_HAVE_CUDNN_SDP
        // cuDNN's attention builds an execution plan for every new sequence length (about
        // 0.1 s each): a DFlash run meets a new key length at every step. Flash and
        // memory-efficient kernels need no plans.
        static const bool noCudnn = [] {
            at::globalContext().setSDPUseCuDNN(false);
            return true;
        }();
        (void)noCudnn;
#endif
        const auto kk = expandKv(k, q.size(0));
        const auto vv = expandKv(v, q.size(0));
        std::optional<at::Tensor> mask;
        if (visible) mask = additiveMask(*visible, q.scalar_type());
        return at::scaled_dot_product_attention(q.unsqueeze(0), kk.unsqueeze(0), vv.unsqueeze(0),
                                                mask, 0.0, false, scale)
            .squeeze(0);
    }
#endif
    at::Tensor weights;
    return attentionWithWeights(q, k, v, visible, scale, weights);
}

namespace {
std::atomic<bool> gFastKernels{[] {
    const char* e = std::getenv("DRAFTSCOPE_EXACT_KERNELS");
    return !(e && *e && std::string(e) != "0");
}()};
}  // namespace

bool fastKernels(const at::Device& device, at::ScalarType dtype) {
#ifdef DRAFTSCOPE_HAVE_SDPA
    return gFastKernels.load(std::memory_order_relaxed) && device.is_cuda() &&
           (dtype == at::kBFloat16 || dtype == at::kHalf);
#else
    (void)device;
    (void)dtype;
    return false;
#endif
}

void setFastKernels(bool enabled) { gFastKernels.store(enabled); }

std::optional<at::Tensor> fusedRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
#ifdef DRAFTSCOPE_HAVE_RMS_NORM
    if (fastKernels(x)) return at::rms_norm(x, {x.size(-1)}, weight, eps);
#else
    (void)x;
    (void)weight;
    (void)eps;
#endif
    return std::nullopt;
}

namespace {
/// Held while a graph is captured and around device-wide synchronisations: a device-wide
/// sync from another thread would invalidate a capture in progress (thread-local capture
/// mode only restricts the capturing thread).
std::mutex& captureMutex() {
    static std::mutex m;
    return m;
}
#ifdef DRAFTSCOPE_HAVE_CUDA_GRAPHS
/// Devices on which a capture failed in this process, with the reason: not retried (a
/// failed capture may leave libtorch's allocator bookkeeping behind).
std::map<int, std::string>& failedCaptures() {
    static std::map<int, std::string> m;
    return m;
}
#endif
}  // namespace

void synchronize(const at::Device& device) {
    if (!device.is_cuda()) return;
    const std::lock_guard<std::mutex> lock(captureMutex());
    torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

DeviceMemoryStats deviceMemoryStats(const at::Device& device) {
    DeviceMemoryStats s;
#ifdef DRAFTSCOPE_HAVE_CUDA_ALLOCATOR_STATS
    if (device.is_cuda()) {
        const auto idx = device.has_index() ? device.index() : 0;
        const auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(idx);
        constexpr auto agg = 0;  // StatType::AGGREGATE
        s.allocated = st.allocated_bytes[agg].current;
        s.peakAllocated = st.allocated_bytes[agg].peak;
        s.peakReserved = st.reserved_bytes[agg].peak;
    }
#else
    (void)device;
#endif
    return s;
}

void resetPeakMemory(const at::Device& device) {
#ifdef DRAFTSCOPE_HAVE_CUDA_ALLOCATOR_STATS
    if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
#else
    (void)device;
#endif
}

std::optional<std::uint64_t> deviceFreeBytes(const at::Device& device) {
    if (!device.is_cuda()) return std::nullopt;
    // cudart is loaded with libtorch's CUDA libraries; looked up at run time so a CPU build
    // and a CUDA build link the same way.
    using GetDevice = int (*)(int*);
    using SetDevice = int (*)(int);
    using MemGetInfo = int (*)(std::size_t*, std::size_t*);
    const auto get = reinterpret_cast<GetDevice>(::dlsym(RTLD_DEFAULT, "cudaGetDevice"));
    const auto set = reinterpret_cast<SetDevice>(::dlsym(RTLD_DEFAULT, "cudaSetDevice"));
    const auto info = reinterpret_cast<MemGetInfo>(::dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
    int previous = 0;
    if (!get || !set || !info || get(&previous) != 0) return std::nullopt;
    const int index = device.has_index() ? device.index() : previous;
    std::size_t freeBytes = 0, totalBytes = 0;
    const bool ok = set(index) == 0 && info(&freeBytes, &totalBytes) == 0;
    set(previous);
    if (!ok) return std::nullopt;
    return static_cast<std::uint64_t>(freeBytes);
}

std::string cudaGraphsUnsupportedReason(const at::Device& device) {
    if (!device.is_cuda()) return "the device is the CPU";
#ifdef DRAFTSCOPE_HAVE_CUDA_GRAPHS
    const int index = device.has_index() ? device.index() : c10::cuda::current_device();
    const std::lock_guard<std::mutex> lock(captureMutex());
    const auto it = failedCaptures().find(index);
    if (it != failedCaptures().end())
        return "an earlier capture on cuda:" + std::to_string(index) + " failed in this process (" + it->second + ")";
    return {};
#else
    return "this build (" + libtorchDescription() + ") has no CUDA graph support (needs a CUDA libtorch >= 2.1)";
#endif
}

#ifdef DRAFTSCOPE_HAVE_CUDA_GRAPHS
struct DeviceGraph::Impl {
    std::unique_ptr<at::cuda::CUDAGraph> graph;
};
#else
struct DeviceGraph::Impl {};
#endif

DeviceGraph::DeviceGraph() : d_(std::make_unique<Impl>()) {}
DeviceGraph::~DeviceGraph() = default;

bool DeviceGraph::captured() const {
#ifdef DRAFTSCOPE_HAVE_CUDA_GRAPHS
    return d_->graph != nullptr;
#else
    return false;
#endif
}

void DeviceGraph::capture(const at::Device& device, const std::function<void()>& body) {
    const auto why = cudaGraphsUnsupportedReason(device);
    if (!why.empty()) throw GraphCaptureError("cannot capture a CUDA graph: " + why);
#ifdef DRAFTSCOPE_HAVE_CUDA_GRAPHS
    d_->graph.reset();
    const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
    // First line of a libtorch message (the rest is context that does not belong in a
    // result file).
    const auto brief = [](const c10::Error& e) {
        std::string m = e.what_without_backtrace();
        return m.substr(0, m.find('\n'));
    };
    const std::lock_guard<std::mutex> lock(captureMutex());
    try {
        const c10::cuda::CUDAGuard deviceGuard(index);
        // Stream-level ordering only: a device-wide sync would break another thread's capture.
        c10::cuda::getCurrentCUDAStream(index).synchronize();  // the caller's inputs are written
        // Capture is not allowed on the legacy default stream; warm up on the capture stream too.
        const auto stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
        const c10::cuda::CUDAStreamGuard streamGuard(stream);
        body();
        stream.synchronize();
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        try {
            graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
            try {
                body();
            } catch (...) {
                try {
                    graph->capture_end();
                } catch (...) {
                }
                throw;
            }
            graph->capture_end();
        } catch (const c10::Error& e) {
            failedCaptures()[index] = brief(e);
            throw GraphCaptureError("CUDA graph capture failed: " + brief(e));
        }
        d_->graph = std::move(graph);
    } catch (const c10::Error& e) {  // the warm-up (e.g. out of memory): nothing captured
        throw GraphCaptureError("CUDA graph warm-up failed: " + brief(e));
    }
#else
    (void)body;
#endif
}

void DeviceGraph::replay() {
#ifdef DRAFTSCOPE_HAVE_CUDA_GRAPHS
    if (d_->graph) {
        d_->graph->replay();
        return;
    }
#endif
    throw Error("replay of a CUDA graph that was not captured");
}

int cudaDeviceCount() { return at::hasCUDA() ? static_cast<int>(torch::cuda::device_count()) : 0; }

at::Device parseDevice(const std::string& name) {
    if (name == "cpu") return at::Device(at::kCPU);
    if (name.rfind("cuda", 0) == 0) {
        if (!at::hasCUDA())
            throw Error("device '" + name + "' requested, but this build of draftscope has no "
                        "CUDA support or no CUDA device is visible (" + libtorchDescription() + ")");
        try {
            return at::Device(name);
        } catch (const std::exception&) {
            throw Error("invalid device '" + name + "' (expected cpu, cuda or cuda:N)");
        }
    }
    throw Error("invalid device '" + name + "' (expected cpu, cuda or cuda:N)");
}

at::ScalarType parseDtype(const std::string& name) {
    if (name == "float32" || name == "fp32" || name == "f32") return at::kFloat;
    if (name == "bfloat16" || name == "bf16") return at::kBFloat16;
    throw Error("invalid dtype '" + name + "' (expected float32 or bfloat16)");
}

void configureThreads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::internal::lazy_init_num_threads();
    if (at::get_num_threads() != threads) at::set_num_threads(threads);
}

std::string libtorchDescription() {
    std::string s = "libtorch " TORCH_VERSION;
    s += at::hasCUDA() ? " (CUDA)" : " (CPU)";
    return s;
}

}  // namespace draftscope::compat
