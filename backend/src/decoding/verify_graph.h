#pragma once
// The DFlash verify step (the target's forward over [anchor | drafts]) as a captured CUDA
// graph (docs/ENGINE.md, "CUDA graphs"; issue 16). One graph per run and block size: the
// static-shape forward (TargetForwardRequest::staticShapes) over the run's reserved KV
// cache, with the cache length uploaded to the device before each replay.

#include "core/torch_compat.h"
#include "decoding/graph_use.h"
#include "draftscope/engine.h"
#include "models/target_model.h"

#include <string>
#include <vector>

namespace draftscope {

/// The mode LoadOptions::cudaGraphs names ("auto", "on", "off"; checked by
/// validate(LoadOptions), so anything else reads as Auto).
CudaGraphMode cudaGraphMode(const LoadOptions& options);

/// Runs verify steps of `rows` tokens for one DFlash run. Where the target's
/// CudaGraphMode and the target allow (staticShapeUnsupportedReason(), a CUDA device with
/// graph support), the first full step captures the static-shape forward and later ones
/// replay it; other steps (a clipped last block, a cache without room) run target.forward.
/// Exactness: a replay computes what the static-shape forward computes eagerly; that
/// differs from the dynamic forward only in the rounding of attention over masked rows
/// (tests/tst_verify_graph compares output ids and acceptance lengths).
class VerifyGraph {
public:
    /// `hiddenIndices`: the drafter's tapped features (TargetForwardRequest::hiddenIndices).
    /// Throws Error in mode On where graphs are impossible, naming why.
    VerifyGraph(const TargetModel& target, std::int64_t rows, std::vector<std::int64_t> hiddenIndices);
    ~VerifyGraph();
    VerifyGraph(const VerifyGraph&) = delete;
    VerifyGraph& operator=(const VerifyGraph&) = delete;

    /// The target's forward of `ids` (int64 [T] on the target's device) at positions
    /// cache.length().., logits of every row, committed to the cache as target.forward
    /// does. The result's tensors of a replay live in the graph's memory: they stay valid
    /// until the next call. In mode On a failed capture is an Error (GraphCaptureError); in
    /// Auto it switches the run to eager steps and records the reason. Errors of the forward
    /// itself pass through.
    TargetForwardResult forward(const at::Tensor& ids, KVCache& cache);

    /// For logs: GraphUse::describe ("31 of 32 verify steps replayed, 1 capture (52.1 ms)").
    std::string describe() const;
    /// How the steps ran so far (RunTiming::cudaGraphs through GraphUse::describeRun).
    const GraphUse& use() const { return use_; }

private:
    TargetForwardResult runStatic(KVCache& cache);

    const TargetModel& target_;
    std::int64_t rows_;
    std::vector<std::int64_t> hidden_;
    CudaGraphMode mode_;
    compat::DeviceGraph graph_;
    std::uint64_t capturedStorage_ = 0;      ///< KVCache::storageId() at capture
    at::Tensor idsIn_, pastIn_, offsets_;    ///< graph inputs: ids [rows], past [1], 0..rows-1
    TargetForwardResult outputs_;            ///< graph outputs (or the last eager static step's)
    GraphUse use_;
};

}  // namespace draftscope
