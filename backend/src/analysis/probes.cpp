// The Engine calls that prefill the target and call the drafter for analysis (one drafter
// call, its DDTree, its attention weights, hidden-state statistics, the teacher-forced
// probe). They share one prefill-and-draft path: prefill() then draftAfter().

#include "draftscope/engine.h"

#include "decoding/markov_walk.h"
#include "decoding/ddtree_loop.h"
#include "models/dflash_drafter.h"
#include "draftscope/errors.h"
#include "engine/engine_impl.h"
#include "models/target_model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace draftscope {

using engine_detail::guarded;
using engine_detail::toFloatVector;

namespace {

/// Per-position and histogram statistics of x [T, D] (any dtype), computed in float32.
/// Non-finite values (a broken checkpoint) are counted and left out of the histogram and
/// of the outlier median; the per-position statistics then show NaN/inf where they occur.
HiddenSeriesStats seriesStats(const at::Tensor& xIn, int bins) {
    HiddenSeriesStats s;
    const auto x = xIn.to(at::kFloat);
    s.rms = toFloatVector(x.pow(2).mean(-1).sqrt());
    s.mean = toFloatVector(x.mean(-1));
    s.std = toFloatVector(x.std(-1, /*unbiased=*/false));
    s.maxAbs = toFloatVector(x.abs().amax(-1));
    const auto cpu = x.to(at::kCPU);
    const auto finite = cpu.masked_select(cpu.isfinite());
    s.nonFiniteCount = cpu.numel() - finite.numel();
    double lo = 0, hi = 1;
    if (finite.numel() > 0) {
        lo = finite.min().item<double>();
        hi = finite.max().item<double>();
    }
    const double top = hi > lo ? hi : lo + 1.0;
    const auto counts = finite.numel() > 0 ? at::histc(finite, bins, lo, top).to(at::kLong)
                                           : at::zeros({bins}, at::TensorOptions().dtype(at::kLong));
    for (int i = 0; i <= bins; ++i) s.histogramEdges.push_back(lo + (top - lo) * i / bins);
    s.histogramCounts.assign(counts.data_ptr<std::int64_t>(), counts.data_ptr<std::int64_t>() + bins);
    // Robust outliers: RMS above median + 5 * 1.4826 * MAD over the finite RMS values;
    // a position whose RMS is not finite is always an outlier.
    std::vector<float> sorted;
    for (float v : s.rms)
        if (std::isfinite(v)) sorted.push_back(v);
    float threshold = std::numeric_limits<float>::infinity();
    if (!sorted.empty()) {
        std::sort(sorted.begin(), sorted.end());
        const float median = sorted[sorted.size() / 2];
        std::vector<float> dev;
        for (float v : sorted) dev.push_back(std::fabs(v - median));
        std::sort(dev.begin(), dev.end());
        const float mad = std::max(dev[dev.size() / 2], 1e-6f * std::max(1.0f, median));
        threshold = median + 5.0f * 1.4826f * mad;
    }
    for (std::size_t i = 0; i < s.rms.size(); ++i)
        if (!std::isfinite(s.rms[i]) || s.rms[i] > threshold) s.outlierPositions.push_back(static_cast<std::int64_t>(i));
    return s;
}

/// The target's forward over `ids` (positions 0..T-1, fresh cache) with the hidden states
/// `featureIndices` (HF convention) and the logits of rows [logitsFrom, T).
struct Prefill {
    std::vector<at::Tensor> hidden;  ///< one [T, H] per feature index, compute dtype
    at::Tensor features;             ///< [T, K*H]: `hidden` concatenated in index order (DFLASH.md section 2)
    at::Tensor logits;               ///< [T - logitsFrom, V] float32
    std::vector<at::Tensor> routing; ///< TargetForwardResult::routing of `routingLayers`
};

Prefill prefill(const TargetModel& target, const std::vector<std::int64_t>& ids,
                const std::vector<std::int64_t>& featureIndices, std::int64_t logitsFrom,
                const std::vector<std::int64_t>& routingLayers = {}) {
    auto cache = target.makeCache();
    TargetForwardRequest req{featureIndices, logitsFrom, {}, {}, {}};
    req.routingLayers = routingLayers;
    auto out = target.forward(at::tensor(ids, at::TensorOptions().dtype(at::kLong)), cache, req);
    Prefill p;
    p.routing = std::move(out.routing);
    p.features = at::cat(out.hidden, -1);
    p.hidden = std::move(out.hidden);
    p.logits = std::move(out.logits);
    return p;
}

/// One drafter call (DFLASH.md section 3) on the block [anchor, MASK x (B-1)] with context
/// features `features` (the positions not yet in `draftCache`); `blockStart` and `layout`
/// as DFlashDrafter::draft. Returns the block ids through `blockIds` if given.
DraftOutput draftAfter(const DFlashDrafter& drafter, const TargetModel& target, const at::Tensor& features,
                       std::int64_t anchor, std::int64_t blockSize, KVCache& draftCache, LoopRevision revision,
                       bool keepAttention = false, std::int64_t blockStart = -1,
                       std::vector<std::int64_t>* blockIds = nullptr,
                       const std::vector<LayerAttention>* layout = nullptr) {
    std::vector<std::int64_t> block(static_cast<std::size_t>(blockSize), drafter.config().maskTokenId);
    block[0] = anchor;
    auto out = drafter.draft(features, at::tensor(block, at::TensorOptions().dtype(at::kLong)).to(target.device()),
                             draftCache, revision, keepAttention, blockStart, layout);
    if (blockIds) *blockIds = std::move(block);
    return out;
}

/// The drafter's probabilities (softmax of `logits` [D, V], float32) of the tokens of `ids`
/// at a + 1 + j + s for slot j and label shift s in {0, 1}; 0 where that position lies past
/// the sequence. Returns [2, D] on the CPU.
at::Tensor sequenceTokenProbs(const at::Tensor& logits, const std::vector<std::int64_t>& ids, std::int64_t a) {
    const auto D = logits.size(0);
    const auto T = static_cast<std::int64_t>(ids.size());
    std::vector<std::int64_t> tokens;
    std::vector<float> valid;
    for (int s = 0; s < 2; ++s)
        for (std::int64_t j = 0; j < D; ++j) {
            const auto pos = a + 1 + j + s;
            tokens.push_back(pos < T ? ids[static_cast<std::size_t>(pos)] : 0);
            valid.push_back(pos < T ? 1.0f : 0.0f);
        }
    const auto probs = at::softmax(logits.to(at::kFloat), -1).repeat({2, 1});  // [2D, V]
    const auto index = at::tensor(tokens, at::TensorOptions().dtype(at::kLong)).to(logits.device()).unsqueeze(1);
    const auto picked = probs.gather(1, index).squeeze(1).to(at::kCPU);
    return (picked * at::tensor(valid)).reshape({2, D}).contiguous();
}

}  // namespace

