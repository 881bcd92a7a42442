#include "decoding/verify_graph.h"

#include "draftscope/errors.h"
#include "models/gated_deltanet.h"

namespace draftscope {

CudaGraphMode cudaGraphMode(const LoadOptions& options) {
    if (options.cudaGraphs == "on") return CudaGraphMode::On;
    if (options.cudaGraphs == "off") return CudaGraphMode::Off;
    return CudaGraphMode::Auto;
}

std::string verifyGraphUnsupportedReason(const TargetModel& target) {
    auto why = compat::cudaGraphsUnsupportedReason(target.device());
    return why.empty() ? target.staticShapeUnsupportedReason() : why;
}

VerifyGraph::VerifyGraph(const TargetModel& target, std::int64_t rows, std::vector<std::int64_t> hiddenIndices)
    : target_(target), rows_(rows), hidden_(std::move(hiddenIndices)), mode_(target.cudaGraphMode()) {
    use_.staticEager = mode_ == CudaGraphMode::StaticEager;
    const auto& dev = target.device();
    if (mode_ == CudaGraphMode::Off) {
        use_.offReason = "turned off";
    } else {
        auto why = mode_ == CudaGraphMode::StaticEager ? target.staticShapeUnsupportedReason()
                                                       : verifyGraphUnsupportedReason(target);
        if (why.empty() && rows < 2) why = "a block of one token needs no verify graph";
        if (!why.empty() && mode_ == CudaGraphMode::On) throw Error("cuda-graphs on: impossible here: " + why);
        use_.offReason = why;
    }
    if (use_.offReason.empty()) {
        const auto longOpts = at::TensorOptions().dtype(at::kLong).device(dev);
        idsIn_ = at::zeros({rows_}, longOpts);
        pastIn_ = at::zeros({1}, longOpts);
        offsets_ = at::arange(rows_, longOpts);
        commitGraphs_.resize(static_cast<std::size_t>(rows_ + 1));
    }
}

VerifyGraph::~VerifyGraph() = default;

namespace {
/// Copies `src`'s conv and recurrent state into `dst`'s tensors unless they are the same.
void copyState(LinearAttentionState& dst, const LinearAttentionState& src) {
    if (!src.conv.is_same(dst.conv)) dst.conv.copy_(src.conv);
    if (!src.recurrent.is_same(dst.recurrent)) dst.recurrent.copy_(src.recurrent);
}
}  // namespace

void VerifyGraph::pointCacheAtBuffers(KVCache& cache) const {
    for (std::size_t i = 0; i < linearLayers_.size(); ++i) {
        const auto& b = stateBuffers_[i];
        cache.linearState(linearLayers_[i]) = {b.conv, b.recurrent, nullptr};
    }
}

TargetForwardResult VerifyGraph::runStatic(KVCache& cache) {
    // Every run of the body (eager, warm-up, capture) starts from the fixed buffers.
    pointCacheAtBuffers(cache);
    TargetForwardRequest req{hidden_, 0, pastIn_ + offsets_, {}, {}};
    req.staticShapes = true;
    auto out = target_.forward(idsIn_, cache, req);
    for (std::size_t i = 0; i < linearLayers_.size(); ++i) stateOut_[i] = cache.linearState(linearLayers_[i]);
    return out;
}

void VerifyGraph::loadStateBuffers(KVCache& cache) {
    if (stateBuffers_.empty() && cache.hasLinearState()) {
        for (std::size_t l = 0; l < static_cast<std::size_t>(target_.config().numLayers); ++l) {
            const auto& s = cache.linearState(l);
            if (!s.conv.defined()) continue;
            linearLayers_.push_back(l);
            stateBuffers_.push_back({at::empty_like(s.conv), at::empty_like(s.recurrent), nullptr});
        }
        stateOut_.resize(linearLayers_.size());
    }
    for (std::size_t i = 0; i < linearLayers_.size(); ++i) {
        const auto& s = cache.linearState(linearLayers_[i]);
        if (!s.conv.defined() || !s.recurrent.defined())
            throw Error("verify step: Gated DeltaNet layer " + std::to_string(linearLayers_[i]) + " has no state");
        copyState(stateBuffers_[i], s);
    }
}

TargetForwardResult VerifyGraph::forward(const at::Tensor& ids, KVCache& cache) {
    const auto T = ids.size(0);
    const auto past = cache.length();
    stepPast_ = -1;
    if (!use_.offReason.empty() || T != rows_ || cache.capacity() < past + T) {
        ++use_.eager;
        return target_.forward(ids, cache, {hidden_, 0, {}, {}, {}});
    }
    // Inputs: kernels queued before the replay on the same stream (no host synchronisation).
    pastIn_.fill_(past);
    idsIn_.copy_(ids);
    loadStateBuffers(cache);
    if (mode_ == CudaGraphMode::StaticEager) {
        outputs_ = runStatic(cache);
        ++use_.staticRuns;
    } else {
        if (!graph_.captured() || capturedStorage_ != cache.storageId()) {
            for (auto& g : commitGraphs_) g.reset();  // they read the old capture's trace
            // Whatever the capture leaves in the cache's states, the step starts from the buffers.
            bool captured = false;
            try {
                captured = captureStep(graph_, target_.device(), [&] { outputs_ = runStatic(cache); }, use_,
                                       mode_ == CudaGraphMode::On);
            } catch (...) {
                pointCacheAtBuffers(cache);
                throw;
            }
            if (!captured) {
                pointCacheAtBuffers(cache);
                ++use_.eager;
                return target_.forward(ids, cache, {hidden_, 0, {}, {}, {}});
            }
            capturedStorage_ = cache.storageId();
        }
        graph_.replay();
        for (std::size_t i = 0; i < linearLayers_.size(); ++i) cache.linearState(linearLayers_[i]) = stateOut_[i];
        ++use_.replays;
    }
    cache.advance(T);
    stepPast_ = past;
    return outputs_;
}

void VerifyGraph::adoptPrefix(std::int64_t n) {  // 1 <= n <= rows_
    for (std::size_t i = 0; i < linearLayers_.size(); ++i) {
        // The whole block: the forward's own final state, as crop() keeps it. Otherwise the
        // state before the step is read from the buffers, each layer's before its write.
        copyState(stateBuffers_[i], n == rows_ ? stateOut_[i] : blockPrefixState(*stateOut_[i].block, n));
    }
}

void VerifyGraph::commit(KVCache& cache, std::int64_t length) {
    const auto n = length - stepPast_;
    if (stepPast_ < 0 || linearLayers_.empty() || length > cache.length() || n < 0) {
        stepPast_ = -1;
        cache.crop(length);
        return;
    }
    stepPast_ = -1;
    if (n == 0) {
        // The state before the step: still in the buffers.
    } else if (mode_ == CudaGraphMode::StaticEager || commitsEager_) {
        adoptPrefix(n);
    } else {
        auto& g = commitGraphs_[static_cast<std::size_t>(n)];
        if (!g) {
            // The body reads the state before the step from the buffers it overwrites, so the
            // capture's eager warm-up is undone before the first replay.
            std::vector<LinearAttentionState> before;
            for (const auto& b : stateBuffers_) before.push_back({b.conv.clone(), b.recurrent.clone(), nullptr});
            auto undo = [&] {
                for (std::size_t i = 0; i < before.size(); ++i) copyState(stateBuffers_[i], before[i]);
            };
            // A failed capture leaves the verify graph in use: this and later commits run the
            // same body eagerly, and the run's description says why.
            auto captured = std::make_unique<compat::DeviceGraph>();
            GraphUse commitUse;
            try {
                if (captureStep(*captured, target_.device(), [&] { adoptPrefix(n); }, commitUse, false))
                    g = std::move(captured);
            } catch (...) {
                undo();
                throw;
            }
            undo();
            use_.captures += commitUse.captures;
            use_.captureMs += commitUse.captureMs;
            if (!g) {
                commitsEager_ = true;
                use_.note = "state commits eager (" + commitUse.offReason + ")";
                adoptPrefix(n);
            }
        }
        if (g) g->replay();
    }
    auto snap = cache.snapshot();
    snap.length = length;
    cache.restore(snap);
    pointCacheAtBuffers(cache);
}

std::string VerifyGraph::describe() const { return use_.describe("verify steps"); }

}  // namespace draftscope
