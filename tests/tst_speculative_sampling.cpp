// Lossless speculative rejection sampling (DFLASH.md section 10): the accept/resample rule
// on hand-made p and q, and the current loop at temperature > 0 on the demo pair, whose
// sampled output must follow the target's own sampling distribution.

#include "draftscope/engine.h"
#include "draftscope/results_json.h"
#include "draftscope/speculative_sampling.h"
#include "test_support.h"

#include <QtTest>

#include <cmath>
#include <map>
#include <random>

using namespace draftscope;
using namespace testsupport;

namespace {

/// softmax(logits / T) restricted to the top-k entries (ties with the k-th kept), renormalised:
/// written here independently of the engine's tensor code.
std::vector<double> filteredSoftmax(const float* logits, std::size_t V, double T, int k) {
    std::vector<double> z(logits, logits + V);
    std::vector<double> sorted = z;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const double kth = sorted[static_cast<std::size_t>(k - 1)];
    const double mx = sorted[0];
    std::vector<double> p(V, 0.0);
    double sum = 0;
    for (std::size_t i = 0; i < V; ++i)
        if (z[i] >= kth) sum += p[i] = std::exp((z[i] - mx) / T);
    for (auto& v : p) v /= sum;
    return p;
}

/// Pearson chi-square of observed counts against expected probabilities over N samples,
/// cells with expected count < 5 pooled into one. Returns {statistic, degrees of freedom}.
std::pair<double, int> chiSquare(const std::map<std::int64_t, double>& expected, const std::map<std::int64_t, int>& observed,
                                 int N) {
    double stat = 0, pooledE = 0, pooledO = 0;
    int cells = 0;
    for (const auto& [key, prob] : expected) {
        const double e = prob * N;
        const auto it = observed.find(key);
        const double o = it == observed.end() ? 0 : it->second;
        if (e < 5) {
            pooledE += e;
            pooledO += o;
            continue;
        }
        stat += (o - e) * (o - e) / e;
        ++cells;
    }
    for (const auto& [key, count] : observed)
        if (!expected.count(key)) pooledO += count;  // outcomes the target cannot produce
    if (pooledE > 0 || pooledO > 0) {
        stat += pooledE > 0 ? (pooledO - pooledE) * (pooledO - pooledE) / pooledE : 1e9;
        ++cells;
    }
    return {stat, cells - 1};
}

/// Upper 0.1% point of the chi-square distribution for df = 1..12.
double chiSquareCritical999(int df) {
    static const double t[] = {10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59, 31.26, 32.91};
    return t[std::clamp(df, 1, 12) - 1];
}

}  // namespace

class TestSpeculativeSampling : public QObject {
    Q_OBJECT

private slots:
    void acceptanceProbabilityAndResidualByHand() {
        const std::vector<float> p = {0.5f, 0.3f, 0.2f}, q = {0.2f, 0.6f, 0.2f};
        QVERIFY(std::fabs(acceptanceProbability(p.data(), q.data(), 3) - 0.7) < 1e-7);
        const auto r = residualDistribution(p.data(), q.data(), 3);  // max(p - q, 0) = [0.3, 0, 0]
        QCOMPARE(r, (std::vector<double>{1.0, 0.0, 0.0}));
        const auto same = residualDistribution(p.data(), p.data(), 3);  // all zero: p itself
        for (int i = 0; i < 3; ++i) QVERIFY(std::fabs(same[i] - p[i]) < 1e-7);
    }

    void sampleIndexByHand() {
        const std::vector<double> w = {0, 1, 3};
        QCOMPARE(sampleIndex(w, 0.0), std::int64_t(1));     // zero weights are never drawn
        QCOMPARE(sampleIndex(w, 0.1), std::int64_t(1));     // 0.4 < 1
        QCOMPARE(sampleIndex(w, 0.25), std::int64_t(2));    // 1.0 is not < 1
        QCOMPARE(sampleIndex(w, 0.9999999), std::int64_t(2));
    }