DraftTree Engine::draftTree(const PromptSpec& prompt, int budget, LoopRevision revision, int drafterIndex) {
    return guarded("building the draft tree", [&]() {
        if (budget < 0) throw Error("DDTree budget must be >= 0, got " + std::to_string(budget));
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        if (const auto why = treeRefusal(drafterFamilyName(drafter.config().family), drafter.config().sampleFromAnchor);
            !why.empty())
            throw Error(why);
        const auto& target = *d_->target;
        const auto ids = encodePrompt(prompt);
        const auto P = static_cast<std::int64_t>(ids.size());
        const auto pre = prefill(target, ids, drafter.featureIndices(), P - 1);
        const auto anchor = pre.logits.argmax(-1).item<std::int64_t>();
        auto draftCache = drafter.makeCache();
        const auto out = draftAfter(drafter, target, pre.features, anchor, drafter.blockSize(), draftCache, revision);
        return treeFromDraftLogits(anchor, out.logits, budget);
    });
}

DraftBlockResult Engine::draftBlock(const PromptSpec& prompt, LoopRevision revision, int drafterIndex,
                                    const SelectorProbe& probe) {
    return guarded("the drafter call", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        DraftBlockResult r;
        r.promptIds = encodePrompt(prompt);
        const auto P = static_cast<std::int64_t>(r.promptIds.size());
        r.blockSize = drafter.blockSize();
        r.hiddenSize = target.config().hiddenSize;
        r.vocabSize = target.config().vocabSize;
        const auto pre = prefill(target, r.promptIds, drafter.featureIndices(), P - 1);
        r.anchor = pre.logits.argmax(-1).item<std::int64_t>();
        auto draftCache = drafter.makeCache();
        const auto out = draftAfter(drafter, target, pre.features, r.anchor, r.blockSize, draftCache, revision);
        r.draftHidden = toFloatVector(out.hidden);
        r.draftLogits = toFloatVector(out.logits);
        if (const auto* selector = drafter.selector()) {
            at::Generator gen = at::detail::createCPUGenerator(probe.seed);
            const auto D = out.logits.size(0);  // the drafting rows: the last D of the block
            const auto c = selector->select(out.hidden.narrow(0, out.hidden.size(0) - D, D), out.logits, r.anchor,
                                            probe.temperature, &gen, probe.path.empty() ? nullptr : &probe.path);
            r.selectorTopK = selector->topK();
            const auto ints = [](const at::Tensor& t) {
                const auto h = t.to(at::kCPU).contiguous().reshape({-1});
                return std::vector<std::int64_t>(h.data_ptr<std::int64_t>(), h.data_ptr<std::int64_t>() + h.numel());
            };
            r.selectorPath = ints(c.path);
            r.selectorCandidates = ints(c.candidates);
            r.selectorScores = toFloatVector(c.scores);
            if (c.q.defined()) r.selectorQ = toFloatVector(c.q);
        }
        if (drafter.config().family == DrafterFamily::DSpark) {  // the greedy Markov walk
            const auto D = out.logits.size(0);
            RunSettings greedy;
            at::Generator gen = at::detail::createCPUGenerator(0);
            const auto w = markovWalk(drafter, out.hidden.narrow(0, out.hidden.size(0) - D, D), out.logits, r.anchor,
                                      greedy, /*sample=*/false, gen);
            const auto h = w.path.to(at::kCPU).contiguous();
            r.markovPath.assign(h.data_ptr<std::int64_t>(), h.data_ptr<std::int64_t>() + h.numel());
            r.markovLogits = toFloatVector(w.logits);
            if (w.confidence.defined()) r.confidence = toFloatVector(w.confidence);
        }
        return r;
    });
}

