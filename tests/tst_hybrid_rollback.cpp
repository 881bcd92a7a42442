// Hybrid targets: rolling the cache back within a verify block without a second forward
// (docs/ENGINE.md, "Hybrid targets: state rollback"). The state KVCache::crop adopts is
// compared with the state a forward over exactly the committed tokens leaves (the re-run the
// DFlash loop used before): at the rule level bit for bit, on the tiny Qwen3.5 target every
// DeltaNet conv and recurrent tensor and every attention cache row, and a chain of verify
// steps with acceptance lengths 1..B gives the same tokens and acceptance lengths either way.

// Torch headers first: ATen uses `slots` as an identifier, which Qt defines as a macro.
#include "models/gated_deltanet.h"
#include "models/target_model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

#include "draftscope/errors.h"
#include "draftscope/model_config.h"
#include "test_support.h"

#include <QtTest>

using namespace draftscope;
using namespace testsupport;

namespace {

std::unique_ptr<TargetModel> tinyQwen35() {
    const auto dir = dataPath("models/qwen3_5-tiny-causallm");
    const WeightLoader weights(dir);
    const auto config = loadTargetConfig(dir);
    TargetPlacement placement;  // one group on the CPU: everything on device 0
    placement.devices = {at::Device(at::kCPU)};
    placement.plan.layerDevice.assign(static_cast<std::size_t>(config.numLayers), 0);
    return std::make_unique<TargetModel>(config, weights, at::kFloat, std::move(placement));
}

at::Tensor ids(const std::vector<std::int64_t>& v) { return at::tensor(v, at::TensorOptions().dtype(at::kLong)); }

/// A copy of everything a cache holds after its committed rows: per layer the DeltaNet conv
/// and recurrent state or the attention keys and values (cloned: later appends overwrite
/// the rows beyond the length).
std::vector<at::Tensor> cacheContents(KVCache& c, std::int64_t layers) {
    std::vector<at::Tensor> out;
    for (std::size_t l = 0; l < static_cast<std::size_t>(layers); ++l) {
        const auto& s = c.linearState(l);
        if (s.recurrent.defined()) {
            out.push_back(s.conv.clone());
            out.push_back(s.recurrent.clone());
        } else {
            const auto [k, v] = c.rows(l);
            out.push_back(k.clone());
            out.push_back(v.clone());
        }
    }
    return out;
}

/// The largest of max|a_i - b_i| / max|b_i| over the tensors.
double maxRelativeDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        m = std::max(m, (a[i] - b[i]).abs().max().item<double>() / b[i].abs().max().item<double>());
    return m;
}

bool bitIdentical(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!at::equal(a[i], b[i])) return false;
    return true;
}

/// Greedy decoding of `count` tokens after `prompt`, one token per forward.
std::vector<std::int64_t> greedyTokens(const TargetModel& target, const std::vector<std::int64_t>& prompt, int count) {
    KVCache cache = target.makeCache();
    std::vector<std::int64_t> out;
    auto next = ids(prompt);
    for (int i = 0; i < count; ++i) {
        const auto n = next.size(0);
        out.push_back(target.forward(next, cache, {{}, n - 1, {}, {}, {}}).logits.argmax(-1).item<std::int64_t>());
        next = ids({out.back()});
    }
    return out;
}

/// Outcome of a greedy chain loop: tokens after the prompt and acceptance lengths per step.
struct ChainRun {
    std::vector<std::int64_t> tokens;
    std::vector<int> acceptanceLengths;
    std::vector<at::Tensor> logits;  ///< each verify block's
};

