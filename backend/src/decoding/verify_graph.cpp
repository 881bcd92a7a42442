#include "decoding/verify_graph.h"

#include "draftscope/errors.h"

#include <chrono>

namespace draftscope {

CudaGraphMode cudaGraphMode(const LoadOptions& options) {
    if (options.cudaGraphs == "on") return CudaGraphMode::On;
    if (options.cudaGraphs == "off") return CudaGraphMode::Off;
    return CudaGraphMode::Auto;
}

VerifyGraph::VerifyGraph(const TargetModel& target, std::int64_t rows, std::vector<std::int64_t> hiddenIndices)
    : target_(target), rows_(rows), hidden_(std::move(hiddenIndices)), mode_(target.cudaGraphMode()) {
    use_.staticEager = mode_ == CudaGraphMode::StaticEager;
    const auto& dev = target.device();
    if (mode_ == CudaGraphMode::Off) {
        use_.offReason = "turned off";
    } else {
        auto why = mode_ == CudaGraphMode::StaticEager ? std::string() : compat::cudaGraphsUnsupportedReason(dev);
        if (why.empty()) why = target.staticShapeUnsupportedReason();
        if (why.empty() && rows < 2) why = "a block of one token needs no verify graph";
        if (!why.empty() && mode_ == CudaGraphMode::On) throw Error("cuda-graphs on: impossible here: " + why);
        use_.offReason = why;
    }
    if (use_.offReason.empty()) {
        const auto longOpts = at::TensorOptions().dtype(at::kLong).device(dev);
        idsIn_ = at::zeros({rows_}, longOpts);
        pastIn_ = at::zeros({1}, longOpts);
        offsets_ = at::arange(rows_, longOpts);
    }
}

VerifyGraph::~VerifyGraph() = default;

TargetForwardResult VerifyGraph::runStatic(KVCache& cache) {
    TargetForwardRequest req{hidden_, 0, pastIn_ + offsets_, {}, {}};
    req.staticShapes = true;
    return target_.forward(idsIn_, cache, req);
}

TargetForwardResult VerifyGraph::forward(const at::Tensor& ids, KVCache& cache) {
    const auto T = ids.size(0);
    const auto past = cache.length();
    if (!use_.offReason.empty() || T != rows_ || cache.capacity() < past + T) {
        ++use_.eager;
        return target_.forward(ids, cache, {hidden_, 0, {}, {}, {}});
    }
    // Inputs: kernels queued before the replay on the same stream (no host synchronisation).
    pastIn_.fill_(past);
    idsIn_.copy_(ids);
    if (mode_ == CudaGraphMode::StaticEager) {
        outputs_ = runStatic(cache);
        ++use_.staticRuns;
    } else {
        if (!graph_.captured() || capturedStorage_ != cache.storageId()) {
            const auto t0 = std::chrono::steady_clock::now();
            try {
                graph_.capture(target_.device(), [&] { outputs_ = runStatic(cache); });
            } catch (const compat::GraphCaptureError& e) {
                if (mode_ == CudaGraphMode::On) throw;
                use_.offReason = e.what();
                ++use_.eager;
                return target_.forward(ids, cache, {hidden_, 0, {}, {}, {}});
            }
            capturedStorage_ = cache.storageId();
            use_.captureMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            ++use_.captures;
        }
        graph_.replay();
        ++use_.replays;
    }
    cache.advance(T);
    return outputs_;
}

std::string VerifyGraph::describe() const { return use_.describe("verify steps"); }

}  // namespace draftscope