TeacherForcedDrafts Engine::teacherForcedDrafts(const std::vector<std::int64_t>& sequence, std::int64_t promptLength,
                                                int drafterIndex, const ProbeConvention& convention,
                                                LoopRevision revision, const std::atomic<bool>* cancel) {
    return guarded("the teacher-forced drafter probe", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        PromptSpec spec;
        spec.kind = PromptSpec::Kind::Ids;
        spec.ids = sequence;
        const auto ids = encodePrompt(spec);  // validates ids against the vocabulary
        TeacherForcedDrafts r;
        r.sequence = sequence;
        r.promptLength = promptLength;
        // Positions per block: the anchor and the draft slots (block_size + 1 when the anchor's row drafts).
        r.blockSize = drafter.verifyWidth();
        r.convention = convention;
        // B block rows; a block at anchor a is labelled up to position a + W - 1 (W = verify width).
        const auto T = static_cast<std::int64_t>(ids.size()), B = drafter.blockSize(), W = r.blockSize;
        if (promptLength < 1 || promptLength > T)
            throw Error("teacher-forced probe: prompt length " + std::to_string(promptLength) + " outside 1.." +
                        std::to_string(T));
        if (T - W < promptLength)
            throw Error("teacher-forced probe: a sequence of " + std::to_string(T) + " tokens after a prompt of " +
                        std::to_string(promptLength) + " holds no full block of " + std::to_string(W) + " positions");
        if (convention.positionOffset < -1 || convention.positionOffset > 1)
            throw Error("teacher-forced probe: block position offset " + std::to_string(convention.positionOffset) +
                        ", expected -1, 0 or +1");
        const auto indices =
            probeFeatureIndices(drafter.config().targetLayerIds, convention.tapOffset, target.config().numLayers);
        const auto layout = probeLayout(drafter.config().layers, convention);
        // The layout override only where it changes something (the declared call stays the inference call).
        const bool overridden = !(layout == drafter.config().layers) && !layout.empty();
        const auto features = prefill(target, ids, indices, T).features;  // [T, K*H]
        auto draftCache = drafter.makeCache();
        for (std::int64_t a = promptLength; a + W <= T; ++a) {
            if (cancel && cancel->load()) throw Cancelled();
            const std::int64_t ctxEnd = convention.anchorFeatureInContext ? a + 1 : a;
            const auto have = draftCache.length();
            const auto out = draftAfter(drafter, target, features.narrow(0, have, ctxEnd - have),
                                        ids[static_cast<std::size_t>(a)], B, draftCache, revision,
                                        /*keepAttention=*/false, /*blockStart=*/a + convention.positionOffset,
                                        /*blockIds=*/nullptr, overridden ? &layout : nullptr);
            auto logits = out.logits;
            if (drafter.markov()) {  // DSpark, as trained: slot j's predecessor is the sequence's token at a + j
                std::vector<std::int64_t> prev;
                for (std::int64_t j = 0; j < logits.size(0); ++j) prev.push_back(a + j < T ? ids[static_cast<std::size_t>(a + j)] : 0);
                const auto e = drafter.markov()->embed(
                    at::tensor(prev, at::TensorOptions().dtype(at::kLong)).to(target.drafterDevice()));
                logits = logits + drafter.markovBias(e).to(logits.device());
            }
            const auto d = logits.argmax(-1).to(at::kCPU).contiguous();
            r.anchors.push_back(a);
            r.drafts.emplace_back(d.data_ptr<std::int64_t>(), d.data_ptr<std::int64_t>() + d.numel());
            const auto probs = sequenceTokenProbs(logits, ids, a);  // [2, draft slots]
            for (int s = 0; s < 2; ++s)
                r.sequenceProbs[s].emplace_back(probs[s].data_ptr<float>(), probs[s].data_ptr<float>() + probs.size(1));
        }
        return r;
    });
}