/// The chain loop of dflash_loop.cpp on the target alone, block B = 8: step s drafts the
/// greedy continuation `truth` with its draft s % 8 replaced by a wrong token (s % 8 = 7:
/// none), so the acceptance lengths cycle through 1..8. Rollback by KVCache::crop, or (with
/// `rerun`) as the loop did before: restore the snapshot and forward the committed tokens.
ChainRun chainLoop(const TargetModel& target, const std::vector<std::int64_t>& prompt,
                   const std::vector<std::int64_t>& truth, int newTokens, bool rerun) {
    const std::int64_t B = 8, P = static_cast<std::int64_t>(prompt.size());
    const auto V = target.config().vocabSize;
    KVCache cache = target.makeCache();
    ChainRun r;
    r.tokens = {target.forward(ids(prompt), cache, {{}, P - 1, {}, {}, {}}).logits.argmax(-1).item<std::int64_t>()};
    for (int s = 0; static_cast<int>(r.tokens.size()) < newTokens; ++s) {
        const auto done = static_cast<std::size_t>(r.tokens.size());
        std::vector<std::int64_t> block{r.tokens.back()};
        block.insert(block.end(), truth.begin() + static_cast<std::ptrdiff_t>(done),
                     truth.begin() + static_cast<std::ptrdiff_t>(done) + B - 1);
        if (s % B < B - 1) block[static_cast<std::size_t>(s % B) + 1] = (block[static_cast<std::size_t>(s % B) + 1] + 1) % V;
        const auto before = cache.snapshot();
        const auto logits = target.forward(ids(block), cache, {{}, 0, {}, {}, {}}).logits;
        r.logits.push_back(logits);
        const auto post = logits.argmax(-1);
        std::int64_t acc = 0;
        while (acc < B - 1 && block[static_cast<std::size_t>(acc) + 1] == post[acc].item<std::int64_t>()) ++acc;
        for (std::int64_t i = 0; i <= acc; ++i) r.tokens.push_back(post[i].item<std::int64_t>());
        r.acceptanceLengths.push_back(static_cast<int>(acc + 1));
        const auto committed = before.length + acc + 1;
        if (!rerun) {
            cache.crop(committed);
        } else if (committed < cache.length()) {
            cache.restore(before);
            target.forward(ids(block).narrow(0, 0, acc + 1), cache, {{}, acc + 1, {}, {}, {}});
        }
    }
    return r;
}

/// Random inputs of the gated delta rule for T tokens (Hk 2, Hv 4, Dk 8, Dv 6).
struct RuleInputs {
    at::Tensor q, k, v, g, beta, initial;
};
RuleInputs randomRuleInputs(std::int64_t T, std::uint64_t seed) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    const auto f = at::TensorOptions().dtype(at::kFloat);
    return {at::randn({T, 2, 8}, gen, f), at::randn({T, 2, 8}, gen, f),    at::randn({T, 4, 6}, gen, f),
            -at::rand({T, 4}, gen, f),    at::rand({T, 4}, gen, f),        at::randn({4, 8, 6}, gen, f)};
}

}  // namespace

class TestHybridRollback : public QObject {
    Q_OBJECT

private slots:
    // The chunk rule's state after the first n tokens, rebuilt from one run over T tokens,
    // equals a run over only those n tokens bit for bit: within one chunk (T = 16, chunk 64)
    // and across chunk boundaries (T = 100, chunk 64; T = 20, chunk 8).
    void chunkRuleStateAfterIsBitExact_data() {
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("chunk");
        QTest::newRow("T16-C64") << 16 << 64;
        QTest::newRow("T100-C64") << 100 << 64;
        QTest::newRow("T20-C8") << 20 << 8;
    }
    void chunkRuleStateAfterIsBitExact() {
        QFETCH(int, tokens);
        QFETCH(int, chunk);
        const auto in = randomRuleInputs(tokens, 7);
        ChunkRuleTrace trace;
        const auto full = chunkGatedDeltaRule(in.q, in.k, in.v, in.g, in.beta, in.initial, chunk, &trace);
        QCOMPARE(trace.rows, std::int64_t(tokens));
        QCOMPARE(trace.chunk, std::int64_t(chunk));
        for (std::int64_t n = 1; n <= tokens; ++n) {
            auto first = [&](const at::Tensor& x) { return x.narrow(0, 0, n); };
            const auto direct =
                chunkGatedDeltaRule(first(in.q), first(in.k), first(in.v), first(in.g), first(in.beta), in.initial, chunk)
                    .second;
            const auto rebuilt = chunkRuleStateAfter(trace, n);
            QVERIFY2(at::equal(rebuilt, direct), qPrintable(QString("n = %1: max abs diff %2")
                                                                .arg(n)
                                                                .arg((rebuilt - direct).abs().max().item<double>())));
        }
        QVERIFY(at::equal(chunkRuleStateAfter(trace, tokens), full.second));
        QVERIFY_THROWS_EXCEPTION(Error, chunkRuleStateAfter(trace, 0));
        QVERIFY_THROWS_EXCEPTION(Error, chunkRuleStateAfter(trace, tokens + 1));
    }

