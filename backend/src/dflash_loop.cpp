#include "dflash_loop.h"

#include "draftscope/errors.h"
#include "torch_compat.h"

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

/// Picks the target's tokens from float32 logits [R, V]: argmax, or a sample of
/// softmax(logits / T) with `gen` (on the CPU, so runs are reproducible across devices).
at::Tensor pickTokens(const at::Tensor& logits, double temperature, at::Generator& gen) {
    if (temperature < 1e-5) return logits.argmax(-1);
    const auto probs = at::softmax(logits.to(at::kCPU) / temperature, -1);
    return at::multinomial(probs, 1, false, gen).squeeze(-1).to(logits.device());
}

}  // namespace

RunResult runDFlash(const TargetModel& target, const DFlashDrafter& drafter,
                    const std::vector<std::int64_t>& promptIds, const RunSettings& settings,
                    const std::vector<std::int64_t>& stopIds, const ProgressFn& progress,
                    const std::atomic<bool>* cancel) {
    const auto& tc = target.config();
    const std::int64_t P = static_cast<std::int64_t>(promptIds.size());
    const std::int64_t B = drafter.blockSize();
    const std::int64_t maxNew = settings.maxNewTokens;
    if (P == 0) throw Error("the prompt is empty: nothing to condition the target on");
    if (maxNew < 1) throw Error("max new tokens must be at least 1, got " + std::to_string(maxNew));
    if (P + B > tc.maxPositions || maxNew > tc.maxPositions - P - B)  // written to avoid overflow
        throw Error("prompt of " + std::to_string(P) + " tokens + " + std::to_string(maxNew) +
                    " new tokens + one block of " + std::to_string(B) + " exceeds the target's "
                    "max_position_embeddings of " + std::to_string(tc.maxPositions));
    for (auto id : promptIds)
        if (id < 0 || id >= tc.vocabSize)
            throw Error("prompt token id " + std::to_string(id) + " is outside the target's vocabulary 0.." +
                        std::to_string(tc.vocabSize - 1));
    const int topK = static_cast<int>(std::clamp<std::int64_t>(settings.topK, 1, tc.vocabSize));

    const auto t0 = Clock::now();
    RunResult r;
    r.promptIds = promptIds;
    r.blockSize = B;
    r.settings = settings;

    const auto dev = target.device();
    const auto longOpts = at::TensorOptions().dtype(at::kLong);
    at::Generator gen = at::detail::createCPUGenerator(settings.seed);
    const auto featIdx = drafter.featureIndices();

    compat::resetPeakMemory(dev);
    KVCache targetCache = target.makeCache();
    const bool hybrid = target.isHybrid();
    KVCache draftCache = drafter.makeCache();
    // Room for the whole run up front: no step reallocates or copies a cache.
    targetCache.reserve(P + maxNew + B);
    draftCache.reserve(P + maxNew + B);

    // Prefill: features of every prompt position, anchor from the last row.
    auto pre = target.forward(at::tensor(promptIds, longOpts), targetCache, {featIdx, P - 1, {}, {}});
    at::Tensor ctx = at::cat(pre.hidden, -1);  // [P, K*H]
    std::int64_t anchor = pickTokens(pre.logits, settings.temperature, gen).item<std::int64_t>();
    r.timing.prefillMs = msSince(t0);

    std::vector<std::int64_t> out = promptIds;
    out.push_back(anchor);
    std::int64_t start = P;
    const std::int64_t maxLen = P + maxNew;
    const auto t1 = Clock::now();
    auto isStop = [&](std::int64_t t) { return std::find(stopIds.begin(), stopIds.end(), t) != stopIds.end(); };
    // As the reference: even a stop token as the first anchor gets one verify step; the
    // stop check runs after each step over everything committed after the prompt.
    bool stop = false;
    while (start < maxLen && !stop) {
        if (cancel && cancel->load()) throw Cancelled();
        // Built on the device: a host-to-device copy of a pageable tensor would synchronise.
        const auto block = at::full({B}, drafter.config().maskTokenId, longOpts.device(dev));
        block.narrow(0, 0, 1).fill_(anchor);
        const auto d = drafter.draft(ctx, block, draftCache);
        const auto drafted = d.logits.argmax(-1);  // [B-1], drafts stay greedy
        const auto verifyIds = at::cat({block.narrow(0, 0, 1), drafted});
        // Hybrid targets: Gated DeltaNet state cannot be cropped, so keep the state before
        // the block (docs/ENGINE.md, "Hybrid targets: state rollback").
        std::optional<KVCache::Snapshot> beforeBlock;
        if (hybrid) beforeBlock = targetCache.snapshot();
        auto v = target.forward(verifyIds, targetCache, {featIdx, 0, {}, {}});
        const auto post = pickTokens(v.logits, settings.temperature, gen);  // [B]

        // Per-position statistics, computed on the device and copied back in one go: the
        // step's only host synchronisation (the loop needs the accepted count). Token ids
        // (< 2^53) and probabilities travel exactly as float64.
        const auto draftProbs = at::softmax(d.logits, -1);
        const auto top = draftProbs.topk(topK, -1);
        const auto& topProbs = std::get<0>(top);
        const auto& topIds = std::get<1>(top);
        const double temp = settings.temperature < 1e-5 ? 1.0 : settings.temperature;
        const auto targetProbs = at::softmax(v.logits.narrow(0, 0, B - 1) / temp, -1);
        const auto postHead = post.narrow(0, 0, B - 1);
        const auto hit = topIds.eq(postHead.unsqueeze(1));
        const auto rank = at::where(hit.any(1), hit.to(at::kLong).argmax(1), at::full_like(postHead, -1));
        const auto ints = at::cat({drafted, post, rank, topIds.reshape({-1})});
        const auto floats = at::cat({draftProbs.gather(1, drafted.unsqueeze(1)).squeeze(1),
                                     targetProbs.gather(1, drafted.unsqueeze(1)).squeeze(1),
                                     targetProbs.gather(1, postHead.unsqueeze(1)).squeeze(1),
                                     topProbs.reshape({-1})}).to(at::kFloat);
        const auto host = at::cat({ints.to(at::kDouble), floats.to(at::kDouble)}).to(at::kCPU);
        const auto* X = host.data_ptr<double>();
        const std::size_t D = static_cast<std::size_t>(B - 1), K = static_cast<std::size_t>(topK);
        const std::size_t nInts = static_cast<std::size_t>(ints.numel());
        std::vector<std::int64_t> I(X, X + nInts);
        std::vector<float> F(X + nInts, X + host.numel());

        VerifyStep s;
        s.start = start;
        s.anchor = anchor;
        const auto i0 = I.begin();
        const auto f0 = F.begin();
        s.drafted.assign(i0, i0 + D);
        s.targetTokens.assign(i0 + D, i0 + D + B);
        s.targetRankInDraft.assign(i0 + D + B, i0 + 2 * D + B);
        s.draftProb.assign(f0, f0 + D);
        s.targetProbOfDraft.assign(f0 + D, f0 + 2 * D);
        s.targetProbOfTarget.assign(f0 + 2 * D, f0 + 3 * D);
        for (std::size_t j = 0; j < D; ++j) {
            s.draftTopIds.emplace_back(i0 + 2 * D + B + j * K, i0 + 2 * D + B + (j + 1) * K);
            s.draftTopProbs.emplace_back(f0 + 3 * D + j * K, f0 + 3 * D + (j + 1) * K);
        }
        int acc = 0;
        while (acc < static_cast<int>(D) && s.drafted[acc] == s.targetTokens[acc]) ++acc;
        s.acceptedCount = acc;
        s.bonusToken = s.targetTokens[static_cast<std::size_t>(acc)];

        // Commit anchor + acc drafted tokens, then the bonus token as the next anchor.
        out.insert(out.end(), s.drafted.begin(), s.drafted.begin() + acc);
        out.push_back(s.bonusToken);
        start += acc + 1;
        if (!hybrid) {
            targetCache.crop(start);
        } else if (acc + 1 < B) {
            // Roll back to the state before the block and re-run the target on the acc + 1
            // committed tokens only: the cache then equals that of a forward over exactly the
            // committed tokens (attention rows recomputed too). Nothing to do if all B tokens
            // were committed. The features and logits of this step stay the verify pass's.
            targetCache.restore(*beforeBlock);
            target.forward(verifyIds.narrow(0, 0, acc + 1), targetCache, {{}, acc + 1, {}, {}});
        }
        ctx = at::cat(v.hidden, -1).narrow(0, 0, acc + 1);
        anchor = s.bonusToken;
        r.acceptanceLengths.push_back(acc + 1);
        if (!settings.ignoreEos)
            for (auto it = out.begin() + P; it != out.end(); ++it)
                if (isStop(*it)) stop = true;
        r.steps.push_back(std::move(s));
        if (progress) progress(std::min(start - P, maxNew), maxNew);
    }
    r.timing.decodeMs = msSince(t1);

    if (static_cast<std::int64_t>(out.size()) > maxLen) out.resize(static_cast<std::size_t>(maxLen));
    if (!settings.ignoreEos)  // cut after the first stop token that survived the truncation
        for (std::size_t i = static_cast<std::size_t>(P); i < out.size(); ++i)
            if (isStop(out[i])) {
                out.resize(i + 1);
                r.stoppedAtEos = true;
                break;
            }
    r.outputIds = std::move(out);

    // Aggregates (bonus token included in every acceptance length).
    const auto steps = static_cast<double>(r.acceptanceLengths.size());
    r.perPositionAcceptance.assign(static_cast<std::size_t>(B), 0.0);
    r.acceptanceHistogram.assign(static_cast<std::size_t>(B + 1), 0);
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
                                       std::int64_t maxNew, const std::vector<std::int64_t>& stopIds,
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
        const auto r = target.forward(next, cache, {{}, n - 1, {}, {}});
        const auto token = r.logits.argmax(-1).item<std::int64_t>();
        out.push_back(token);
        if (std::find(stopIds.begin(), stopIds.end(), token) != stopIds.end()) break;
        next = at::tensor(std::vector<std::int64_t>{token}, longOpts);
    }
    return out;
}

}  // namespace draftscope
