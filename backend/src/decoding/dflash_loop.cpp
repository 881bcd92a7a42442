#include "decoding/dflash_loop.h"

#include "core/torch_compat.h"
#include "decoding/draft_graph.h"
#include "decoding/markov_walk.h"
#include "decoding/sampling.h"
#include "decoding/verify_graph.h"
#include "draftscope/errors.h"
#include "draftscope/settings_validation.h"
#include "draftscope/speculative_sampling.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <optional>

namespace draftscope {

namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// Verifies drafted tokens by rejection sampling (DFLASH.md section 10): `q` [D, V] the
/// drafter's and `p` [D+1, V] the target's samplingProbs (host), `drafted` [D] drawn from q.
/// Fills the step's rejection record and returns the target's tokens [D+1]: the accepted
/// drafts, the drawn token at acc, then `argmax` (the target's greedy tokens) at the untested
/// positions.
std::vector<std::int64_t> rejectionTargetTokens(const at::Tensor& q, const at::Tensor& p,
                                                const std::vector<std::int64_t>& drafted, const at::Tensor& argmax,
                                                at::Generator& gen, VerifyStep& step) {
    const auto D = drafted.size();
    const auto V = static_cast<std::size_t>(p.size(1));
    const float* P = p.data_ptr<float>();
    const float* Q = q.data_ptr<float>();
    auto uniform = [&]() { return at::rand({1}, gen, at::TensorOptions().dtype(at::kDouble)).item<double>(); };
    const auto verdict = verifyByRejection(drafted, P, Q, V, uniform);
    for (std::size_t i = 0; i < D; ++i) {
        const auto x = static_cast<std::size_t>(drafted[i]);
        step.rejectionP.push_back(P[i * V + x]);
        step.rejectionQ.push_back(Q[i * V + x]);
        step.rejectionAcceptProb.push_back(static_cast<float>(acceptanceProbability(P + i * V, Q + i * V, V)));
    }
    step.rejectionTested = verdict.tested;
    const auto host = argmax.to(at::kCPU).contiguous();
    std::vector<std::int64_t> post(host.data_ptr<std::int64_t>(), host.data_ptr<std::int64_t>() + D + 1);
    const auto acc = static_cast<std::size_t>(verdict.acceptedCount);
    std::copy(drafted.begin(), drafted.begin() + static_cast<std::ptrdiff_t>(acc), post.begin());
    post[acc] = verdict.nextToken;
    return post;
}

}  // namespace