    void verifyByRejectionScripted() {
        // D = 2, V = 3. Row 0: p [.5 .3 .2], q [.2 .6 .2]; row 1: p [.1 .1 .8], q [.3 .6 .1];
        // row 2 (bonus): p [0 0 1].
        const std::vector<float> p = {0.5f, 0.3f, 0.2f, 0.1f, 0.1f, 0.8f, 0.0f, 0.0f, 1.0f};
        const std::vector<float> q = {0.2f, 0.6f, 0.2f, 0.3f, 0.6f, 0.1f};
        auto script = [](std::vector<double> us) {
            return [us, i = std::size_t(0)]() mutable { return us.at(i++); };
        };
        // x0 = 1: 0.4 * 0.6 = 0.24 < 0.3 accepted; x1 = 1: 0.2 * 0.6 = 0.12 >= 0.1 rejected;
        // resample from max(p1 - q1, 0) = [0, 0, 0.7] -> token 2 whatever u.
        auto v = verifyByRejection({1, 1}, p.data(), q.data(), 3, script({0.4, 0.2, 0.5}));
        QCOMPARE(v.acceptedCount, 1);
        QCOMPARE(v.tested, (std::vector<int>{1, 0}));
        QCOMPARE(v.nextToken, std::int64_t(2));
        // x0 = 1 rejected (0.6 * 0.6 = 0.36 >= 0.3): residual [1, 0, 0]; x1 untested.
        v = verifyByRejection({1, 2}, p.data(), q.data(), 3, script({0.6, 0.99}));
        QCOMPARE(v.acceptedCount, 0);
        QCOMPARE(v.tested, (std::vector<int>{0, -1}));
        QCOMPARE(v.nextToken, std::int64_t(0));
        // Both accepted (x1 = 2: p 0.8 > q 0.1 always): bonus from p row 2 = token 2.
        v = verifyByRejection({0, 2}, p.data(), q.data(), 3, script({0.9, 0.99, 0.3}));
        QCOMPARE(v.acceptedCount, 2);
        QCOMPARE(v.tested, (std::vector<int>{1, 1}));
        QCOMPARE(v.nextToken, std::int64_t(2));
    }

    void ruleIsLosslessOnHandMadeDistributions() {
        // One drafted position: x ~ q, then the rule. The committed token must follow p and
        // the acceptance rate must be sum min(p, q) = 0.45. N = 200000 draws (mt19937_64,
        // seed 7): the standard error of each frequency is <= 0.0012, so 0.006 is 5 sigma.
        const std::vector<float> p = {0.10f, 0.40f, 0.05f, 0.45f, 0.0f, 0.25f, 0.25f, 0.5f};  // row 1 unused (bonus)
        const std::vector<float> q = {0.40f, 0.10f, 0.30f, 0.20f};
        const double overlap = acceptanceProbability(p.data(), q.data(), 4);
        QVERIFY(std::fabs(overlap - 0.45) < 1e-7);
        std::mt19937_64 rng(7);
        std::uniform_real_distribution<double> U(0.0, 1.0);
        auto uniform = [&]() { return U(rng); };
        const std::vector<double> qd(q.begin(), q.end());
        const int N = 200000;
        std::vector<int> counts(4, 0);
        int accepted = 0;
        for (int n = 0; n < N; ++n) {
            const auto x = sampleIndex(qd, uniform());
            const auto v = verifyByRejection({x}, p.data(), q.data(), 4, uniform);
            const auto token = v.acceptedCount == 1 ? x : v.nextToken;
            counts[static_cast<std::size_t>(token)] += 1;
            accepted += v.acceptedCount;
        }
        for (int t = 0; t < 4; ++t)
            QVERIFY2(std::fabs(counts[t] / double(N) - p[t]) < 0.006,
                     qPrintable(QString("token %1: %2 vs p %3").arg(t).arg(counts[t] / double(N)).arg(p[t])));
        QVERIFY2(std::fabs(accepted / double(N) - overlap) < 0.006, qPrintable(QString::number(accepted / double(N))));
    }

