#include "torch_compat.h"

#include "draftscope/errors.h"

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <thread>

#if TORCH_VERSION_MAJOR >= 2
#define DRAFTSCOPE_HAVE_SDPA 1
#endif

namespace draftscope::compat {

namespace {
at::Tensor expandKv(const at::Tensor& kv, std::int64_t numQueryHeads) {
    const auto groups = numQueryHeads / kv.size(0);
    return groups == 1 ? kv : kv.repeat_interleave(groups, 0);
}
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
        const auto kk = expandKv(k, q.size(0));
        const auto vv = expandKv(v, q.size(0));
        std::optional<at::Tensor> mask;
        if (visible) mask = *visible;
        return at::scaled_dot_product_attention(q.unsqueeze(0), kk.unsqueeze(0), vv.unsqueeze(0),
                                                mask, 0.0, false, scale)
            .squeeze(0);
    }
#endif
    at::Tensor weights;
    return attentionWithWeights(q, k, v, visible, scale, weights);
}

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
    at::set_num_threads(threads);
}

std::string libtorchDescription() {
    std::string s = "libtorch " TORCH_VERSION;
    s += at::hasCUDA() ? " (CUDA)" : " (CPU)";
    return s;
}

}  // namespace draftscope::compat