    // blockPrefixState: n = 0 is the state before, the conv state after n tokens is the last
    // `kernel` columns of [previous window | first n tokens' conv inputs], n = 1 is the
    // recurrent rule from the state before (HF's rule for one token on a cache), n >= 2 the
    // chunk rule's prefix state.
    void blockPrefixStateFollowsHfRules() {
        const std::int64_t T = 6, kernel = 4;
        const auto in = randomRuleInputs(T, 11);
        auto gen = at::make_generator<at::CPUGeneratorImpl>(12);
        const auto convBefore = at::randn({40, kernel}, gen, at::TensorOptions().dtype(at::kFloat));
        const auto inputs = at::randn({40, T}, gen, at::TensorOptions().dtype(at::kFloat));
        DeltaNetBlockTrace b{T, convBefore, in.initial, at::cat({convBefore, inputs}, -1), in.q, in.k, in.v, in.g,
                             in.beta, {}};
        chunkGatedDeltaRule(in.q, in.k, in.v, in.g, in.beta, in.initial, 64, &b.chunk);
        const auto s0 = blockPrefixState(b, 0);
        QVERIFY(at::equal(s0.conv, convBefore) && at::equal(s0.recurrent, in.initial));
        for (std::int64_t n = 1; n <= T; ++n) {
            const auto s = blockPrefixState(b, n);
            const auto window = at::cat({convBefore, inputs.narrow(1, 0, n)}, -1);
            QVERIFY(at::equal(s.conv, window.narrow(1, n, kernel)));
            auto first = [&](const at::Tensor& x) { return x.narrow(0, 0, n); };
            const auto expected =
                n == 1 ? recurrentGatedDeltaRule(first(in.q), first(in.k), first(in.v), first(in.g), first(in.beta),
                                                 in.initial).second
                       : chunkGatedDeltaRule(first(in.q), first(in.k), first(in.v), first(in.g), first(in.beta),
                                             in.initial).second;
            QVERIFY(at::equal(s.recurrent, expected));
            QVERIFY(!s.block);
        }
        QVERIFY_THROWS_EXCEPTION(Error, blockPrefixState(b, T + 1));
    }

