#pragma once
// Engine's private state (Engine::Impl) and the helpers every Engine translation unit
// shares: engine.cpp (loading, runs, target forwards) and analysis/probes.cpp (the calls
// that prefill the target and call the drafter for analysis). Torch code: backend only.

#include "core/torch_compat.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "models/dflash_drafter.h"
#include "models/target_model.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

namespace draftscope {

struct Engine::Impl {
    LoadOptions options;
    at::ScalarType dtype = at::kFloat;
    std::unique_ptr<TargetModel> target;
    std::unique_ptr<Tokenizer> tokenizer;
    std::vector<std::unique_ptr<DFlashDrafter>> drafters;
    ModelSummary targetSummary;
    std::vector<ModelSummary> drafterSummaries;
    std::vector<std::int64_t> stopIds;

    /// The target, ready to run on the calling thread: every entry point that computes calls
    /// this, which applies this engine's CPU thread count to the calling thread (libtorch's
    /// count is per thread; another Engine on another thread may use a different one).
    const TargetModel& requireTarget() const {
        if (!target) throw Error("no target model is loaded");
        compat::configureThreads(options.threads);
        return *target;
    }
    const DFlashDrafter& requireDrafter(int index) const {
        requireTarget();
        if (drafters.empty()) throw Error("no drafter is loaded");
        if (index < 0 || index >= static_cast<int>(drafters.size()))
            throw Error("drafter index " + std::to_string(index) + " out of range (" +
                        std::to_string(drafters.size()) + " loaded)");
        return *drafters[static_cast<std::size_t>(index)];
    }
};

namespace engine_detail {

/// A tensor of any dtype and device as a host float32 vector (row-major).
inline std::vector<float> toFloatVector(const at::Tensor& t) {
    const auto c = t.to(at::kCPU, at::kFloat).contiguous();
    return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

/// Runs `body`, turning libtorch's own exceptions into draftscope::Error with `what` as
/// context, so callers only ever see draftscope::Error (torch messages without backtraces).
template <class F>
auto guarded(const char* what, F&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const c10::Error& e) {
        throw Error(std::string(what) + " failed in libtorch: " + e.what_without_backtrace());
    } catch (const std::bad_alloc&) {
        throw Error(std::string(what) + " failed: out of memory");
    }
}

}  // namespace engine_detail
}  // namespace draftscope
