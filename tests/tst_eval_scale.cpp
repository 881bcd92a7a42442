// Evaluations larger than one engine: data-parallel replicas inside one process (eval
// --replicas) and shards across processes (eval --shard I/N, merge). The rules (shard
// syntax, device groups, thread division), replicas agreeing with one engine exactly,
// cancelling replicas, shard files merging into the unsharded file, and merge refusing
// bad or mismatching inputs by file and field.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/evaluation.h"
#include "draftscope/prompt_set.h"
#include "draftscope/results_file.h"
#include "draftscope/results_json.h"
#include "draftscope/results_merge.h"
#include "draftscope/settings_validation.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <thread>

using namespace draftscope;
using namespace testsupport;

namespace {

// Five lines; line 2 (0-based 1) has two turns, so with --turns all the items are
// a, b, b#turn2, c, d, e (indices 0..5). Shards of 2: lines 0, 2, 4 and 1, 3; of 3:
// lines 0, 3 (a, d), 1, 4 (b, b#turn2, e) and 2 (c).
const char* kPromptSet =
    "{\"id\": \"a\", \"prompt\": \"def fibonacci(n):\\n\"}\n"
    "{\"id\": \"b\", \"turns\": [\"Write a function that reverses a list.\", \"Now make it recursive.\"]}\n"
    "{\"id\": \"c\", \"prompt\": \"import os\\nimport sys\\n\"}\n"
    "{\"id\": \"d\", \"prompt\": \"class Stack:\\n\"}\n"
    "{\"id\": \"e\", \"prompt\": \"for i in range(10):\\n\"}\n";

struct CliResult {
    int exitCode = -1;
    QString out, err;
};

CliResult cli(const QStringList& args) {
    QProcess p;
    p.start(DRAFTSCOPE_CLI, args);
    p.waitForFinished(180000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

/// JSON of `j` without what is measured rather than computed: wall-clock times and the
/// device's peak memory (they differ between runs).
nlohmann::json computed(nlohmann::json j) {
    j.erase("timing_ms");
    j.erase("peak_device_bytes");
    return j;
}

/// Every field of a prompt as JSON, measurements left out.
nlohmann::json promptFields(const PromptResult& p) {
    nlohmann::json j = {{"id", p.id},       {"source_id", p.sourceId}, {"index", p.index},
                        {"line", p.line},   {"turn", p.turn},          {"error", p.error},
                        {"prompt", toJson(p.prompt)}};
    for (const auto& d : p.drafters) {
        j["runs"].push_back(computed(toJson(d.run)));
        for (const auto& t : d.trees) j["trees"].push_back(computed(toJson(t)));
        j["hidden_stats"].push_back(toJson(d.hiddenStats));
        j["hidden_stats_errors"].push_back(d.hiddenStatsError);
    }
    return j;
}

/// Every field a merged or replicated file must share with the single-engine file: the
/// whole document but producer, created_utc and measurements (docs/RESULTS_FORMAT.md,
/// "Shards"); numbers compare exactly (JSON equality compares doubles bit for bit).
void compareResults(const ResultsFile& got, const ResultsFile& want) {
    QCOMPARE(got.complete, want.complete);
    QCOMPARE(got.promptSetSha256, want.promptSetSha256);
    QCOMPARE(got.promptSetLines, want.promptSetLines);
    QCOMPARE(got.target.configSha256, want.target.configSha256);
    QCOMPARE(toJson(got.target.summary), toJson(want.target.summary));
    QCOMPARE(got.drafters.size(), want.drafters.size());
    for (std::size_t d = 0; d < want.drafters.size(); ++d)
        QCOMPARE(toJson(got.drafters[d].summary), toJson(want.drafters[d].summary));
    QCOMPARE(toJson(got.settings), toJson(want.settings));
    QCOMPARE(got.tokenPieces, want.tokenPieces);
    QCOMPARE(got.prompts.size(), want.prompts.size());
    for (std::size_t i = 0; i < want.prompts.size(); ++i) {
        QCOMPARE(promptFields(got.prompts[i]), promptFields(want.prompts[i]));
        if (want.prompts[i].error.empty()) QCOMPARE(got.prompts[i].drafters[0].run.tau, want.prompts[i].drafters[0].run.tau);
    }
}

}  // namespace

class TestEvalScale : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    std::string set_;
    QStringList common_;  // eval options shared by every CLI run
    ResultsFile single_;  // the unsharded one-replica CLI file
    QString singleJson_;
    std::vector<std::string> shards_;  // shard files of 3, shard 2 first

    std::string path(const QString& name) const { return tmp_.filePath(name).toStdString(); }

    /// `r` written to a new file `name`, after `edit`.
    template <class F>
    std::string edited(const ResultsFile& r, const QString& name, F&& edit) {
        ResultsFile copy = r;
        edit(copy);
        writeResultsFile(path(name), copy);
        return path(name);
    }

    QString mergeError(const std::vector<std::string>& files) {
        return errorOf([&] { mergeResultsFiles(files); });
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        set_ = path("set.jsonl");
        writeBytes(set_, kPromptSet);
        common_ = {"eval", "--target", QString::fromStdString(demoTarget()), "--drafter",
                   QString::fromStdString(demoDrafter()), "--prompts", QString::fromStdString(set_), "--max-new", "8",
                   "--ignore-eos", "--turns", "all", "--ddtree-budget", "4"};
    }

    void shardRule() {
        QCOMPARE(parseShard("0/1"), (ResultsShard{0, 1}));
        QCOMPARE(parseShard("7/8"), (ResultsShard{7, 8}));
        for (const char* bad : {"8/8", "1/0", "-1/2", "1", "a/2", "1/2/3", "", " 0/2", "0/"}) {
            const auto msg = errorOf([&] { parseShard(bad); });
            QVERIFY2(msg == QString("shard: expected I/N with 0 <= I < N (e.g. 0/8), found '%1'").arg(bad), qPrintable(msg));
        }
        // Lines are dealt k mod N after --limit; a line's turns stay together.
        EvalSettings s;
        s.allTurns = true;
        const auto entries = parsePromptSet(kPromptSet, "set.jsonl");
        QCOMPARE(plannedItems(entries, s), std::size_t{6});
        QCOMPARE(plannedItems(entries, s, {0, 2}), std::size_t{3});  // a, c, e
        QCOMPARE(plannedItems(entries, s, {1, 2}), std::size_t{3});  // b, b#turn2, d
        QCOMPARE(plannedItems(entries, s, {2, 3}), std::size_t{1});  // c
        s.limit = 2;
        QCOMPARE(plannedItems(entries, s, {1, 2}), std::size_t{2});
        QCOMPARE(plannedItems(entries, s, {2, 3}), std::size_t{0});
    }

    void replicaRules() {
        QCOMPARE(replicaDeviceGroups("cuda:0,cuda:1,cuda:2,cuda:3", 2),
                 (std::vector<std::string>{"cuda:0,cuda:1", "cuda:2,cuda:3"}));
        QCOMPARE(replicaDeviceGroups("cuda:0,cuda:1,cuda:2,cuda:3", 4),
                 (std::vector<std::string>{"cuda:0", "cuda:1", "cuda:2", "cuda:3"}));
        QCOMPARE(replicaDeviceGroups("cpu", 3), (std::vector<std::string>{"cpu", "cpu", "cpu"}));
        QCOMPARE(replicaDeviceGroups("cpu,cpu", 1), (std::vector<std::string>{"cpu,cpu"}));
        auto msg = errorOf([] { replicaDeviceGroups("cuda:0,cuda:1,cuda:2", 2); });
        QCOMPARE(msg, QString("device: expected one device, or a list whose length is a multiple of --replicas 2 (cut into "
                              "equal groups, one per replica), found 3 entries ('cuda:0,cuda:1,cuda:2')"));
        msg = errorOf([] { replicaDeviceGroups("cpu", 0); });
        QCOMPARE(msg, QString("replicas: expected an integer from 1 to 64, found 0"));
        msg = errorOf([] { replicaDeviceGroups("cuda:0,,cuda:1", 1); });  // entries as deviceList checks them
        QVERIFY2(msg.startsWith("device: expected cpu, cuda, cuda:N, a comma-separated list of them"), qPrintable(msg));
        QVERIFY2(msg.endsWith("found 'cuda:0,,cuda:1'"), qPrintable(msg));
        QCOMPARE(replicaDeviceGroups("auto", 1), (std::vector<std::string>{"auto"}));
        msg = errorOf([] { replicaDeviceGroups("auto", 2); });  // would give every replica every GPU
        QVERIFY2(msg.startsWith("device: expected a list of GPUs to cut into --replicas 2 groups"), qPrintable(msg));
        QVERIFY2(msg.endsWith("found 'auto'"), qPrintable(msg));

        // CPU threads are divided among the CPU replicas; GPU replicas keep --threads.
        LoadOptions o;
        o.threads = 0;
        auto r = replicaLoadOptions(o, 2, 8);
        QCOMPARE(r.size(), std::size_t{2});
        QCOMPARE(r[0].threads, 4);
        QCOMPARE(r[1].device, std::string("cpu"));
        o.threads = 3;
        QCOMPARE(replicaLoadOptions(o, 2, 8)[1].threads, 1);
        QCOMPARE(replicaLoadOptions(o, 4, 8)[3].threads, 1);  // at least one each
        QCOMPARE(replicaLoadOptions(o, 1, 8)[0].threads, 3);  // one replica: unchanged
        o.device = "cuda:0,cpu,cuda:1,cuda:2";
        r = replicaLoadOptions(o, 2, 8);
        QCOMPARE(r[0].device, std::string("cuda:0,cpu"));
        QCOMPARE(r[0].threads, 3);  // the only CPU replica
        QCOMPARE(r[1].threads, 3);  // no CPU entry: as given
        o.threads = -1;             // left for validate(LoadOptions) to refuse
        QCOMPARE(replicaLoadOptions(o, 2, 8)[0].threads, -1);
        // --gpu-memory: one limit per --device entry, each replica takes its group's.
        o.deviceMemory = {10, 20, 30, 40};
        r = replicaLoadOptions(o, 2, 8);
        QCOMPARE(r[0].deviceMemory, (std::vector<std::uint64_t>{10, 20}));
        QCOMPARE(r[1].deviceMemory, (std::vector<std::uint64_t>{30, 40}));
        o.device = "cuda:0";  // one shared device: every replica keeps its limit
        o.deviceMemory = {50};
        r = replicaLoadOptions(o, 2, 8);
        QCOMPARE(r[1].deviceMemory, (std::vector<std::uint64_t>{50}));
    }

    /// Engines keep their own CPU thread count on whichever thread runs them: libtorch's
    /// count is per thread, and a fresh thread would take the count set last by any thread.
    void enginesKeepTheirThreadCounts() {
        LoadOptions one, two;
        one.threads = 1;
        two.threads = 2;
        Engine a, b;
        a.loadTarget(demoTarget(), one);  // loaded here, run on other threads
        a.loadDrafter(demoDrafter());
        b.loadTarget(demoTarget(), two);  // set last
        b.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 4;
        auto seen = [&](Engine& e) {
            int threads = -1;
            std::thread([&] { e.run(idsPrompt({1, 2, 3}), s, [&](std::int64_t, std::int64_t) { threads = intraOpThreads(); }); })
                .join();
            return threads;
        };
        QCOMPARE(seen(a), 1);
        QCOMPARE(seen(b), 2);
        QCOMPARE(seen(a), 1);
    }

    /// Two engines on two threads give the file one engine gives; cancelling stops both
    /// and keeps what finished, in order.
    void replicasMatchOneEngine() {
        LoadOptions one;
        one.threads = 1;
        Engine a, b;
        for (Engine* e : {&a, &b}) {
            e->loadTarget(demoTarget(), one);
            e->loadDrafter(demoDrafter());
        }
        const auto entries = parsePromptSet(kPromptSet, "set.jsonl");
        EvalSettings s;
        s.run.maxNewTokens = 8;
        s.run.ignoreEos = true;
        s.allTurns = true;
        s.histogramBins = 8;
        const auto want = runEvaluation(a, entries, s);
        std::vector<std::size_t> planned;
        double last = -1;
        bool monotone = true;
        EvalCallbacks cb;
        cb.itemDone = [&](const PromptResult&, std::size_t index, std::size_t items) {
            QCOMPARE(items, std::size_t{6});
            planned.push_back(index);
        };
        cb.progress = [&](const EvalProgress& p) {
            monotone = monotone && p.fraction() >= last - 1e-9;
            last = p.fraction();
        };
        const auto got = runEvaluation({&a, &b}, entries, s, {}, cb);
        QVERIFY(monotone);
        std::sort(planned.begin(), planned.end());
        QCOMPARE(planned, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
        QCOMPARE(got.prompts.size(), std::size_t{6});
        QCOMPARE(got.prompts[2].id, std::string("b#turn2"));
        QCOMPARE(got.prompts[2].index, std::int64_t{2});
        compareResults(got, want);

        // A shard on two replicas: its lines only, with their whole-set indices.
        const auto shard = runEvaluation({&a, &b}, entries, s, {1, 2});
        QCOMPARE(shard.shard, (ResultsShard{1, 2}));
        QCOMPARE(shard.prompts.size(), std::size_t{3});
        QCOMPARE(shard.prompts[2].id, std::string("d"));
        QCOMPARE(shard.prompts[2].index, std::int64_t{4});
        QCOMPARE(toJson(shard.prompts[2].drafters[0].hiddenStats), toJson(want.prompts[4].drafters[0].hiddenStats));

        std::atomic<bool> cancel{false};
        EvalCallbacks stop;
        stop.itemDone = [&](const PromptResult&, std::size_t, std::size_t) { cancel = true; };
        const auto cut = runEvaluation({&a, &b}, entries, s, {}, stop, &cancel);
        QVERIFY(!cut.complete);
        QVERIFY(!cut.prompts.empty() && cut.prompts.size() < 6);
        for (std::size_t i = 1; i < cut.prompts.size(); ++i) QVERIFY(cut.prompts[i - 1].index < cut.prompts[i].index);
    }

    /// eval --replicas 2 --device cpu writes the file one replica writes (threads: 2 shared
    /// by two replicas, 1 each, as the single run).
    void cliReplicasMatchOneReplica() {
        const QString single = tmp_.filePath("single.dsresults"), two = tmp_.filePath("two.dsresults");
        singleJson_ = tmp_.filePath("single.json");
        auto r = cli(common_ + QStringList{"--threads", "1", "--out", single, "--json", singleJson_});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        r = cli(common_ + QStringList{"--replicas", "2", "--device", "cpu", "--threads", "2", "--out", two});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("replica 1: loading target") && r.err.contains("1 CPU threads") &&
                     r.err.contains("on 2 replicas"),
                 qPrintable(r.err));
        QVERIFY2(r.out.contains("[6/6]"), qPrintable(r.out));
        single_ = readResultsFile(single.toStdString());
        QCOMPARE(single_.prompts.size(), std::size_t{6});
        QCOMPARE(single_.shard, ResultsShard{});
        compareResults(readResultsFile(two.toStdString()), single_);

        r = cli(common_ + QStringList{"--replicas", "2", "--device", "cpu,cpu,cpu", "--out", two});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("--device: expected one device, or a list whose length is a multiple of --replicas 2") &&
                     !r.err.contains("loading"),
                 qPrintable(r.err));
        r = cli(common_ + QStringList{"--shard", "2/2", "--out", two});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("--shard: expected I/N with 0 <= I < N (e.g. 0/8), found '2/2'"), qPrintable(r.err));
    }

    /// Shards of 3 (uneven: 2, 3 and 1 prompts) merge into the unsharded file, and the
    /// merged --json summary equals eval --json's in everything but the file names.
    void cliShardsMergeToSingleRun() {
        QVERIFY(!single_.prompts.empty());
        const int n = 3;
        {
            QStringList files;
            std::vector<std::string> paths;
            for (int i = n - 1; i >= 0; --i) {  // any order
                const QString part = tmp_.filePath(QString("part%1of%2.dsresults").arg(i).arg(n));
                const auto r = cli(common_ + QStringList{"--threads", "1", "--shard", QString("%1/%2").arg(i).arg(n), "--out", part});
                QVERIFY2(r.exitCode == 0, qPrintable(r.err));
                QVERIFY2(r.err.contains(QString("of shard %1/%2").arg(i).arg(n)), qPrintable(r.err));
                files << part;
                paths.push_back(part.toStdString());
            }
            const auto part0 = readResultsFile(paths.back());
            QCOMPARE(part0.shard, (ResultsShard{0, n}));
            QCOMPARE(part0.prompts.front().id, std::string("a"));
            shards_ = paths;

            const QString merged = tmp_.filePath(QString("merged%1.dsresults").arg(n));
            const QString json = tmp_.filePath(QString("merged%1.json").arg(n));
            const auto r = cli(QStringList{"merge"} + files + QStringList{"--out", merged, "--json", json});
            QVERIFY2(r.exitCode == 0, qPrintable(r.err));
            QVERIFY2(r.out.contains("macro tau = "), qPrintable(r.out));
            const auto file = readResultsFile(merged.toStdString());
            QCOMPARE(file.shard, ResultsShard{});
            QVERIFY(file.producer.rfind("draftscope-cli merge", 0) == 0);
            compareResults(file, single_);

            auto got = readJson(json.toStdString()), want = readJson(singleJson_.toStdString());
            for (auto* j : {&got, &want}) j->erase("results_file");
            QCOMPARE(got["macro_tau"].get<double>(), want["macro_tau"].get<double>());
            QCOMPARE(got, want);
        }
    }

    void mergeRefusesBadInput() {
        QCOMPARE(shards_.size(), std::size_t{3});
        const std::string p1 = shards_[1], p0 = shards_[2];  // a, d and b, b#turn2, e
        const auto r0 = readResultsFile(p0), r1 = readResultsFile(p1);
        const QString n0 = QString::fromStdString(p0), n1 = QString::fromStdString(p1);

        auto msg = mergeError({p0});
        QVERIFY2(msg == "cannot merge: shard 1/3 is missing (expected one file for each shard 0..2, found 1 file(s))", qPrintable(msg));
        msg = mergeError({p0, p1, p0});
        QVERIFY2(msg.contains("is given twice") && msg.contains(n0), qPrintable(msg));
        const auto copy0 = path("copy0.dsresults");
        std::filesystem::copy_file(p0, copy0);
        msg = mergeError({p0, copy0});
        QVERIFY2(msg.contains("holds shard 0/3, as '" + n0 + "' does"), qPrintable(msg));

        const auto settings = edited(r1, "settings.dsresults", [](ResultsFile& r) { r.settings.run.maxNewTokens = 9; });
        msg = mergeError({p0, settings});
        QVERIFY2(msg == QString("cannot merge: file '%1': results.settings.max_new_tokens: expected 8 (as '%2'), found 9")
                            .arg(QString::fromStdString(settings), n0),
                 qPrintable(msg));
        const auto model = edited(r1, "model.dsresults", [](ResultsFile& r) { r.drafters[0].configSha256 = "00"; });
        msg = mergeError({p0, model});
        QVERIFY2(msg.contains("results.drafters[0].config_sha256: expected \"") && msg.contains("found \"00\""), qPrintable(msg));
        msg = mergeError({p0, edited(r1, "target.dsresults", [](ResultsFile& r) { r.target.summary.parameters += 1; })});
        QVERIFY2(msg.contains("results.target.parameters: expected " + QString::number(r0.target.summary.parameters)),
                 qPrintable(msg));
        msg = mergeError({p0, edited(r1, "set.dsresults", [](ResultsFile& r) { r.promptSetSha256 = "ab"; })});
        QVERIFY2(msg.contains("results.prompt_set.sha256: expected") && msg.contains("found \"ab\""), qPrintable(msg));
        msg = mergeError({p0, edited(r1, "count.dsresults", [](ResultsFile& r) { r.shard = {1, 4}; })});
        QVERIFY2(msg.contains("results.shard.count: expected 3") && msg.contains("found 4"), qPrintable(msg));
        msg = mergeError({p0, edited(r1, "overlap.dsresults", [&](ResultsFile& r) { r.prompts[0].index = r0.prompts[1].index; }),
                          shards_[0]});
        QVERIFY2(msg.contains("prompt index 4 ('b') is also in '" + n0 + "' (shards overlap)"), qPrintable(msg));
        msg = mergeError({p0, edited(r1, "cut.dsresults", [](ResultsFile& r) { r.complete = false; })});
        QVERIFY2(msg.contains("is incomplete (its eval was interrupted"), qPrintable(msg));
        msg = mergeError({p0, edited(r1, "old.dsresults", [](ResultsFile& r) { r.prompts[1].index = -1; })});
        QVERIFY2(msg.contains("prompts[1] ('b#turn2') has no recorded index"), qPrintable(msg));
        const auto shared = std::find_if(r1.tokenPieces.begin(), r1.tokenPieces.end(),
                                         [&](const auto& piece) { return r0.tokenPieces.count(piece.first) > 0; });
        QVERIFY(shared != r1.tokenPieces.end());
        msg = mergeError({p0, edited(r1, "pieces.dsresults", [&](ResultsFile& r) { r.tokenPieces[shared->first] += "x"; }),
                          shards_[0]});
        QVERIFY2(msg.contains("token_pieces["), qPrintable(msg));

        // Not results files, through the CLI: a checkpoint, a truncated file.
        const QString out = tmp_.filePath("never.dsresults");
        auto r = cli({"merge", n0, QString::fromStdString(demoDrafter() + "/model.safetensors"), "--out", out});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("not a draftscope results file"), qPrintable(r.err));
        const std::string bytes = readFileToString(p1);
        const auto truncated = path("truncated.dsresults");
        writeBytes(truncated, bytes.substr(0, bytes.size() / 2));
        r = cli({"merge", n0, QString::fromStdString(truncated), "--out", out});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("cannot open results file") && r.err.contains("truncated.dsresults"), qPrintable(r.err));
        r = cli({"merge", n0, QString::fromStdString(settings), "--out", out});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("results.settings.max_new_tokens: expected 8"), qPrintable(r.err));
        QVERIFY(!QFile::exists(out));
    }
};

QTEST_GUILESS_MAIN(TestEvalScale)
#include "tst_eval_scale.moc"