RunResult runDFlash(const TargetModel& target, const DFlashDrafter& drafter,
                    const std::vector<std::int64_t>& promptIds, const RunSettings& settings,
                    const StopTokens& stops, const ProgressFn& progress,
                    const std::atomic<bool>* cancel) {
    const auto& tc = target.config();
    const std::int64_t P = static_cast<std::int64_t>(promptIds.size());
    // Tokens per verify pass: the drafter's block size B, or B + 1 when the anchor's row drafts too (DSpark's layout).
    const std::int64_t W = drafter.verifyWidth();
    const bool anchorDrafts = drafter.config().sampleFromAnchor;
    const std::int64_t maxNew = settings.maxNewTokens;
    if (P == 0) throw Error("the prompt is empty: nothing to condition the target on");
    validate(settings);
    if (P + W > tc.maxPositions || maxNew > tc.maxPositions - P - W)  // written to avoid overflow
        throw Error("prompt of " + std::to_string(P) + " tokens + " + std::to_string(maxNew) +
                    " new tokens + one block of " + std::to_string(W) + " exceeds the target's "
                    "max_position_embeddings of " + std::to_string(tc.maxPositions));
    for (auto id : promptIds)
        if (id < 0 || id >= tc.vocabSize)
            throw Error("prompt token id " + std::to_string(id) + " is outside the target's vocabulary 0.." +
                        std::to_string(tc.vocabSize - 1));
    const int recordTopK = static_cast<int>(std::clamp<std::int64_t>(settings.recordTopK, 1, tc.vocabSize));
    const bool current = settings.loop == LoopRevision::Current;
    const bool rejection = current && settings.temperature > 0;
    const CandidateSelector* selector = drafter.selector();
    const bool walks = drafter.config().family == DrafterFamily::DSpark;  // Markov walk + confidence
    if (const auto why = loopRefusal(drafterFamilyName(drafter.config().family), settings.loop, anchorDrafts); !why.empty())
        throw Error(why);

    const auto t0 = Clock::now();
    RunResult r;
    r.promptIds = promptIds;
    r.blockSize = W;
    r.settings = settings;

    const auto dev = target.device();
    const auto longOpts = at::TensorOptions().dtype(at::kLong);
    at::Generator gen = at::detail::createCPUGenerator(settings.seed);
    const auto featIdx = drafter.featureIndices();

    compat::resetPeakMemory(dev);
    KVCache targetCache = target.makeCache();
    KVCache draftCache = drafter.makeCache();
    // Room for the whole run up front: no step reallocates or copies a cache.
    targetCache.reserve(P + maxNew + W);
    draftCache.reserve(P + maxNew + W);

    // Prefill: features of every prompt position, anchor from the last row.
    auto pre = target.forward(at::tensor(promptIds, longOpts), targetCache, {featIdx, P - 1, {}, {}, {}});
    requireFinitePrefillLogits(pre.logits);
    // Full blocks replay captured graphs where the target, drafter and device allow.
    VerifyGraph verifier(target, W, featIdx);
    DraftGraph drafterGraph(drafter, target, settings.loop);
    at::Tensor ctx = at::cat(pre.hidden, -1);  // [P, K*H] features not yet in the drafter's cache
    std::int64_t anchor = pickTokens(pre.logits, settings, gen).item<std::int64_t>();
    r.timing.prefillMs = msSince(t0);

    std::vector<std::int64_t> out = promptIds;
    out.push_back(anchor);
    std::int64_t start = P;
    const std::int64_t maxLen = P + maxNew;
    const auto t1 = Clock::now();
    // April loop, as its reference: even a stop token as the first anchor gets one verify
    // step; the stop check runs after each step over everything committed after the prompt.
    // Current loop: the run ends at the first stop token produced, the first anchor included.
    bool stop = current && stops.isStop(anchor);
    // Current loop: the last slot of the P + max_new output is filled by the previous step.
    while ((current ? start + 1 < maxLen : start < maxLen) && !stop) {
        if (cancel && cancel->load()) throw Cancelled();
        const std::int64_t verify = current ? std::min(W, maxLen - start) : W;
        const std::int64_t D = verify - 1;  // drafted tokens this step
        // The drafter's block: the anchor and mask rows, clipped (as the current loop clips its
        // last block) to the rows that draft the D tokens.
        const std::int64_t rows = anchorDrafts ? D : verify;
        VerifyStep s;
        s.start = start;
        s.anchor = anchor;
        // Built on the device: a host-to-device copy of a pageable tensor would synchronise.
        const auto anchorRow = at::full({1}, anchor, longOpts.device(dev));
        at::Tensor draftLogits, drafted, post;
        std::optional<SelectorChoice> choice;  // DFlash2: the selector's block tokens
        std::optional<MarkovChoice> walk;      // DSpark: the Markov walk's block tokens
        at::Tensor baseArgmax;                 // DFlash2, DSpark: the drafter's own argmax
        if (D > 0) {
            const auto block = at::full({rows}, drafter.config().maskTokenId, longOpts.device(dev));
            block.narrow(0, 0, 1).fill_(anchor);
            const auto step = drafterGraph.draft(ctx, block, draftCache);
            draftLogits = step.logits;  // [D, V]
            if (selector) choice = selector->select(step.hidden, step.logits, anchor, rejection ? settings.temperature : 0.0, &gen);
            if (walks) {
                walk = markovWalk(drafter, step.hidden, step.logits, anchor, settings, rejection, gen);
                draftLogits = walk->logits;  // what the walk drafted from
            }
            if (choice || walk) baseArgmax = step.logits.argmax(-1);
            ctx = ctx.narrow(0, 0, 0);  // now in the drafter's cache
        }
        TargetForwardResult v;
        if (rejection && D > 0) {
            // q: the drafter's distribution of each drafted token; for DFlash2 the selector's
            // softmax over its candidates, zero elsewhere (the reference's draft_indices).
            // DSpark: the walk's per-slot distributions, each given the slots before it.
            const auto q = choice ? at::zeros({D, draftLogits.size(1)}, at::kFloat)
                                        .scatter_(1, choice->candidates.to(at::kCPU), choice->q)
                           : walk ? walk->q
                                  : samplingProbs(draftLogits, settings);
            const auto draftedHost = choice ? choice->path.to(at::kCPU)
                                     : walk ? walk->path.to(at::kCPU)
                                            : at::multinomial(q, 1, false, gen).squeeze(-1);
            drafted = draftedHost.to(dev);
            v = verifier.forward(at::cat({anchorRow, drafted}), targetCache);
            const std::vector<std::int64_t> ids(draftedHost.data_ptr<std::int64_t>(),
                                                draftedHost.data_ptr<std::int64_t>() + D);
            post = at::tensor(rejectionTargetTokens(q, samplingProbs(v.logits, settings), ids, v.logits.argmax(-1), gen, s),
                              longOpts).to(dev);
        } else {
            drafted = D == 0 ? at::empty({0}, longOpts.device(dev))
                      : choice ? choice->path
                      : walk   ? walk->path
                               : draftLogits.argmax(-1);  // greedy drafts
            v = verifier.forward(at::cat({anchorRow, drafted}), targetCache);
            post = pickTokens(v.logits, settings, gen);  // [verify]
        }

        // Per-position statistics, computed on the device and copied back in one go: the
        // step's only host synchronisation outside sampling (the loop needs the accepted
        // count). Token ids (< 2^53) and probabilities travel exactly as float64.
        const std::size_t Dz = static_cast<std::size_t>(D), K = static_cast<std::size_t>(recordTopK);
        if (D > 0) {
            const auto draftProbs = at::softmax(draftLogits, -1);
            const auto top = draftProbs.topk(recordTopK, -1);
            const auto& topProbs = std::get<0>(top);
            const auto& topIds = std::get<1>(top);
            const double temp = settings.temperature == 0.0 ? 1.0 : settings.temperature;
            const auto targetProbs = at::softmax(v.logits.narrow(0, 0, D) / temp, -1);
            const auto postHead = post.narrow(0, 0, D);
            const auto hit = topIds.eq(postHead.unsqueeze(1));
            const auto rank = at::where(hit.any(1), hit.to(at::kLong).argmax(1), at::full_like(postHead, -1));
            // DFlash2, DSpark: the drafter's argmax travels with the rest (the selector or the
            // walk drafted `drafted`); DSpark's confidence too.
            const auto ints = baseArgmax.defined() ? at::cat({drafted, post, rank, topIds.reshape({-1}), baseArgmax})
                                                   : at::cat({drafted, post, rank, topIds.reshape({-1})});
            std::vector<at::Tensor> floatParts{draftProbs.gather(1, drafted.unsqueeze(1)).squeeze(1),
                                               targetProbs.gather(1, drafted.unsqueeze(1)).squeeze(1),
                                               targetProbs.gather(1, postHead.unsqueeze(1)).squeeze(1),
                                               topProbs.reshape({-1})};
            const bool hasConfidence = walk && walk->confidence.defined();
            if (hasConfidence) floatParts.push_back(walk->confidence.to(draftProbs.device()));
            const auto floats = at::cat(floatParts).to(at::kFloat);
            const auto host = at::cat({ints.to(at::kDouble), floats.to(at::kDouble)}).to(at::kCPU);
            const auto* X = host.data_ptr<double>();
            const std::size_t nInts = static_cast<std::size_t>(ints.numel());
            std::vector<std::int64_t> I(X, X + nInts);
            std::vector<float> F(X + nInts, X + host.numel());
            const auto i0 = I.begin();
            const auto f0 = F.begin();
            const auto Vz = static_cast<std::size_t>(verify);
            s.drafted.assign(i0, i0 + Dz);
            s.targetTokens.assign(i0 + Dz, i0 + Dz + Vz);
            s.targetRankInDraft.assign(i0 + Dz + Vz, i0 + 2 * Dz + Vz);
            s.draftProb.assign(f0, f0 + Dz);
            s.targetProbOfDraft.assign(f0 + Dz, f0 + 2 * Dz);
            s.targetProbOfTarget.assign(f0 + 2 * Dz, f0 + 3 * Dz);
            for (std::size_t j = 0; j < Dz; ++j) {
                s.draftTopIds.emplace_back(i0 + 2 * Dz + Vz + j * K, i0 + 2 * Dz + Vz + (j + 1) * K);
                s.draftTopProbs.emplace_back(f0 + 3 * Dz + j * K, f0 + 3 * Dz + (j + 1) * K);
            }
            if (baseArgmax.defined()) {
                const auto a0 = i0 + 2 * Dz + Vz + Dz * K;
                s.drafterArgmax.assign(a0, a0 + Dz);
                // q of the drafted token: what rejection sampling tested it against (1 at T = 0).
                s.selectorProb = rejection ? s.rejectionQ : std::vector<float>(Dz, 1.0f);
            }
            if (hasConfidence) s.confidence.assign(f0 + 3 * Dz + Dz * K, f0 + 4 * Dz + Dz * K);
        } else {
            s.targetTokens = {post.item<std::int64_t>()};
        }
        int acc = 0;
        if (rejection) {
            while (acc < D && s.rejectionTested[static_cast<std::size_t>(acc)] == 1) ++acc;
        } else {
            while (acc < D && s.drafted[static_cast<std::size_t>(acc)] == s.targetTokens[static_cast<std::size_t>(acc)]) ++acc;
        }
        // The step's new tokens: acc drafted tokens, then the bonus token. The current loop
        // keeps at most the slots left before P + max_new and cuts at the first stop token.
        std::vector<std::int64_t> produced(s.drafted.begin(), s.drafted.begin() + acc);
        produced.push_back(s.targetTokens[static_cast<std::size_t>(acc)]);
        if (current) {
            produced.resize(static_cast<std::size_t>(std::min<std::int64_t>(acc + 1, maxLen - start - 1)));
            if (stops.cutAfterFirstStop(produced, 0)) stop = true;
        }
        const auto n = static_cast<std::int64_t>(produced.size());
        s.acceptedCount = static_cast<int>(n - 1);
        s.bonusToken = produced.back();

        // Commit the anchor (already in `out`) and the produced tokens; the last one is the
        // next anchor, so the caches keep the anchor + n - 1 tokens.
        out.insert(out.end(), produced.begin(), produced.end());
        start += n;
        // Hybrid targets: each Gated DeltaNet layer adopts its state after the n committed
        // tokens, rebuilt from the verify pass (docs/ENGINE.md, "Hybrid targets: state rollback").
        verifier.commit(targetCache, start);
        ctx = at::cat({ctx, at::cat(v.hidden, -1).narrow(0, 0, n)});
        anchor = s.bonusToken;
        r.acceptanceLengths.push_back(static_cast<int>(n));
        if (!current && stops.firstStop(out, static_cast<std::size_t>(P))) stop = true;
        r.steps.push_back(std::move(s));
        if (progress) progress(std::min(start - P, maxNew), maxNew);
    }
    r.timing.decodeMs = msSince(t1);
    r.timing.cudaGraphs = GraphUse::describeRun(verifier.use(), drafterGraph.use());

    if (static_cast<std::int64_t>(out.size()) > maxLen) out.resize(static_cast<std::size_t>(maxLen));
    // Cut after the first stop token that survived the truncation.
    r.stoppedAtEos = stops.cutAfterFirstStop(out, static_cast<std::size_t>(P));
    r.outputIds = std::move(out);

    // Aggregates (bonus token included in every acceptance length).
    const auto steps = static_cast<double>(r.acceptanceLengths.size());
    r.perPositionAcceptance.assign(static_cast<std::size_t>(W), 0.0);
    r.acceptanceHistogram.assign(static_cast<std::size_t>(W + 1), 0);
    double sum = 0;
    for (int len : r.acceptanceLengths) {
        sum += len;
        r.acceptanceHistogram[static_cast<std::size_t>(len)] += 1;
        for (int j = 0; j < len; ++j) r.perPositionAcceptance[static_cast<std::size_t>(j)] += 1;
    }
    if (steps > 0) {
        r.tau = sum / steps;
        for (auto& p : r.perPositionAcceptance) p /= steps;
    }
    r.timing.totalMs = msSince(t0);
    r.timing.peakDeviceBytes = compat::deviceMemoryStats(dev).peakAllocated;
    return r;
}

