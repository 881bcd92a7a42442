// DFlash2's two parts (models/dflash2_parts.h; reference z-lab dflash/model.py @ 10129599:
// _grouped_dynamic_convolve, GroupedDynamicCausalConv, CandidateSelector) against values
// computed by hand: the grouped dynamic causal convolution (taps per group, the zero rows
// before the block, a kernel longer than the block), the split of the kernel projection into
// the two sides, and the selector's greedy walk, its sampling distribution and a forced path.

// Torch headers first: ATen uses `slots` as an identifier, which Qt defines as a macro.
#include "models/dflash2_parts.h"
#include "draftscope/selector_stats.h"

#include <ATen/CPUGeneratorImpl.h>

#include "tensor_test_support.h"

#include <QtTest>

#include <cmath>
#include <vector>

using namespace draftscope;
using testsupport::expectNear;
using testsupport::f32;

namespace {

std::vector<std::int64_t> ids(const at::Tensor& t) {
    const auto h = t.contiguous();
    return {h.data_ptr<std::int64_t>(), h.data_ptr<std::int64_t>() + h.numel()};
}

// x [3, 4] in two groups of 2 channels; taps: base b0 = 1, b1 = 0.5; dynamic d[t, 0, g] =
// 0.1 (g + 1), d[t, 1, g] = -0.2. out[t, c] = (b0 + d0) x[t, c] + (b1 + d1) x[t-1, c].
const std::vector<double> kConvOut = {1.1, 2.2, 3.6, 4.8,  5.8, 7.2, 9.3, 10.8,  11.4, 12.8, 15.3, 16.8};

at::Tensor convInput() { return f32({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4}); }

at::Tensor dynamicTaps(std::int64_t L, std::int64_t K) {
    auto d = at::zeros({L, K, 2}, at::kFloat);
    d.select(1, 0).select(1, 0).fill_(0.1);
    d.select(1, 0).select(1, 1).fill_(0.2);
    d.select(1, 1).fill_(-0.2);
    return d;
}

/// The toy selector: V 4, rank 2, identity hidden projection, top-2.
CandidateSelector toySelector() {
    return CandidateSelector(f32({0, 0, 1, 0, 0.5, 0.5, 0, 1}, {4, 2}), f32({0, -1, 0, 0, 0, 0, 1, 0}, {4, 2}),
                             f32({1, 0, 0, 1}, {2, 2}), 2);
}
// Position 0: logits [0, 1, 3, 2] -> candidates 2 (3), 3 (2); anchor 1: pred [1, 0] * h [2, 0]
// = [2, 0]; succ[2] = 0, succ[3] = [1, 0] -> scores [3, 4]: token 3 (the argmax was 2).
// Position 1: logits [5, 0, 0, 4.5] -> candidates 0, 3; predecessor 3: pred [0, 1] * h [0, 1]
// = [0, 1]; succ[0] = [0, -1] -> -1, succ[3] -> 0: scores [4, 4.5]: token 3 (argmax 0).
at::Tensor toyHidden() { return f32({2, 0, 0, 1}, {2, 2}); }
at::Tensor toyLogits() { return f32({0, 1, 3, 2, 5, 0, 0, 4.5}, {2, 4}); }

}  // namespace

class TestDFlash2Parts : public QObject {
    Q_OBJECT
private slots:
    void groupedDynamicCausalConvolution() {
        const auto base = f32({1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5}, {2, 4});
        expectNear(DynamicCausalConv::convolve(convInput(), dynamicTaps(3, 2), base, 2), kConvOut);
    }

    void kernelLongerThanTheBlockSeesZeros() {
        // K = 3 taps over a block of 2 rows: the third tap only ever reads rows before the
        // block (zeros), so the result is the K = 2 one (the reference's pad would misshape here).
        const auto base = f32({1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 7, 7, 7, 7}, {3, 4});
        auto d = dynamicTaps(2, 3);
        d.select(1, 2).fill_(3.0);
        expectNear(DynamicCausalConv::convolve(convInput().narrow(0, 0, 2), d, base, 2),
                   std::vector<double>(kConvOut.begin(), kConvOut.begin() + 8));
        // One row: only the current position counts.
        expectNear(DynamicCausalConv::convolve(convInput().narrow(0, 0, 1), d.narrow(0, 0, 1), base, 2),
                   {1.1, 2.2, 3.6, 4.8});
    }

