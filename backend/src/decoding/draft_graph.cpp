#include "decoding/draft_graph.h"

#include "draftscope/errors.h"

namespace draftscope {

struct DraftGraph::Captured {
    compat::DeviceGraph graph;
    std::uint64_t storage = 0;  ///< KVCache::storageId() at capture
    DraftGraph::Step out;
};

namespace {
/// The drafting rows: those the logits come from (all B rows when the anchor's row drafts).
DraftGraph::Step stepOf(const DraftOutput& o) {
    const auto D = o.logits.size(0);
    return {o.logits, o.hidden.narrow(0, o.hidden.size(0) - D, D)};
}
}  // namespace

DraftGraph::DraftGraph(const DFlashDrafter& drafter, const TargetModel& target, LoopRevision revision)
    : drafter_(drafter), revision_(revision), B_(drafter.blockSize()), maxC_(drafter.verifyWidth()), mode_(target.cudaGraphMode()) {
    use_.staticEager = mode_ == CudaGraphMode::StaticEager;
    const auto& plan = target.placement().plan;
    const auto& dev = target.drafterDevice();
    if (mode_ == CudaGraphMode::Off) {
        use_.offReason = "turned off";
    } else {
        auto why = mode_ == CudaGraphMode::StaticEager ? std::string() : compat::cudaGraphsUnsupportedReason(dev);
        if (why.empty()) why = drafter.staticShapeUnsupportedReason();
        if (why.empty() && (plan.embeddingDevice != plan.drafterDevice || plan.headDevice != plan.drafterDevice))
            why = "the drafter, the embeddings and the LM head are in different placement groups";
        if (why.empty() && B_ < 2) why = "a block of one token needs no drafter call";
        use_.offReason = why;
    }
    if (use_.offReason.empty()) {
        const auto longOpts = at::TensorOptions().dtype(at::kLong).device(dev);
        const auto width = static_cast<std::int64_t>(drafter.featureIndices().size()) * target.config().hiddenSize;
        featIn_ = at::zeros({maxC_, width}, at::TensorOptions().dtype(target.dtype()).device(dev));
        blockIn_ = at::zeros({B_}, longOpts);
        pastIn_ = at::zeros({1}, longOpts);
        offsets_ = at::arange(maxC_ + B_, longOpts);
        graphs_.resize(static_cast<std::size_t>(maxC_));
    }
}

DraftGraph::~DraftGraph() = default;

DraftGraph::Step DraftGraph::draft(const at::Tensor& features, const at::Tensor& block, KVCache& cache) {
    const auto C = features.size(0);
    const auto past = cache.length();
    if (!use_.offReason.empty() || block.size(0) != B_ || C < 1 || C > maxC_ || cache.capacity() < past + C + B_) {
        ++use_.eager;
        return stepOf(drafter_.draft(features, block, cache, revision_));
    }
    pastIn_.fill_(past);
    featIn_.narrow(0, 0, C).copy_(features);
    blockIn_.copy_(block);
    // Fixed-address views of the inputs: what the graph of this C reads.
    const auto feats = featIn_.narrow(0, 0, C);
    auto body = [&](Step& step) {
        step = stepOf(drafter_.draftStatic(feats, blockIn_, cache, revision_, pastIn_ + offsets_.narrow(0, 0, C + B_)));
    };
    Step out;
    if (mode_ == CudaGraphMode::StaticEager) {
        body(out);
        ++use_.staticRuns;
    } else {
        auto& slot = graphs_[static_cast<std::size_t>(C - 1)];
        if (!slot || slot->storage != cache.storageId()) {
            auto captured = std::make_unique<Captured>();
            if (!captureStep(captured->graph, feats.device(), [&] { body(captured->out); }, use_, false)) {
                ++use_.eager;
                return stepOf(drafter_.draft(features, block, cache, revision_));
            }
            captured->storage = cache.storageId();
            slot = std::move(captured);
        }
        slot->graph.replay();
        out = slot->out;
        ++use_.replays;
    }
    cache.advance(C);
    return out;
}

std::string DraftGraph::describe() const { return use_.describe("drafter calls"); }

}  // namespace draftscope
