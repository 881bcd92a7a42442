// Hidden-state statistics over a run's whole committed sequence (prompt + generated tokens):
// the generated positions are marked, and every per-position statistic equals the one
// computed by hand (double precision) from a plain Engine::forward over the same ids.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "test_support.h"

#include <QtTest>

#include <cmath>

using namespace draftscope;
using namespace testsupport;

class TestHiddenStatsGenerated : public QObject {
    Q_OBJECT

private slots:
    void generatedPositionsMatchAPlainForward() {
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        RunSettings settings;
        settings.maxNewTokens = 24;
        settings.ignoreEos = true;
        const auto run = e.run(goldenPrompt(0), settings);
        const auto P = static_cast<std::int64_t>(run.promptIds.size());
        const auto T = static_cast<std::int64_t>(run.outputIds.size());
        QVERIFY(T > P);

        const auto stats = e.hiddenStateStats(idsPrompt(run.outputIds), 0, 60, P);
        QCOMPARE(stats.ids, run.outputIds);
        QCOMPARE(stats.promptLength, P);
        QVERIFY(!stats.isGenerated(P - 1));
        QVERIFY(stats.isGenerated(P));
        QVERIFY(stats.isGenerated(T - 1));

        const auto f = e.forward(idsPrompt(run.outputIds));
        const auto H = f.hiddenSize;
        int checkedSeries = 0;
        for (const auto& s : stats.series) {
            if (s.layerId < 0) continue;  // the drafter's projected context is not in ForwardResult
            QCOMPARE(static_cast<std::int64_t>(s.rms.size()), T);
            const std::int64_t l = s.layerId + 1;  // hidden_states index (0 = embeddings)
            double worst = 0;
            for (std::int64_t t = 0; t < T; ++t) {
                const float* x = f.hiddenStates.data() + (l * T + t) * H;
                double sum = 0, sq = 0, maxAbs = 0;
                for (std::int64_t h = 0; h < H; ++h) {
                    sum += x[h];
                    sq += double(x[h]) * x[h];
                    maxAbs = std::max(maxAbs, std::fabs(double(x[h])));
                }
                const double mean = sum / H, rms = std::sqrt(sq / H);
                double var = 0;
                for (std::int64_t h = 0; h < H; ++h) var += (x[h] - mean) * (x[h] - mean);
                const double sd = std::sqrt(var / H);  // population std, as documented
                const auto i = static_cast<std::size_t>(t);
                QCOMPARE(double(s.maxAbs[i]), maxAbs);  // a max is exact
                worst = std::max({worst, std::fabs(s.rms[i] - rms) / rms, std::fabs(s.std[i] - sd) / sd,
                                  std::fabs(s.mean[i] - mean) / rms});
            }
            QVERIFY2(worst < 1e-5, qPrintable(QStringLiteral("%1: relative error %2").arg(s.name.c_str()).arg(worst)));
            ++checkedSeries;
        }
        QVERIFY(checkedSeries >= 1);

        // The prompt-only statistics (the old call) are the first P positions of the same values.
        const auto promptOnly = e.hiddenStateStats(idsPrompt(run.promptIds));
        QCOMPARE(promptOnly.promptLength, P);
        QVERIFY(!promptOnly.isGenerated(P - 1));
        for (std::size_t k = 0; k < promptOnly.series.size(); ++k)
            for (std::int64_t t = 0; t < P; ++t)
                QVERIFY(std::fabs(promptOnly.series[k].rms[std::size_t(t)] - stats.series[k].rms[std::size_t(t)]) <=
                        1e-5f * stats.series[k].rms[std::size_t(t)]);
    }

    void promptLengthBeyondTheSequenceIsRefused() {
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        QString message;
        try {
            e.hiddenStateStats(idsPrompt({10, 11, 12}), 0, 60, 4);
        } catch (const Error& err) {
            message = QString::fromStdString(err.what());
        }
        QVERIFY2(message.contains("prompt length 4 exceeds the sequence length 3"), qPrintable(message));
    }
};

QTEST_GUILESS_MAIN(TestHiddenStatsGenerated)
#include "tst_hidden_stats_generated.moc"