    // The current loop at temperature > 0 on the demo pair. Prompt = the first 6 ids of
    // golden prompt 0, max_new 2, T = 2, top-k 3: the first generated token x1 is the target's
    // own sample, the second x2 is the drafter's proposal verified by the rule (or its
    // resample). Over N = 1200 seeds the joint frequency of (x1, x2) must match
    // p(x1) p(x2 | x1), computed here from plain target forwards: chi-square below the 0.1%
    // critical value. The position-1 acceptance rate must match the mean of the recorded
    // sum_x min(p, q) within 4 standard errors.
    void currentLoopSamplesTheTargetDistribution() {
        Engine engine;
        LoadOptions oneThread;  // 1200 tiny runs: one intra-op thread avoids oversubscription on shared CPUs
        oneThread.threads = 1;
        engine.loadTarget(demoTarget(), oneThread);
        engine.loadDrafter(demoDrafter());
        PromptSpec prompt;
        prompt.kind = PromptSpec::Kind::Ids;
        const auto p0 = promptIds(0);
        prompt.ids.assign(p0.begin(), p0.begin() + 6);
        RunSettings s;
        s.maxNewTokens = 2;
        s.ignoreEos = true;
        s.temperature = 2.0;
        s.topK = 3;
        const double T = s.temperature;

        auto lastRow = [&](const std::vector<std::int64_t>& ids) {
            auto p = idsPrompt(ids);
            const auto f = engine.forward(p);
            const auto V = static_cast<std::size_t>(f.vocabSize);
            return filteredSoftmax(f.logits.data() + (f.ids.size() - 1) * V, V, T, s.topK);
        };
        const auto p1 = lastRow(prompt.ids);
        std::map<std::int64_t, double> expected;
        std::map<std::int64_t, std::vector<double>> p2;  // p(. | x1)
        for (std::size_t x1 = 0; x1 < p1.size(); ++x1) {
            if (p1[x1] == 0) continue;
            auto ids = prompt.ids;
            ids.push_back(static_cast<std::int64_t>(x1));
            p2[static_cast<std::int64_t>(x1)] = lastRow(ids);
            const auto& row = p2[static_cast<std::int64_t>(x1)];
            for (std::size_t x2 = 0; x2 < row.size(); ++x2)
                if (row[x2] > 0) expected[static_cast<std::int64_t>(x1 * row.size() + x2)] = p1[x1] * row[x2];
        }

        const int N = 1200;
        std::map<std::int64_t, int> observed;
        double accepted = 0, expectedAccept = 0, variance = 0;
        int rejectedDrafts = 0;
        for (int n = 0; n < N; ++n) {
            s.seed = static_cast<std::uint64_t>(n);
            const auto r = engine.run(prompt, s);
            QCOMPARE(r.outputIds.size(), prompt.ids.size() + 2);
            QCOMPARE(r.steps.size(), std::size_t(1));
            const auto& st = r.steps[0];
            const auto x1 = r.outputIds[prompt.ids.size()], x2 = r.outputIds[prompt.ids.size() + 1];
            observed[x1 * static_cast<std::int64_t>(p1.size()) + x2] += 1;
            // The record: one drafted token, its p and q, the test's outcome, sum min(p, q).
            QCOMPARE(st.drafted.size(), std::size_t(1));
            QCOMPARE(st.rejectionTested.size(), std::size_t(1));
            const double pOfDraft = p2.at(x1)[static_cast<std::size_t>(st.drafted[0])];
            QVERIFY2(std::fabs(st.rejectionP[0] - pOfDraft) < 1e-5,
                     qPrintable(QString("recorded p %1, recomputed %2").arg(st.rejectionP[0]).arg(pOfDraft)));
            QVERIFY(st.rejectionQ[0] > 0);
            const bool ok = st.rejectionTested[0] == 1;
            if (ok) QCOMPARE(x2, st.drafted[0]);
            else ++rejectedDrafts;
            const double a = st.rejectionAcceptProb[0];
            accepted += ok;
            expectedAccept += a;
            variance += a * (1 - a);
        }
        const auto [stat, df] = chiSquare(expected, observed, N);
        qInfo("joint (x1, x2): chi-square %.2f, df %d (0.1%% critical %.2f); %zu outcomes; acceptance %.3f vs "
              "expected %.3f; %d drafts rejected",
              stat, df, chiSquareCritical999(df), observed.size(), accepted / N, expectedAccept / N, rejectedDrafts);
        QVERIFY(df >= 3);
        QVERIFY2(stat < chiSquareCritical999(df), qPrintable(QString("chi-square %1, df %2").arg(stat).arg(df)));
        // The drafter is imperfect here: some drafts must be rejected and resampled.
        QVERIFY(rejectedDrafts > 0);
        QVERIFY2(std::fabs(accepted - expectedAccept) < 4 * std::sqrt(variance),
                 qPrintable(QString("accepted %1, expected %2").arg(accepted).arg(expectedAccept)));
    }

