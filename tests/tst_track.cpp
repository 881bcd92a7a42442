// Following a training run (issue 32; docs/TRACK.md): checkpoints found in every trainer
// layout and ordered by step, the numbers of `track` equal to `eval`'s on each checkpoint
// (runEvaluation + aggregateDrafter), resuming after an interruption between and inside
// checkpoints without redoing finished work, the planted regression flagged with the block
// positions that lost most, the findings' rules on hand-made series, trainer logs (JSON lines,
// CSV, trainer_state.json), the run index round trip and its refusal of another run's inputs,
// and the CLI (exit codes, resume, --watch picking up a checkpoint written while it runs).

// Torch headers first (torch_save_support.h): ATen uses `slots`, which Qt defines as a macro.
#include "track_support.h"

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/evaluation.h"
#include "draftscope/prompt_set.h"
#include "draftscope/results_summary.h"
#include "draftscope/training_run.h"
#include "test_support.h"

#include <QProcess>
#include <QtTest>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <thread>

using namespace draftscope;
using namespace testsupport;
using namespace testsupport::track;
namespace fs = std::filesystem;

namespace {

/// Two prompts of the demo set, 24 new tokens: small enough for many checkpoints.
EvalSettings smallSettings() {
    EvalSettings s;
    s.run.maxNewTokens = 24;
    s.limit = 2;
    return s;
}

std::string promptSet() { return std::string(DRAFTSCOPE_DEMO_DIR) + "/../prompts/demo-prompts.jsonl"; }

TrackSettings trackSettings(const std::string& out) {
    TrackSettings t;
    t.eval = smallSettings();
    t.outDir = out;
    t.settleSeconds = 0;
    return t;
}

std::vector<std::int64_t> stepsOf(const TrackIndex& x) {
    std::vector<std::int64_t> s;
    for (const auto& c : x.checkpoints) s.push_back(c.checkpoint.step);
    return s;
}

/// A TrackedCheckpoint with per-prompt taus (and gaps) for the findings' rules.
TrackedCheckpoint synthetic(std::int64_t step, const std::vector<double>& taus, const std::vector<double>& tfExpected = {}) {
    TrackedCheckpoint c;
    c.checkpoint.step = step;
    c.status = "done";
    double sum = 0;
    for (std::size_t i = 0; i < taus.size(); ++i) {
        c.promptIds.push_back(std::to_string(i) + "p");  // (GCC 12's -Wrestrict misfires on "p" + to_string)
        sum += taus[i];
    }
    c.promptTaus = taus;
    c.tau = sum / static_cast<double>(taus.size());
    c.promptTeacherForcedExpected = tfExpected.empty() ? taus : tfExpected;
    double gap = 0;
    for (std::size_t i = 0; i < taus.size(); ++i) gap += c.promptTeacherForcedExpected[i] - taus[i];
    c.gap = gap / static_cast<double>(taus.size());
    c.positionAcceptance = {1.0, 0.8, 0.6, 0.4};
    return c;
}

}  // namespace