    void projectionRowsAreSideTapGroup() {
        // H 6 in groups of 2 (G 3), K 2: kernel_projection row 9 is (side 1, tap 1, group 0) in
        // the reference's [2, K, G] view ([2, G, K] would make it group 1, tap 1). Projecting
        // channel 0 there, finish() adds x[t, 0] * y[t - 1] on group 0 only.
        auto proj = at::zeros({12, 6}, at::kFloat);
        proj[9][0] = 1.0f;
        auto base = at::zeros({2, 2, 6}, at::kFloat);
        base[1][0].fill_(2.0f);  // side 1, tap 0
        const DynamicCausalConv conv{base, {proj, {}}, 2};
        std::vector<float> xs(18);
        for (int i = 0; i < 18; ++i) xs[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
        const auto x = f32(xs, {3, 6});  // x[t, 0] = 1, 7, 13
        const auto taps = conv.prepare(x).second;
        expectNear(conv.finish(at::ones({3, 6}, at::kFloat), taps),
                   {2, 2, 2, 2, 2, 2, 9, 9, 2, 2, 2, 2, 15, 15, 2, 2, 2, 2});
    }

    void prepareSplitsTheProjectionIntoTwoSides() {
        // kernel_projection rows are (side, tap, group): with K 2 and G 2, row 4 is side 1,
        // tap 0, group 0. Projecting channel 0 there: finish() then scales group 0 of the
        // branch output by x[t, 0] (plus base tap 0 = 1 of side 1), and prepare()'s side-0
        // result is the static convolution alone.
        auto proj = at::zeros({8, 4}, at::kFloat);
        proj[4][0] = 1.0f;
        const auto base = f32({1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0}, {2, 2, 4});  // [side, tap, H]
        const DynamicCausalConv conv{base, {proj, {}}, 2};
        const auto x = convInput();
        const auto [side0, taps] = conv.prepare(x);
        expectNear(side0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
        QCOMPARE(taps.sizes().vec(), (std::vector<std::int64_t>{3, 2, 2}));
        expectNear(taps.select(1, 0).select(1, 0), {1, 5, 9});
        const auto y = at::ones({3, 4}, at::kFloat);
        expectNear(conv.finish(y, taps), {3, 3, 2, 2, 7, 7, 2, 2, 11, 11, 2, 2});
    }

    void selectorGreedyWalk() {
        const auto s = toySelector();
        const auto c = s.select(toyHidden(), toyLogits(), 1, 0.0, nullptr);
        QCOMPARE(ids(c.path), (std::vector<std::int64_t>{3, 3}));
        QCOMPARE(ids(c.candidates), (std::vector<std::int64_t>{2, 3, 0, 3}));
        QCOMPARE(ids(c.index), (std::vector<std::int64_t>{1, 1}));
        expectNear(c.scores, {3, 4, 4, 4.5});
        QVERIFY(!c.q.defined());
        // A different anchor changes the first pairwise term: anchor 0 has a zero codebook row.
        QCOMPARE(ids(s.select(toyHidden(), toyLogits(), 0, 0.0, nullptr).path).front(), std::int64_t{2});
    }

    void selectorSamplingDistributionAndForcedPath() {
        const auto s = toySelector();
        // Along the forced path [2, 0]: position 1's predecessor is 2 (pred [0.5, 0.5] * h [0, 1]
        // = [0, 0.5]): scores [5 - 0.5, 4.5] = a tie, q = [0.5, 0.5]; position 0 as greedy.
        const std::vector<std::int64_t> path = {2, 0};
        const auto c = s.select(toyHidden(), toyLogits(), 1, 1.0, nullptr, &path);
        QCOMPARE(ids(c.path), path);
        expectNear(c.scores, {3, 4, 4.5, 4.5});
        const double e = std::exp(1.0);
        expectNear(c.q, {1 / (1 + e), e / (1 + e), 0.5, 0.5});
        // Temperature divides the scores: T = 0.5 doubles the gap at position 0.
        const auto half = s.select(toyHidden(), toyLogits(), 1, 0.5, nullptr, &path);
        expectNear(half.q.narrow(0, 0, 1), {1 / (1 + e * e), e * e / (1 + e * e)});
        // A token outside the candidates is refused by name.
        const std::vector<std::int64_t> bad = {1, 0};
        bool threw = false;
        try {
            s.select(toyHidden(), toyLogits(), 1, 1.0, nullptr, &bad);
        } catch (const std::exception& ex) {
            threw = QString(ex.what()).contains("token 1 at block position 1");
        }
        QVERIFY(threw);
        // Drawn walks follow q: over 4000 draws position 0 picks token 3 with p = e/(1+e).
        at::Generator gen = at::detail::createCPUGenerator(5);
        int three = 0;
        const int n = 4000;
        for (int i = 0; i < n; ++i) three += ids(s.select(toyHidden(), toyLogits(), 1, 1.0, &gen).path)[0] == 3;
        const double p = e / (1 + e), sd = std::sqrt(p * (1 - p) / n);
        QVERIFY2(std::abs(three / double(n) - p) < 4 * sd, qPrintable(QString("%1 of %2").arg(three).arg(n)));
    }

    void selectorEffectsOnAcceptance() {
        // Block of 4 (3 drafted positions). Target tokens t = [10, 11, 12, 13] in every step.
        // step 0: selector = argmax everywhere                      -> Same
        // step 1: first change at 0, accepted 2 (10, 11 drafted)    -> Gained 2 (argmax rejected at 0)
        // step 2: first change at 1 = the rejection, argmax[1] = 11 -> Lost (argmax accepted there)
        // step 3: first change at 1 = the rejection, argmax[1] = 99 -> Neutral (both rejected)
        // step 4: first change at 2, after the rejection at 0       -> Neutral
        RunResult run;
        run.blockSize = 4;
        auto step = [&](std::vector<std::int64_t> drafted, std::vector<std::int64_t> argmax, int acc) {
            VerifyStep v;
            v.drafted = std::move(drafted);
            v.drafterArgmax = std::move(argmax);
            v.targetTokens = {10, 11, 12, 13};
            v.acceptedCount = acc;
            run.steps.push_back(v);
        };
        step({10, 11, 5}, {10, 11, 5}, 2);
        step({10, 11, 7}, {3, 11, 7}, 2);
        step({10, 8, 9}, {10, 11, 9}, 1);
        step({10, 8, 9}, {10, 99, 9}, 1);
        step({4, 8, 9}, {4, 8, 1}, 0);
        // step 5: first change at 1, accepted 3 (10, 11, 12)      -> Gained 2 (acc 3 - position 1)
        step({10, 11, 12}, {10, 20, 12}, 3);
        const auto s = selectorStats(run);
        QVERIFY(s.available && s.greedy);
        QCOMPARE(s.steps, 6);
        QCOMPARE(s.stepsChanged, 5);
        QCOMPARE(s.effects, (std::vector<SelectorEffect>{SelectorEffect::Same, SelectorEffect::Gained, SelectorEffect::Lost,
                                                          SelectorEffect::Neutral, SelectorEffect::Neutral,
                                                          SelectorEffect::Gained}));
        QCOMPARE(s.lengthChange, (std::vector<int>{0, 2, -1, 0, 0, 2}));
        QCOMPARE(s.gained, 2);
        QCOMPARE(s.lost, 1);
        QCOMPARE(s.neutral, 2);
        QCOMPARE(s.tokensGained, 4);
        QCOMPARE(s.drafted, (std::vector<int>{6, 6, 6}));
        QCOMPARE(s.changed, (std::vector<int>{1, 3, 1}));
        QCOMPARE(s.changedRate(1), 0.5);
        // At T > 0 the counterfactual is not defined: change counts only.
        run.settings.temperature = 1.0;
        const auto sampled = selectorStats(run);
        QVERIFY(!sampled.greedy);
        QCOMPARE(sampled.changed, s.changed);
        QCOMPARE(sampled.gained + sampled.lost + sampled.neutral, 0);
        // A DFlash run has no selector data.
        for (auto& v : run.steps) v.drafterArgmax.clear();
        QVERIFY(!selectorStats(run).available);
    }
};

QTEST_APPLESS_MAIN(TestDFlash2Parts)
#include "tst_dflash2_parts.moc"