    void samplingSettingsJson() {
        // Written before the loop revisions (results format 1): April loop, no filters, and
        // "top_k" was the recorded draft top-k.
        RunSettings s;
        readSamplingJson({{"temperature", 0.5}, {"seed", 9}, {"top_k", 7}}, s, "settings");
        QVERIFY(s.loop == LoopRevision::April2026);
        QCOMPARE(s.recordTopK, 7);
        QCOMPARE(s.topK, 0);
        QCOMPARE(s.topP, 1.0);
        QCOMPARE(s.temperature, 0.5);
        // Round trip of the current form.
        RunSettings in;
        in.temperature = 0.8;
        in.topP = 0.9;
        in.topK = 40;
        in.seed = 3;
        in.recordTopK = 8;
        nlohmann::json j = nlohmann::json::object();
        writeSamplingJson(j, in);
        QCOMPARE(j["loop"], "current");
        RunSettings out;
        readSamplingJson(j, out, "settings");
        QVERIFY(out.loop == LoopRevision::Current);
        QCOMPARE(out.topP, 0.9);
        QCOMPARE(out.topK, 40);
        QCOMPARE(out.recordTopK, 8);
        QCOMPARE(out.seed, std::uint64_t(3));
        j["loop"] = "april";
        try {
            readSamplingJson(j, out, "settings");
            QFAIL("an unknown loop must be refused");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("settings.loop: unknown loop revision 'april'"), e.what());
        }
    }

    void sampledCurrentRunIsSeededAndRecordsTheTest() {
        Engine engine;
        engine.loadTarget(demoTarget());
        engine.loadDrafter(demoDrafter());
        auto prompt = goldenPrompt(1);
        RunSettings s;
        s.maxNewTokens = 40;
        s.ignoreEos = true;
        s.temperature = 0.7;
        s.topP = 0.9;
        s.seed = 5;
        const auto a = engine.run(prompt, s);
        const auto b = engine.run(prompt, s);
        QCOMPARE(a.outputIds, b.outputIds);
        QCOMPARE(a.acceptanceLengths, b.acceptanceLengths);
        QCOMPARE(a.outputIds.size(), prompt.ids.size() + 40);
        for (const auto& st : a.steps) {
            QCOMPARE(st.rejectionP.size(), st.drafted.size());
            QCOMPARE(st.rejectionQ.size(), st.drafted.size());
            // Accepted prefix = the leading 1s of the test (cut only by the clipped last block).
            int lead = 0;
            while (lead < static_cast<int>(st.rejectionTested.size()) && st.rejectionTested[lead] == 1) ++lead;
            QVERIFY(st.acceptedCount <= lead);
            for (int j = 0; j < st.acceptedCount; ++j) QCOMPARE(st.targetTokens[j], st.drafted[j]);
            // Tested in order: 1s, then at most one 0, then untested (-1); p >= q always passes.
            for (std::size_t j = 0; j < st.rejectionTested.size(); ++j) {
                const int t = st.rejectionTested[j];
                QCOMPARE(t, j < static_cast<std::size_t>(lead) ? 1 : (j == static_cast<std::size_t>(lead) ? 0 : -1));
                if (st.rejectionP[j] >= st.rejectionQ[j] && t != -1) QCOMPARE(t, 1);
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestSpeculativeSampling)
#include "tst_speculative_sampling.moc"