class TestTrack : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    std::string path(const std::string& name) const { return tmp_.path().toStdString() + "/" + name; }
    std::vector<PromptSetEntry> entries_;
    /// The reference run: the whole series in the SpecForge layout, tracked without interruption.
    TrackIndex reference_;

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        entries_ = loadPromptSetFile(promptSet());
        writeSeries(path("specforge"), "specforge");
        Engine e;
        e.loadTarget(demoTarget());
        reference_ = trackRun({&e}, path("specforge"), entries_, promptSet(), trackSettings(path("specforge-out")));
    }

    void findsEveryLayoutInStepOrder_data() {
        QTest::addColumn<QString>("layout");
        QTest::addColumn<QString>("stepFrom");
        QTest::newRow("specforge") << "specforge" << "name";
        QTest::newRow("step") << "step" << "name";
        QTest::newRow("hf-trainer") << "hf-trainer" << "trainer_state.json";
        QTest::newRow("pt") << "pt" << "checkpoint field";
    }
    void findsEveryLayoutInStepOrder() {
        QFETCH(QString, layout);
        QFETCH(QString, stepFrom);
        const auto dir = path("find-" + layout.toStdString());
        // Written out of order, beside things that are not checkpoints.
        for (std::size_t i : {2u, 0u, 1u})
            writeCheckpoint(dir, layout.toStdString(), kSeries[i].first, interpolatedDrafter(kSeries[i].second, 7));
        fs::create_directories(dir + "/tensorboard");
        fs::create_directories(dir + "/step_77");  // a checkpoint folder still empty
        writeBytes(dir + "/train.log", "loss 1.0\n");
        std::vector<SkippedCheckpoint> skipped;
        const auto found = findRunCheckpoints(dir, 0, &skipped);
        QCOMPARE(found.size(), std::size_t(3));
        for (std::size_t i = 0; i < 3; ++i) {
            QCOMPARE(found[i].step, kSeries[i].first);
            QCOMPARE(QString::fromStdString(found[i].layout), layout);
            QCOMPARE(QString::fromStdString(found[i].stepFrom), stepFrom);
            QVERIFY(!found[i].signature.empty());
        }
        QCOMPARE(skipped.size(), std::size_t(1));
        QVERIFY2(skipped[0].path.find("step_77") != std::string::npos && skipped[0].reason.find("no *.safetensors") != std::string::npos,
                 skipped[0].reason.c_str());
        // A settle time skips what was just written (a trainer may still be writing it).
        std::vector<SkippedCheckpoint> young;
        QVERIFY(findRunCheckpoints(dir, 3600, &young).empty());
        QCOMPARE(young.size(), std::size_t(4));
    }

    void ptStepFromNameWhenContentHasNone() {
        // A .pt without a step entry takes the last number of its name; a second checkpoint
        // of the same step loses to the directory.
        const auto dir = path("pt-names");
        writeCheckpoint(dir, "step", 300, interpolatedDrafter(1.0, 1));
        writeTorchSave(dir + "/model_step_300.pt", {{"fc.weight", {{2, 2}, {1, 2, 3, 4}}}}, 300);
        {  // no step entry: {"model": {...}} only
            Pickle p;
            p.op('}').op('(').str("model").op('}').op('(').str("w").tensor("0", 4, 0, {2, 2}, {2, 1}).op('u').op('u').stop();
            writeArchive(dir + "/ckpt_0450.pt", {{"data.pkl", p.b}, {"byteorder", "little"},
                                                 {"data/0", std::string(16, '\0')}});
        }
        writeTorchSave(dir + "/nameless.pt", {{"fc.weight", {{1}, {1}}}}, 0);
        fs::copy_file(demoDrafter() + "/config.json", dir + "/config.json");
        std::vector<SkippedCheckpoint> skipped;
        const auto found = findRunCheckpoints(dir, 0, &skipped);
        QCOMPARE(found.size(), std::size_t(3));
        QCOMPARE(found[0].step, std::int64_t(0));  // nameless.pt's own step field
        QCOMPARE(found[1].step, std::int64_t(300));
        QCOMPARE(found[1].layout, std::string("step"));
        QCOMPARE(found[2].step, std::int64_t(450));
        QCOMPARE(found[2].stepFrom, std::string("name"));
        QCOMPARE(skipped.size(), std::size_t(1));
        QVERIFY(skipped[0].reason.find("step 300 is also") != std::string::npos);
    }

    void trackEqualsEvalOnEachCheckpoint() {
        // The index's numbers are aggregateDrafter's over runEvaluation with the same settings,
        // exactly, and each results file is the checkpoint's eval file.
        QCOMPARE(stepsOf(reference_), (std::vector<std::int64_t>{1000, 2000, 3000, 4000, 5000}));
        Engine e;
        e.loadTarget(demoTarget());
        for (const auto& c : reference_.checkpoints) {
            QCOMPARE(c.status, std::string("done"));
            e.truncateDrafters(0);
            e.loadDrafter(c.checkpoint.path);
            const auto results = runEvaluation(e, entries_, smallSettings());
            const auto agg = aggregateDrafter(results, 0);
            QCOMPARE(c.tau, agg.macroTau);
            QCOMPARE(c.positionAcceptance, agg.perPositionAcceptance);
            QCOMPARE(c.promptTaus.size(), std::size_t(2));
            const auto stored = readResultsFile(path("specforge-out") + "/" + c.resultsFile);
            QCOMPARE(aggregateDrafter(stored, 0).macroTau, agg.macroTau);
            QCOMPARE(stored.prompts[0].drafters[0].run.outputIds, results.prompts[0].drafters[0].run.outputIds);
            QVERIFY(c.teacherForcedTau >= 1.0 && c.teacherForcedExpected >= 1.0);
            QCOMPARE(c.gap, (c.promptTeacherForcedExpected[0] - c.promptTaus[0] + c.promptTeacherForcedExpected[1] - c.promptTaus[1]) / 2);
        }
        // tau rises along the series and falls at the planted step.
        const auto& x = reference_.checkpoints;
        QVERIFY2(x[2].tau > x[0].tau + 0.3, qPrintable(QString("%1 vs %2").arg(x[2].tau).arg(x[0].tau)));
        QVERIFY(x[3].tau < x[2].tau);
        QCOMPARE(x[4].tau, x[2].tau);  // the same weights
        QCOMPARE(reference_.bestStep, std::int64_t(3000));
    }

    void flagsThePlantedRegression() {
        std::vector<TrackFinding> regressions;
        for (const auto& f : reference_.findings)
            if (f.id == "regression") regressions.push_back(f);
        QCOMPARE(regressions.size(), std::size_t(1));
        const auto& f = regressions[0];
        QCOMPARE(f.step, std::int64_t(4000));
        QCOMPARE(f.fromStep, std::int64_t(3000));
        QVERIFY(!f.positions.empty() && f.positions[0] >= 1);
        QVERIFY2(QString::fromStdString(f.message).contains("tau fell from") &&
                     QString::fromStdString(f.message).contains("block positions that lost most"),
                 f.message.c_str());
    }

    void otherLayoutsGiveTheSameNumbers_data() {
        QTest::addColumn<QString>("layout");
        QTest::newRow("step") << "step";
        QTest::newRow("hf-trainer") << "hf-trainer";
        QTest::newRow("pt") << "pt";
    }
    void otherLayoutsGiveTheSameNumbers() {
        QFETCH(QString, layout);
        const auto run = path("layout-" + layout.toStdString());
        writeSeries(run, layout.toStdString(), 2);
        Engine e;
        e.loadTarget(demoTarget());
        const auto x = trackRun({&e}, run, entries_, promptSet(), trackSettings(run + "/out"));
        QCOMPARE(stepsOf(x), (std::vector<std::int64_t>{1000, 2000}));
        for (std::size_t i = 0; i < 2; ++i) {
            QVERIFY2(x.checkpoints[i].status == "done", x.checkpoints[i].error.c_str());
            QCOMPARE(x.checkpoints[i].tau, reference_.checkpoints[i].tau);
            QCOMPARE(x.checkpoints[i].teacherForcedExpected, reference_.checkpoints[i].teacherForcedExpected);
        }
    }

    void resumesWithoutRedoingWork() {
        // Interrupted after the second checkpoint, then inside the fourth (after its first
        // prompt): each rerun starts only what is left, keeps the finished prompt, and ends
        // with the uninterrupted run's numbers.
        const auto run = path("specforge");
        const auto out = path("resume-out");
        Engine e;
        e.loadTarget(demoTarget());
        std::atomic<bool> cancel{false};
        TrackCallbacks cb;
        cb.checkpointDone = [&](const TrackedCheckpoint& c, const TrackIndex&) {
            if (c.checkpoint.step == 2000) cancel = true;
        };
        auto first = trackRun({&e}, run, entries_, promptSet(), trackSettings(out), cb, &cancel);
        QCOMPARE(stepsOf(first), (std::vector<std::int64_t>{1000, 2000}));

        cancel = false;
        std::vector<std::int64_t> started;
        std::vector<std::string> logs;
        TrackCallbacks cb2;
        cb2.checkpointStarted = [&](const RunCheckpoint& c, std::size_t, std::size_t) { started.push_back(c.step); };
        cb2.progress = [&](const EvalProgress& p) {
            if (started.back() == 4000 && p.item == 1) cancel = true;  // the second prompt has begun
        };
        const auto second = trackRun({&e}, run, entries_, promptSet(), trackSettings(out), cb2, &cancel);
        QCOMPARE(started, (std::vector<std::int64_t>{3000, 4000}));
        QCOMPARE(second.checkpoints.back().status, std::string("partial"));

        cancel = false;
        started.clear();
        cb2.progress = nullptr;
        cb2.log = [&](const std::string& line) { logs.push_back(line); };
        const auto third = trackRun({&e}, run, entries_, promptSet(), trackSettings(out), cb2, &cancel);
        QCOMPARE(started, (std::vector<std::int64_t>{4000, 5000}));
        bool kept = false;
        for (const auto& l : logs) kept = kept || l.find("step 4000: continuing the interrupted evaluation (1 prompt(s) kept)") != std::string::npos;
        QVERIFY(kept);
        QCOMPARE(stepsOf(third), stepsOf(reference_));
        for (std::size_t i = 0; i < third.checkpoints.size(); ++i) {
            QCOMPARE(third.checkpoints[i].status, std::string("done"));
            QCOMPARE(third.checkpoints[i].tau, reference_.checkpoints[i].tau);
            QCOMPARE(third.checkpoints[i].promptTaus, reference_.checkpoints[i].promptTaus);
            QCOMPARE(third.checkpoints[i].gap, reference_.checkpoints[i].gap);
        }
        // Nothing left: a fourth run starts no checkpoint.
        started.clear();
        trackRun({&e}, run, entries_, promptSet(), trackSettings(out), cb2, &cancel);
        QVERIFY(started.empty());
    }

    void refusesAnIndexOfAnotherRun() {
        auto s = trackSettings(path("specforge-out"));
        s.eval.run.maxNewTokens = 12;
        const auto msg = errorOf([&] { resumableTrackIndex(path("specforge"), demoTarget(), promptSet(), s); });
        QVERIFY2(msg.contains("settings.max_new_tokens 24, this run has 12") && msg.contains("another --out"), qPrintable(msg));
        auto t = trackSettings(path("specforge-out"));
        const auto tmsg = errorOf([&] {
            resumableTrackIndex(path("specforge"), dataPath("models/tiny-qwen2"), promptSet(), t);
        });
        QVERIFY2(tmsg.contains("made with the target"), qPrintable(tmsg));
    }

    void indexRoundTrips() {
        const auto x = readTrackIndex(path("specforge-out") + "/track.json");
        QCOMPARE(stepsOf(x), stepsOf(reference_));
        for (std::size_t i = 0; i < x.checkpoints.size(); ++i) {
            QCOMPARE(x.checkpoints[i].tau, reference_.checkpoints[i].tau);
            QCOMPARE(x.checkpoints[i].positionAcceptance, reference_.checkpoints[i].positionAcceptance);
            QCOMPARE(x.checkpoints[i].checkpoint.signature, reference_.checkpoints[i].checkpoint.signature);
        }
        QCOMPARE(x.findings.size(), reference_.findings.size());
        QCOMPARE(trackIndexPathOf(path("specforge-out")), path("specforge-out") + "/track.json");
        writeBytes(path("bad-index.json"), "{\"format\": \"something-else\"}");
        QVERIFY(errorOf([&] { readTrackIndex(path("bad-index.json")); }).contains("is not a draftscope run index"));
    }

    void findingRules() {
        TrackIndex x;
        // Steady: no finding. A drop of 0.5 on every prompt: a regression. Noise (+-0.5 on
        // alternate prompts): none.
        x.checkpoints = {synthetic(1, {2.0, 2.1, 1.9, 2.0}), synthetic(2, {2.0, 2.1, 1.9, 2.0}),
                         synthetic(3, {1.5, 1.6, 1.4, 1.5}), synthetic(4, {2.0, 1.1, 1.9, 1.0})};
        auto f = trackFindings(x);
        QCOMPARE(f.size(), std::size_t(1));
        QCOMPARE(f[0].id, std::string("regression"));
        QCOMPARE(f[0].step, std::int64_t(3));
        QCOMPARE(f[0].evidence[2].second, -0.5);  // mean_change
        // Below the margin (0.04 < 0.05): not flagged even though consistent.
        x.checkpoints = {synthetic(1, {2.0, 2.0, 2.0}), synthetic(2, {1.96, 1.96, 1.96})};
        QVERIFY(trackFindings(x).empty());
        // The gap widens at step 3 from its smallest earlier value (step 1), once.
        x.checkpoints = {synthetic(1, {2, 2, 2}, {2, 2, 2}), synthetic(2, {2, 2, 2}, {2.1, 2.1, 2.0}),
                         synthetic(3, {1.5, 1.6, 1.5}, {2.0, 2.0, 2.1}), synthetic(4, {1.2, 1.2, 1.2}, {2, 2, 2})};
        f = trackFindings(x);
        std::vector<std::string> ids;
        for (const auto& g : f) ids.push_back(g.id + "@" + std::to_string(g.step));
        QCOMPARE(ids, (std::vector<std::string>{"regression@3", "gap-widening@3", "regression@4"}));
        QCOMPARE(f[1].fromStep, std::int64_t(1));
        // A drafter that collapses moves a negative gap to 0: a regression, not a widening gap.
        x.checkpoints = {synthetic(1, {2.0, 2.1, 1.9}, {1.7, 1.8, 1.6}), synthetic(2, {1.0, 1.0, 1.0}, {1.0, 1.0, 1.0})};
        f = trackFindings(x);
        QCOMPARE(f.size(), std::size_t(1));
        QCOMPARE(f[0].id, std::string("regression"));
        // With a trainer log, the regression says what the log claimed over the same steps.
        x.trainerLog = TrainerLog{"log.jsonl", "train/acc_len", {{1, 3.1}, {2, 3.4}}};
        QVERIFY2(trackFindings(x)[0].message.find("meanwhile the trainer logged train/acc_len 3.100 -> 3.400") != std::string::npos,
                 trackFindings(x)[0].message.c_str());
    }

    void readsTrainerLogs() {
        writeBytes(path("log.jsonl"), "{\"step\": 100, \"loss\": 3.2, \"train/accept_len\": 1.5}\n\n"
                                      "{\"step\": 200, \"loss\": 2.9}\n{\"step\": 300, \"train/accept_len\": 2.25}\n");
        auto log = readTrainerLog(path("log.jsonl"));
        QCOMPARE(log.metric, std::string("train/accept_len"));
        QCOMPARE(log.points, (std::vector<std::pair<std::int64_t, double>>{{100, 1.5}, {300, 2.25}}));
        writeBytes(path("log.csv"), "step,loss,acc\n10,1.0,0.5\n20,0.9,\"0.75\"\n");
        log = readTrainerLog(path("log.csv"));
        QCOMPARE(log.metric, std::string("acc"));
        QCOMPARE(log.points.size(), std::size_t(2));
        QCOMPARE(log.points[1].second, 0.75);
        writeBytes(path("nostep.csv"), "epoch,acc\n1,0.5\n");
        QVERIFY(errorOf([&] { readTrainerLog(path("nostep.csv")); }).contains("no step column"));
        const auto msg = errorOf([&] { readTrainerLog(path("log.jsonl"), "train/acc"); });
        QVERIFY2(msg.contains("no record has both a step and 'train/acc'") && msg.contains("numeric keys found: loss, step, train/accept_len"),
                 qPrintable(msg));
        writeBytes(path("broken.jsonl"), "{\"step\": 1}\n{not json\n");
        QVERIFY(errorOf([&] { readTrainerLog(path("broken.jsonl")); }).contains("line 2"));
        // HF Trainer's trainer_state.json log_history, found in the newest checkpoint-N.
        const auto run = path("hf-log");
        fs::create_directories(run + "/checkpoint-20");
        writeJson(run + "/checkpoint-20/trainer_state.json",
                  {{"global_step", 20}, {"log_history", {{{"step", 10}, {"eval_acceptance_length", 1.8}}, {{"step", 20}, {"eval_acceptance_length", 2.4}}}}});
        fs::create_directories(run + "/checkpoint-10");
        QCOMPARE(findTrainerLog(run), run + "/checkpoint-20/trainer_state.json");
        QCOMPARE(readTrainerLog(findTrainerLog(run)).points.size(), std::size_t(2));
    }

    void cliTracksResumesAndWatches() {
        const auto run = path("cli-run");
        writeSeries(run, "step", 2);
        writeBytes(run + "/metrics.jsonl", "{\"step\": 1000, \"acceptance\": 1.2}\n{\"step\": 2000, \"acceptance\": 2.6}\n");
        const QStringList common = {"--target", QString::fromStdString(demoTarget()), "--prompts",
                                    QString::fromStdString(promptSet()), "--limit", "2", "--max-new", "24", "--settle", "0"};
        QProcess p;
        p.start(DRAFTSCOPE_CLI, QStringList{"track", QString::fromStdString(run)} + common);
        QVERIFY(p.waitForFinished(240000));
        const auto out = QString::fromUtf8(p.readAllStandardOutput());
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(out.contains("step 1000 (step step_1000): tau") && out.contains("step 2000 (step step_2000): tau") &&
                     out.contains("trainer log: ") && out.contains("acceptance, 2 points"),
                 qPrintable(out));
        QVERIFY(fs::exists(run + "/draftscope-track/track.json"));
        // Again: nothing to do. With other settings: refused before loading, naming the field.
        p.start(DRAFTSCOPE_CLI, QStringList{"track", QString::fromStdString(run)} + common);
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("every checkpoint found is evaluated"));
        auto other = common;
        other[other.indexOf("24")] = "16";
        p.start(DRAFTSCOPE_CLI, QStringList{"track", QString::fromStdString(run)} + other);
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 1);
        const auto err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains("settings.max_new_tokens 24, this run has 16") && !err.contains("loading target"), qPrintable(err));

        // --replicas and --shard as eval: shard 0 of 2 holds line 0 of the two taken.
        p.start(DRAFTSCOPE_CLI, QStringList{"track", QString::fromStdString(run), "--out", QString::fromStdString(run + "/shard0"),
                                            "--replicas", "2", "--shard", "0/2"} + common);
        QVERIFY(p.waitForFinished(240000));
        QCOMPARE(p.exitCode(), 0);
        const auto shard = readResultsFile(run + "/shard0/step-000000001000.shard-0-of-2.dsresults");
        QCOMPARE(shard.prompts.size(), std::size_t(1));
        QCOMPARE(shard.shard.count, 2);
        QCOMPARE(readTrackIndex(run + "/shard0/track.json").checkpoints[0].promptTaus[0], reference_.checkpoints[0].promptTaus[0]);

        // --watch: a checkpoint written while it runs is evaluated; Ctrl-C ends watching (exit 0).
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(DRAFTSCOPE_CLI, QStringList{"track", QString::fromStdString(run), "--watch", "--poll", "0.2"} + common);
        QVERIFY(p.waitForStarted());
        QString seen;
        auto waitFor = [&](const QString& text, int ms) {
            QElapsedTimer t;
            t.start();
            while (!seen.contains(text) && t.elapsed() < ms) {
                p.waitForReadyRead(200);
                seen += QString::fromUtf8(p.readAll());
            }
            return seen.contains(text);
        };
        QVERIFY2(waitFor("every checkpoint found is evaluated", 120000), qPrintable(seen));
        writeCheckpoint(run, "step", 3000, interpolatedDrafter(1.0, 7));
        QVERIFY2(waitFor("step 3000 (step step_3000): tau", 120000), qPrintable(seen));
        ::kill(static_cast<pid_t>(p.processId()), SIGINT);
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        QCOMPARE(stepsOf(readTrackIndex(run + "/draftscope-track/track.json")), (std::vector<std::int64_t>{1000, 2000, 3000}));
    }
};

QTEST_GUILESS_MAIN(TestTrack)
#include "tst_track.moc"