std::vector<std::int64_t> greedyDecode(const TargetModel& target, const std::vector<std::int64_t>& promptIds,
                                       std::int64_t maxNew, const StopTokens& stops,
                                       const std::atomic<bool>* cancel) {
    const auto& tc = target.config();
    const auto P = static_cast<std::int64_t>(promptIds.size());
    if (P == 0) throw Error("the prompt is empty: nothing to condition the target on");
    if (maxNew < 1) throw Error("max new tokens must be at least 1, got " + std::to_string(maxNew));
    if (P > tc.maxPositions || maxNew > tc.maxPositions - P)
        throw Error("prompt of " + std::to_string(P) + " tokens + " + std::to_string(maxNew) +
                    " new tokens exceeds the target's max_position_embeddings of " + std::to_string(tc.maxPositions));
    const auto longOpts = at::TensorOptions().dtype(at::kLong);
    KVCache cache = target.makeCache();
    std::vector<std::int64_t> out = promptIds;
    at::Tensor next = at::tensor(promptIds, longOpts);
    for (std::int64_t i = 0; i < maxNew; ++i) {
        if (cancel && cancel->load()) throw Cancelled();
        const auto n = next.size(0);
        const auto r = target.forward(next, cache, {{}, n - 1, {}, {}, {}});
        if (i == 0) requireFinitePrefillLogits(r.logits);
        const auto token = r.logits.argmax(-1).item<std::int64_t>();
        out.push_back(token);
        if (stops.isStop(token)) break;
        next = at::tensor(std::vector<std::int64_t>{token}, longOpts);
    }
    return out;
}

}  // namespace draftscope
