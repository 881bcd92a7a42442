#pragma once
// The DFlash verify step (the target's forward over [anchor | drafts]) as a captured CUDA
// graph (docs/ENGINE.md, "CUDA graphs"; issue 16). One graph per run and block size: the
// static-shape forward (TargetForwardRequest::staticShapes) over the run's reserved KV
// cache, with the cache length uploaded to the device before each replay. On hybrid
// targets the Gated DeltaNet states live in fixed buffers, and adopting the state after the
// accepted tokens (commit()) is one more graph per accepted length.

#include "core/torch_compat.h"
#include "decoding/graph_use.h"
#include "draftscope/engine.h"
#include "models/target_model.h"

#include <memory>
#include <string>
#include <vector>

namespace draftscope {

/// The mode LoadOptions::cudaGraphs names ("auto", "on", "off"; checked by
/// validate(LoadOptions), so anything else reads as Auto).
CudaGraphMode cudaGraphMode(const LoadOptions& options);

/// Why verify steps on `target` cannot be captured: the device's reason
/// (compat::cudaGraphsUnsupportedReason) first, then the target's
/// (TargetModel::staticShapeUnsupportedReason); "" where they can. What `--cuda-graphs on`
/// is refused with at load.
std::string verifyGraphUnsupportedReason(const TargetModel& target);

/// Runs verify steps of `rows` tokens for one DFlash run. Where the target's
/// CudaGraphMode and verifyGraphUnsupportedReason() allow, the first full step captures the
/// static-shape forward and later ones replay it; other steps (a clipped last block, a cache
/// without room) run target.forward.
/// Hybrid targets: before a static step each Gated DeltaNet layer's state is copied into a
/// fixed buffer where it is not already there (after the prefill or an eager step); after
/// it, commit() rebuilds the state after the accepted tokens from the step's trace
/// (blockPrefixState) into those buffers, itself as a graph per accepted length.
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

    /// Keeps the first `length` rows of `cache` after a forward(): what cache.crop(length)
    /// does (the same states), through the fixed state buffers and a graph per accepted
    /// length after a static step on a hybrid target. A failed commit capture never throws:
    /// commits then run eagerly (describe() says why). Throws Error as crop() does.
    /// While a VerifyGraph works on a hybrid cache, the cache's linear-attention states are
    /// its buffers or its graphs' outputs, rewritten by later steps: a KVCache::snapshot()
    /// taken then is not independent (the DFlash loop takes none).
    void commit(KVCache& cache, std::int64_t length);

    /// For logs: GraphUse::describe ("31 of 32 verify steps replayed, 1 capture (52.1 ms)").
    /// On hybrid targets the captures include one per accepted length (commit()).
    std::string describe() const;
    /// How the steps ran so far (RunTiming::cudaGraphs through GraphUse::describeRun).
    const GraphUse& use() const { return use_; }

private:
    TargetForwardResult runStatic(KVCache& cache);
    void loadStateBuffers(KVCache& cache);
    void adoptPrefix(std::int64_t n);
    /// Points the cache's Gated DeltaNet states at the fixed buffers.
    void pointCacheAtBuffers(KVCache& cache) const;

    const TargetModel& target_;
    std::int64_t rows_;
    std::vector<std::int64_t> hidden_;
    CudaGraphMode mode_;
    compat::DeviceGraph graph_;
    std::uint64_t capturedStorage_ = 0;      ///< KVCache::storageId() at capture
    at::Tensor idsIn_, pastIn_, offsets_;    ///< graph inputs: ids [rows], past [1], 0..rows-1
    TargetForwardResult outputs_;            ///< graph outputs (or the last eager static step's)
    GraphUse use_;

    // Hybrid targets.
    std::vector<std::size_t> linearLayers_;          ///< layers with Gated DeltaNet state
    std::vector<LinearAttentionState> stateBuffers_;  ///< per linear layer: the step's input state
    std::vector<LinearAttentionState> stateOut_;      ///< per linear layer: the static step's result and trace
    std::int64_t stepPast_ = -1;  ///< cache length before the last static step; -1 after an eager one
    std::vector<std::unique_ptr<compat::DeviceGraph>> commitGraphs_;  ///< index n = accepted length
    bool commitsEager_ = false;  ///< a commit capture failed: commits run eagerly (use_.note says why)
};

}  // namespace draftscope