DrafterAttention Engine::drafterAttention(const RunResult& run, int step, int drafterIndex) {
    return guarded("computing the drafter attention", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        if (step < 0 || step >= static_cast<int>(run.steps.size()))
            throw Error("verify step " + std::to_string(step) + " out of range (the run has " +
                        std::to_string(run.steps.size()) + " steps)");
        const auto& st = run.steps[static_cast<std::size_t>(step)];
        if (st.start < 1 || st.start > static_cast<std::int64_t>(run.outputIds.size()))
            throw Error("verify step " + std::to_string(step) + " starts at position " + std::to_string(st.start) +
                        ", outside the run's " + std::to_string(run.outputIds.size()) + " output tokens");
        PromptSpec prefix;
        prefix.kind = PromptSpec::Kind::Ids;
        prefix.ids.assign(run.outputIds.begin(), run.outputIds.begin() + st.start);
        const auto ids = encodePrompt(prefix);  // validates ids against the vocabulary
        // The step's own block: the current loop clips the last one to the rows drafting its
        // tokens (drafted has verify - 1 entries; the anchor's row drafts one of them or none).
        const auto B = std::min<std::int64_t>(drafter.blockSize(), static_cast<std::int64_t>(st.drafted.size()) +
                                                                       drafter.config().firstDraftRow());
        const auto pre = prefill(target, ids, drafter.featureIndices(), st.start);
        auto draftCache = drafter.makeCache();
        std::vector<std::int64_t> block;
        const auto out = draftAfter(drafter, target, pre.features, st.anchor, B, draftCache, run.settings.loop,
                                    /*keepAttention=*/true, /*blockStart=*/-1, &block);
        DrafterAttention a;
        a.step = step;
        a.drafter = drafterIndex;
        a.numLayers = static_cast<std::int64_t>(out.attention.size());
        a.numHeads = out.attention.front().size(0);
        a.numQueries = B;
        a.numKeys = st.start + B;
        for (std::int64_t j = 0; j < B; ++j) a.queryPositions.push_back(st.start + j);
        for (std::int64_t k = 0; k < a.numKeys; ++k) a.keyPositions.push_back(k);
        a.keyTokens = ids;
        a.keyTokens.insert(a.keyTokens.end(), block.begin(), block.end());
        a.weights = toFloatVector(at::stack(out.attention));
        return a;
    });
}

HiddenStateStats Engine::hiddenStateStats(const PromptSpec& sequence, int drafterIndex, int histogramBins,
                                          std::int64_t promptLength) {
    return guarded("computing hidden-state statistics", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        if (histogramBins < 1) throw Error("histogram needs at least one bin");
        HiddenStateStats r;
        r.ids = encodePrompt(sequence);
        const auto T = static_cast<std::int64_t>(r.ids.size());
        if (promptLength > T)
            throw Error("hidden-state statistics: prompt length " + std::to_string(promptLength) +
                        " exceeds the sequence length " + std::to_string(T));
        r.promptLength = promptLength < 0 ? T : promptLength;
        const auto& tc = target.config();
        const auto indices = drafter.featureIndices();
        // MoE targets: the routers of the layers the taps read (hidden_states[i] = layer i-1's output).
        std::vector<std::int64_t> routed;
        if (tc.moe.enabled())
            for (const auto i : indices) routed.push_back(i - 1);
        const auto out = prefill(target, r.ids, indices, T, routed);
        for (std::size_t i = 0; i < indices.size(); ++i) {
            auto s = seriesStats(out.hidden[i], histogramBins);
            const auto id = indices[i] - 1;
            s.layerId = id;
            if (i < out.routing.size() && out.routing[i].defined()) {
                const auto chosen = out.routing[i].to(at::kCPU, at::kLong).contiguous();
                s.numExperts = tc.moe.numExperts;
                s.expertChoices.assign(chosen.data_ptr<std::int64_t>(), chosen.data_ptr<std::int64_t>() + chosen.numel());
            }
            s.layerType = tc.layerTypes.at(static_cast<std::size_t>(id));
            s.name = "target layer " + std::to_string(id) + " (hidden_states[" + std::to_string(indices[i]) + "]" +
                     (indices[i] == tc.numLayers ? ", after the final norm)" : ")");
            r.series.push_back(std::move(s));
        }
        auto ctx = seriesStats(drafter.projectContext(out.features), histogramBins);
        ctx.name = "drafter context (fc + hidden_norm)";
        ctx.layerType = "fc + hidden_norm";
        r.series.push_back(std::move(ctx));
        return r;
    });
}

}  // namespace draftscope