    // On the tiny Qwen3.5 target (3 DeltaNet + 1 attention layer, float32): after a 16-token
    // verify block on a 20-token prefix, crop to every n in 0..16 and compare the whole cache
    // with restore + a forward over the n committed tokens.
    void cropEqualsForwardOverCommittedTokens() {
        c10::InferenceMode guard;
        const auto target = tinyQwen35();
        const auto L = target->config().numLayers;
        const auto all = goldenTensors().readInt64("q35.input_ids");
        const std::vector<std::int64_t> prompt(all.begin(), all.begin() + 20);
        std::vector<std::int64_t> block(all.begin() + 20, all.begin() + 36);
        KVCache cache = target->makeCache();
        target->forward(ids(prompt), cache, {{}, 20, {}, {}, {}});
        const auto beforeBlock = cache.snapshot();
        double worst = 0;
        int bitwise = 0;
        // Bit-identical only at n = 0 (the snapshot) and n = 16 (nothing dropped): the verify pass
        // computes the committed tokens' projections as rows of 16-row GEMMs, the forward over n
        // tokens as n-row GEMMs, and the CPU BLAS rounds a row differently for different row
        // counts (docs/ENGINE.md, "Hybrid targets: state rollback", exactness).
        for (std::int64_t n = 0; n <= 16; ++n) {
            cache.restore(beforeBlock);
            target->forward(ids(block), cache, {{}, 16, {}, {}, {}});
            cache.crop(20 + n);
            QCOMPARE(cache.length(), 20 + n);
            const auto adopted = cacheContents(cache, L);
            cache.restore(beforeBlock);
            if (n > 0) target->forward(ids(block).narrow(0, 0, n), cache, {{}, n, {}, {}, {}});
            const auto rerun = cacheContents(cache, L);
            const double d = maxRelativeDiff(adopted, rerun);
            worst = std::max(worst, d);
            const bool same = bitIdentical(adopted, rerun);
            bitwise += same;
            qInfo("n = %lld: %s, max relative diff %.3g", static_cast<long long>(n), same ? "bit-identical" : "differs", d);
            if (n == 0 || n == 16) QVERIFY(same);
        }
        qInfo("%d of 17 prefixes bit-identical, worst max relative diff %.3g", bitwise, worst);
        // Measured 1.0e-6 (about 8 float32 ulp of the largest entry); 2e-6 leaves room for a
        // different BLAS build, nothing more.
        QVERIFY2(worst <= 2e-6, qPrintable(QString::number(worst)));
    }

    // A greedy chain loop with acceptance lengths 1..8 gives the same tokens and acceptance
    // lengths with the crop rollback as with the re-run, and both equal greedy decoding.
    void chainLoopMatchesRerun() {
        c10::InferenceMode guard;
        const auto target = tinyQwen35();
        const auto all = goldenTensors().readInt64("q35.input_ids");
        const std::vector<std::int64_t> prompt(all.begin(), all.begin() + 20);
        const auto truth = greedyTokens(*target, prompt, 48);
        const auto crop = chainLoop(*target, prompt, truth, 32, false);
        const auto rerun = chainLoop(*target, prompt, truth, 32, true);
        QCOMPARE(crop.tokens, rerun.tokens);
        QCOMPARE(crop.acceptanceLengths, rerun.acceptanceLengths);
        QCOMPARE(crop.tokens, std::vector<std::int64_t>(truth.begin(), truth.begin() + crop.tokens.size()));
        QCOMPARE(*std::min_element(crop.acceptanceLengths.begin(), crop.acceptanceLengths.end()), 1);
        QCOMPARE(*std::max_element(crop.acceptanceLengths.begin(), crop.acceptanceLengths.end()), 8);
        double logitsDiff = 0;
        for (std::size_t i = 0; i < crop.logits.size(); ++i)
            logitsDiff = std::max(logitsDiff, (crop.logits[i] - rerun.logits[i]).abs().max().item<double>());
        qInfo("%zu steps, max abs diff of the verify logits %.3g", crop.acceptanceLengths.size(), logitsDiff);
    }

    void cropRefusesToGoBeyondTheLastForward() {
        c10::InferenceMode guard;
        const auto target = tinyQwen35();
        const auto all = goldenTensors().readInt64("q35.input_ids");
        KVCache cache = target->makeCache();
        target->forward(ids({all.begin(), all.begin() + 10}), cache, {{}, 10, {}, {}, {}});
        // A prefill has no state to go back to.
        QVERIFY_THROWS_EXCEPTION(Error, cache.crop(9));
        target->forward(ids({all.begin() + 10, all.begin() + 14}), cache, {{}, 4, {}, {}, {}});
        try {
            cache.crop(9);
            QFAIL("cropped before the last forward");
        } catch (const Error& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("10 tokens at the earliest"), qPrintable(msg));
        }
        cache.crop(12);
        QCOMPARE(cache.length(), std::int64_t(12));
        QVERIFY_THROWS_EXCEPTION(Error, cache.crop(11));  // the adopted state has no trace
    }
};

QTEST_GUILESS_MAIN(TestHybridRollback)
#include "tst_hybrid_rollback.moc"
