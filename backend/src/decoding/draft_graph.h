#pragma once
// DFlash drafter calls as captured CUDA graphs (docs/ENGINE.md, "CUDA graphs"; issue 16):
// one graph per context length C = 1..W (the rows committed by the previous step; W the verify width), each
// the static-shape drafter call (DFlashDrafter::draftStatic) over the run's drafter cache.

#include "core/torch_compat.h"
#include "decoding/graph_use.h"
#include "models/dflash_drafter.h"

#include <memory>
#include <string>
#include <vector>

namespace draftscope {

/// Runs the drafter calls of one DFlash run. Where the target's CudaGraphMode, the
/// placement (embeddings, drafter and LM head on one group of a CUDA device) and the drafter
/// (DFlashDrafter::staticShapeUnsupportedReason) allow, the first call with C context rows
/// and a full block captures a graph for that C and later calls with the same C replay it.
/// Other calls (the prompt's context, a clipped block, a cache without room) run
/// drafter.draft(). A replay computes what draftStatic() computes eagerly: it differs from
/// draft() only in the rounding of attention over masked rows. Never throws for
/// ineligibility, also in mode On (the verify graph is what On promises); describe() says why.
class DraftGraph {
public:
    DraftGraph(const DFlashDrafter& drafter, const TargetModel& target, LoopRevision revision);
    ~DraftGraph();
    DraftGraph(const DraftGraph&) = delete;
    DraftGraph& operator=(const DraftGraph&) = delete;

    /// One drafter call's outputs the loop needs.
    struct Step {
        at::Tensor logits;  ///< float32 [D, V]: DraftOutput::logits (D = draft slots of the block)
        at::Tensor hidden;  ///< [D, H]: the drafting rows' outputs (DFlash2's selector, DSpark's heads read them)
    };
    /// drafter.draft(features, block, cache, revision). A replay's tensors live in the graph's
    /// memory and stay valid until the next call with the same C.
    Step draft(const at::Tensor& features, const at::Tensor& block, KVCache& cache);

    /// For logs: GraphUse::describe ("254 of 255 drafter calls replayed, 2 captures (30.2 ms)").
    std::string describe() const;
    /// How the calls ran so far (RunTiming::cudaGraphs through GraphUse::describeRun).
    const GraphUse& use() const { return use_; }

private:
    struct Captured;
    const DFlashDrafter& drafter_;
    LoopRevision revision_;
    std::int64_t B_;     ///< block rows
    std::int64_t maxC_;  ///< most context rows one call takes: the verify width (B, or B + 1 when the anchor drafts)
    CudaGraphMode mode_;
    std::vector<std::unique_ptr<Captured>> graphs_;  ///< index C - 1
    at::Tensor featIn_, blockIn_, pastIn_, offsets_;  ///< [W, K*H], [B], [1], 0..W+B-1
    GraphUse use_;
};

}  // namespace draftscope
