#include "decoding/ddtree_loop.h"

#include "decoding/sampling.h"
#include "draftscope/ddtree.h"
#include "draftscope/errors.h"

#include <algorithm>
#include <chrono>

namespace draftscope {

namespace {
using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

DraftTree treeFromDraftLogits(std::int64_t anchor, const at::Tensor& draftLogits, int budget) {
    const auto logits = draftLogits.to(at::kCPU, at::kFloat);
    const auto D = logits.size(0), V = logits.size(1);
    std::vector<std::vector<float>> lps;
    std::vector<std::vector<std::int64_t>> ids;
    if (budget > 0) {
        const auto k = std::min<std::int64_t>(budget, V);
        const auto lp = logits - logits.logsumexp(-1, /*keepdim=*/true);
        const auto top = lp.topk(k, -1);
        const auto vals = std::get<0>(top).contiguous();
        const auto idx = std::get<1>(top).contiguous();
        for (std::int64_t d = 0; d < D; ++d) {
            lps.emplace_back(vals[d].data_ptr<float>(), vals[d].data_ptr<float>() + k);
            ids.emplace_back(idx[d].data_ptr<std::int64_t>(), idx[d].data_ptr<std::int64_t>() + k);
        }
    }
    return buildDraftTree(anchor, lps, ids, budget);
}

TreeRunResult runDDTree(const TargetModel& target, const DFlashDrafter& drafter,
                        const std::vector<std::int64_t>& promptIds, int budget, std::int64_t maxNew,
                        LoopRevision revision, const StopTokens& stops, const ProgressFn& progress,
                        const std::atomic<bool>* cancel) {
    const auto& tc = target.config();
    const std::int64_t P = static_cast<std::int64_t>(promptIds.size());
    const std::int64_t B = drafter.blockSize();
    if (P == 0) throw Error("the prompt is empty: nothing to condition the target on");
    if (budget < 0) throw Error("DDTree budget must be >= 0, got " + std::to_string(budget));
    if (const auto why = treeRefusal(drafterFamilyName(drafter.config().family), drafter.config().sampleFromAnchor); !why.empty()) throw Error(why);
    if (maxNew < 1) throw Error("max new tokens must be at least 1, got " + std::to_string(maxNew));
    if (P + B + budget > tc.maxPositions || maxNew > tc.maxPositions - P - B - budget)
        throw Error("prompt of " + std::to_string(P) + " tokens + " + std::to_string(maxNew) + " new tokens + a tree of " +
                    std::to_string(budget) + " nodes exceeds the target's max_position_embeddings of " +
                    std::to_string(tc.maxPositions));
    for (auto id : promptIds)
        if (id < 0 || id >= tc.vocabSize)
            throw Error("prompt token id " + std::to_string(id) + " is outside the target's vocabulary 0.." +
                        std::to_string(tc.vocabSize - 1));

    const auto t0 = Clock::now();
    TreeRunResult r;
    r.budget = budget;
    r.promptIds = promptIds;
    const auto dev = target.device();
    const auto longOpts = at::TensorOptions().dtype(at::kLong);
    const auto featIdx = drafter.featureIndices();
    KVCache targetCache = target.makeCache();
    KVCache draftCache = drafter.makeCache();

    auto pre = target.forward(at::tensor(promptIds, longOpts), targetCache, {featIdx, P - 1, {}, {}, {}});
    requireFinitePrefillLogits(pre.logits);
    at::Tensor ctx = at::cat(pre.hidden, -1);
    std::int64_t anchor = pre.logits.argmax(-1).item<std::int64_t>();
    r.timing.prefillMs = msSince(t0);
    std::vector<std::int64_t> out = promptIds;
    out.push_back(anchor);
    std::int64_t start = P;
    const std::int64_t maxLen = P + maxNew;
    bool stop = false;
    const auto t1 = Clock::now();

    while (start < maxLen && !stop) {
        if (cancel && cancel->load()) throw Cancelled();
        // The official loop slices its block out of an output buffer of P + maxNew + budget + 1
        // slots, so near the end the block is shorter than B, and it then keeps the last
        // min(B-1, blockLen) drafter rows, the anchor's own row included (ddtree.py,
        // ddtree_generate). Reproduced so acceptance lengths match at every budget.
        const std::int64_t blockLen = std::min(B, maxLen + budget + 1 - start);
        std::vector<std::int64_t> blockIds(static_cast<std::size_t>(blockLen), drafter.config().maskTokenId);
        blockIds[0] = anchor;
        const auto d = drafter.draft(ctx, at::tensor(blockIds, longOpts).to(dev), draftCache, revision);
        const std::int64_t draftRows = std::min(B - 1, blockLen);
        const at::Tensor draftLogits =
            blockLen == B ? d.logits : target.drafterLogits(d.hidden.narrow(0, blockLen - draftRows, draftRows));
        const DraftTree tree = treeFromDraftLogits(anchor, draftLogits, budget);
        const int N = tree.size();

        // Tree verify: node i at position start + depth, seeing the cache and its ancestors.
        const std::int64_t past = targetCache.length();
        std::vector<std::int64_t> positions;
        for (int i = 0; i < N; ++i) positions.push_back(start + tree.depths[static_cast<std::size_t>(i)]);
        auto vis = treeVisibility(tree.parents, past);  // [N, past + N]: the cache, then ancestors and self
        const auto visible = at::from_blob(vis.data(), {N, past + N}, at::TensorOptions().dtype(at::kByte)).to(at::kBool);
        auto v = target.forward(at::tensor(tree.tokens, longOpts), targetCache,
                                {featIdx, 0, at::tensor(positions, longOpts), visible, tree.parents});
        const auto choiceT = v.logits.argmax(-1).to(at::kCPU);
        TreeStep s;
        s.start = start;
        s.tokens = tree.tokens;
        s.depths = tree.depths;
        s.parents = tree.parents;
        s.drafterProbs = tree.drafterProbs;
        s.targetChoice.assign(choiceT.data_ptr<std::int64_t>(), choiceT.data_ptr<std::int64_t>() + N);

        // Walk: follow the child whose token is the target's choice at the current node.
        s.acceptedPath = {0};
        for (int cur = 0;;) {
            int next = -1;
            for (int i = 1; i < N; ++i)
                if (tree.parents[static_cast<std::size_t>(i)] == cur &&
                    tree.tokens[static_cast<std::size_t>(i)] == s.targetChoice[static_cast<std::size_t>(cur)]) {
                    next = i;
                    break;
                }
            if (next < 0) break;
            s.acceptedPath.push_back(next);
            cur = next;
        }
        s.bonusToken = s.targetChoice[static_cast<std::size_t>(s.acceptedPath.back())];
        const auto L = static_cast<std::int64_t>(s.acceptedPath.size());

        // Commit the path (the root is the anchor, already in the output), then the bonus.
        for (std::size_t k = 1; k < s.acceptedPath.size(); ++k) out.push_back(tree.tokens[static_cast<std::size_t>(s.acceptedPath[k])]);
        out.push_back(s.bonusToken);
        std::vector<std::int64_t> rows;
        for (int node : s.acceptedPath) rows.push_back(past + node);
        targetCache.commitTreePath(past, rows, s.acceptedPath.back());
        const auto pathIdx = at::tensor(std::vector<std::int64_t>(s.acceptedPath.begin(), s.acceptedPath.end()), longOpts)
                                 .to(target.drafterDevice());
        ctx = at::cat(v.hidden, -1).index_select(0, pathIdx);
        start += L;
        anchor = s.bonusToken;
        r.acceptanceLengths.push_back(static_cast<int>(L));
        if (stops.firstStop(out, static_cast<std::size_t>(P))) stop = true;
        r.steps.push_back(std::move(s));
        if (progress) progress(std::min(start - P, maxNew), maxNew);
    }
    r.timing.decodeMs = msSince(t1);
    if (static_cast<std::int64_t>(out.size()) > maxLen) out.resize(static_cast<std::size_t>(maxLen));
    r.stoppedAtEos = stops.cutAfterFirstStop(out, static_cast<std::size_t>(P));  // after the truncation
    r.outputIds = std::move(out);
    double sum = 0;
    for (int l : r.acceptanceLengths) sum += l;
    if (!r.acceptanceLengths.empty()) r.tau = sum / static_cast<double>(r.acceptanceLengths.size());
    r.timing.totalMs = msSince(t0);
    return r;
}

}  // namespace draftscope
