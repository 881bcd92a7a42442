// Bad input through the engine and the CLI: each case gives a clear message naming what is
// wrong and where, a non-zero exit from the CLI, and never a crash. Also checks that a
// sharded checkpoint loads to the same model as its single-file original.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/safetensors.h"
#include "test_support.h"

#include <QProcess>
#include <QtTest>

#include <sys/stat.h>

#include <cstring>
#include <limits>

using namespace draftscope;
using namespace testsupport;

class TestBadInput : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::string dir(const std::string& name) const { return tmp_.path().toStdString() + "/" + name; }

    /// Rewrites `<d>/model.safetensors`, applying `edit` to each (name, dtype, shape, bytes).
    static void rewriteWeights(const std::string& d,
                               const std::function<bool(std::string&, DType&, std::vector<std::int64_t>&, std::string&)>& edit) {
        SafetensorsWriter w;
        {
            const auto f = SafetensorsFile::open(d + "/model.safetensors");
            for (const auto& t : f->tensors()) {
                std::string name = t.name, bytes(reinterpret_cast<const char*>(f->data(t)), t.byteSize());
                DType dt = t.dtype;
                auto shape = t.shape;
                if (edit(name, dt, shape, bytes)) w.add(name, dt, shape, bytes.data(), bytes.size());
            }
        }
        w.write(d + "/model.safetensors");
    }

    struct CliResult {
        int exitCode;
        QProcess::ExitStatus status;
        QString err;
    };
    static CliResult cli(const QStringList& args) {
        QProcess p;
        p.start(DRAFTSCOPE_CLI, args);
        p.waitForFinished(120000);
        return {p.exitCode(), p.exitStatus(), QString::fromUtf8(p.readAllStandardError())};
    }

private slots:
    void missingDirectory() {
        Engine e;
        const auto msg = errorOf([&] { e.loadTarget(dir("does-not-exist")); });
        QVERIFY2(msg.contains("not found") && msg.contains("does-not-exist"), qPrintable(msg));
    }

    void missingWeights() {
        const auto d = copyModel(demoTarget(), dir("noweights"));
        std::filesystem::remove(d + "/model.safetensors");
        Engine e;
        const auto msg = errorOf([&] { e.loadTarget(d); });
        QVERIFY2(msg.contains("no model.safetensors"), qPrintable(msg));
    }

    void truncatedCheckpoint() {
        const auto d = copyModel(demoTarget(), dir("truncated"));
        std::filesystem::resize_file(d + "/model.safetensors", 5'000'000);
        Engine e;
        const auto msg = errorOf([&] { e.loadTarget(d); });
        QVERIFY2(msg.contains("model.safetensors") && msg.contains("truncated"), qPrintable(msg));
    }

    void wrongShapeAndDtypeAndMissingTensor() {
        const auto d = copyModel(demoTarget(), dir("mismatch"));
        rewriteWeights(d, [](std::string& name, DType& dt, std::vector<std::int64_t>& shape, std::string& bytes) {
            if (name == "model.layers.0.self_attn.q_proj.weight") {  // [256, 256] -> [128, 512]
                shape = {128, 512};
            } else if (name == "model.norm.weight") {  // BF16 -> I16 with the same bytes
                dt = DType::I16;
            } else if (name == "model.layers.3.mlp.up_proj.weight") {
                return false;  // drop it
            }
            (void)bytes;
            return true;
        });
        Engine e;
        const auto msg = errorOf([&] { e.loadTarget(d); });
        QVERIFY2(msg.contains("model.layers.0.self_attn.q_proj.weight: shape [128, 512], expected [256, 256]"), qPrintable(msg));
        QVERIFY2(msg.contains("model.norm.weight: dtype I16"), qPrintable(msg));
        QVERIFY2(msg.contains("1 missing tensor") && msg.contains("model.layers.3.mlp.up_proj.weight"), qPrintable(msg));
    }

    void unexpectedTensorsAreReported() {
        const auto d = copyModel(demoTarget(), dir("extra"));
        rewriteWeights(d, [](std::string&, DType&, std::vector<std::int64_t>&, std::string&) { return true; });
        {
            SafetensorsWriter w;
            const auto f = SafetensorsFile::open(d + "/model.safetensors");
            for (const auto& t : f->tensors()) w.add(t.name, t.dtype, t.shape, f->data(t), t.byteSize());
            w.addFloat32("mtp.fc.weight", {2}, {1, 2});
            w.addFloat32("model.extra_bias", {2}, {1, 2});
            w.write(d + "/model2.safetensors");
        }
        std::filesystem::rename(d + "/model2.safetensors", d + "/model.safetensors");
        Engine e;
        const auto s = e.loadTarget(d);
        QCOMPARE(s.unexpectedTensors, std::vector<std::string>{"model.extra_bias"});
        QCOMPARE(s.ignoredTensors, std::vector<std::string>{"mtp.fc.weight"});
    }

    void unknownArchitecture() {
        const auto d = copyModel(demoTarget(), dir("arch"));
        auto j = readJson(d + "/config.json");
        j["architectures"] = {"FalconForCausalLM"};
        writeJson(d + "/config.json", j);
        Engine e;
        QVERIFY(errorOf([&] { e.loadTarget(d); }).contains("'FalconForCausalLM' is not supported"));
    }

    // Sizes far beyond any real model are refused before anything is allocated from them.
    void absurdConfigSizesAreRefused() {
        const std::pair<const char*, std::int64_t> cases[] = {
            {"num_hidden_layers", 10000000}, {"head_dim", std::int64_t{1} << 30}, {"vocab_size", std::int64_t{1} << 40}};
        for (const auto& [field, value] : cases) {
            const auto d = copyModel(demoTarget(), dir(std::string("absurd-") + field));
            auto j = readJson(d + "/config.json");
            j[field] = value;
            writeJson(d + "/config.json", j);
            Engine e;
            const auto msg = errorOf([&] { e.loadTarget(d); });
            QVERIFY2(msg.contains(QString("field '%1' is %2, more than draftscope accepts").arg(field).arg(value)), qPrintable(msg));
        }
        const auto dd = copyModel(demoDrafter(), dir("absurd-block"));
        auto j = readJson(dd + "/config.json");
        j["block_size"] = 5000;
        writeJson(dd + "/config.json", j);
        Engine e;
        e.loadTarget(demoTarget());
        QVERIFY(errorOf([&] { e.loadDrafter(dd); }).contains("'block_size' is 5000, more than draftscope accepts (1024)"));
    }

    // A FIFO as config or weights would block a reader forever: refused without opening it.
    void fifoInsteadOfAFileIsRefused() {
        const auto d = copyModel(demoTarget(), dir("fifo"));
        std::filesystem::remove(d + "/config.json");
        QCOMPARE(::mkfifo((d + "/config.json").c_str(), 0600), 0);
        Engine e;
        QVERIFY(errorOf([&] { e.loadTarget(d); }).contains("is not a regular file"));
        const auto w = copyModel(demoTarget(), dir("fifo-weights"));
        std::filesystem::remove(w + "/model.safetensors");
        QCOMPARE(::mkfifo((w + "/model.safetensors").c_str(), 0600), 0);
        QVERIFY(errorOf([&] { e.loadTarget(w); }).contains("is not a regular file"));
        const auto r = cli({"run", "--target", QString::fromStdString(demoTarget()), "--drafter",
                            QString::fromStdString(demoDrafter()), "--prompt-file", "/dev/zero"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("not a regular file"), qPrintable(r.err));
    }

    void drafterFcWidthMismatch() {
        // The drafter claims 2 tapped layers but its fc was trained on 3: width 768 vs 512.
        const auto d = copyModel(demoDrafter(), dir("fcwidth"));
        auto j = readJson(d + "/config.json");
        j["dflash_config"]["target_layer_ids"] = {1, 2};
        writeJson(d + "/config.json", j);
        Engine e;
        e.loadTarget(demoTarget());
        const auto msg = errorOf([&] { e.loadDrafter(d); });
        QVERIFY2(msg.contains("fc.weight has shape [256, 768], expected [256, 512]") && msg.contains("2 tapped layers"),
                 qPrintable(msg));
    }

    void drafterTappedLayerBeyondTarget() {
        const auto d = copyModel(demoDrafter(), dir("deep"));
        auto j = readJson(d + "/config.json");
        j["dflash_config"]["target_layer_ids"] = {1, 2, 6};
        j["num_target_layers"] = 8;
        writeJson(d + "/config.json", j);
        Engine e;
        e.loadTarget(demoTarget());
        const auto msg = errorOf([&] { e.loadDrafter(d); });
        QVERIFY2(msg.contains("contains 6") && msg.contains("target has 6 layers") && msg.contains("8-layer target"),
                 qPrintable(msg));
    }

    void drafterMaskTokenOutsideVocab() {
        const auto d = copyModel(demoDrafter(), dir("mask"));
        auto j = readJson(d + "/config.json");
        j["dflash_config"]["mask_token_id"] = 151669;
        writeJson(d + "/config.json", j);
        Engine e;
        e.loadTarget(demoTarget());
        const auto msg = errorOf([&] { e.loadDrafter(d); });
        QVERIFY2(msg.contains("mask_token_id 151669") && msg.contains("2048"), qPrintable(msg));
    }

    void drafterNumTargetLayersWarning() {
        const auto d = copyModel(demoDrafter(), dir("numlayers"));
        auto j = readJson(d + "/config.json");
        j["num_target_layers"] = 36;
        writeJson(d + "/config.json", j);
        Engine e;
        e.loadTarget(demoTarget());
        const auto s = e.loadDrafter(d);
        QCOMPARE(s.warnings.size(), std::size_t(1));
        QVERIFY(QString::fromStdString(s.warnings[0]).contains("36"));
    }

    void drafterWithoutTarget() {
        Engine e;
        QVERIFY(errorOf([&] { e.loadDrafter(demoDrafter()); }).contains("no target"));
    }

    void emptyPrompt() {
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        PromptSpec p;
        p.text = "";
        QVERIFY(errorOf([&] { e.run(p, {}); }).contains("empty"));
        QVERIFY(errorOf([&] { e.run(idsPrompt({}), {}); }).contains("empty"));
        QVERIFY(errorOf([&] { e.forward(idsPrompt({})); }).contains("empty"));
    }

    void promptIdsOutsideVocab() {
        Engine e;
        e.loadTarget(demoTarget());
        const auto msg = errorOf([&] { e.forward(idsPrompt({1, 2, 5000})); });
        QVERIFY2(msg.contains("5000") && msg.contains("0..2047"), qPrintable(msg));
    }

    void promptLongerThanMaxPositions() {
        const auto d = copyModel(demoTarget(), dir("shortctx"));
        auto j = readJson(d + "/config.json");
        j["max_position_embeddings"] = 32;
        writeJson(d + "/config.json", j);
        Engine e;
        e.loadTarget(d);
        e.loadDrafter(demoDrafter());
        const auto msg = errorOf([&] { e.forward(idsPrompt(std::vector<std::int64_t>(40, 5))); });
        QVERIFY2(msg.contains("40 tokens") && msg.contains("max_position_embeddings of 32"), qPrintable(msg));
        RunSettings s;
        s.maxNewTokens = 20;
        const auto runMsg = errorOf([&] { e.run(idsPrompt(std::vector<std::int64_t>(10, 5)), s); });
        QVERIFY2(runMsg.contains("exceeds") && runMsg.contains("32"), qPrintable(runMsg));
    }

    void nonFiniteActivationsDoNotBreakStatistics() {
        // A NaN in one weight of layer 3 poisons the tapped layer 4 for every position; the
        // statistics must still be computed (counted, not thrown), and the run still works.
        const auto d = copyModel(demoTarget(), dir("nan"));
        rewriteWeights(d, [](std::string& name, DType& dt, std::vector<std::int64_t>&, std::string& bytes) {
            if (name == "model.layers.3.mlp.down_proj.weight" && dt == DType::BF16) {
                bytes[0] = static_cast<char>(0xc0);  // bf16 0x7fc0 = NaN (little endian)
                bytes[1] = static_cast<char>(0x7f);
            }
            return true;
        });
        Engine e;
        e.loadTarget(d);
        e.loadDrafter(demoDrafter());
        HiddenStateStats stats;
        try {
            stats = e.hiddenStateStats(goldenPrompt(1));
        } catch (const Error& err) {
            QFAIL(err.what());
        }
        QCOMPARE(stats.series.size(), std::size_t(4));
        QCOMPARE(stats.series[0].nonFiniteCount, std::int64_t(0));    // layer 1 is clean
        QVERIFY(stats.series[2].nonFiniteCount > 0);                    // layer 4 is not
        QCOMPARE(stats.series[2].outlierPositions.size(), promptIds(1).size());
    }

    void stopTokenAsFirstAnchorStillRunsOneStep() {
        // Make the p0 anchor (258) a stop token: the reference still runs one verify step,
        // then stops and keeps the output up to and including the stop token.
        const auto d = copyModel(demoTarget(), dir("stopanchor"));
        auto g = readJson(d + "/generation_config.json");
        g["eos_token_id"] = {2044, 258};
        writeJson(d + "/generation_config.json", g);
        Engine e;
        e.loadTarget(d);
        e.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 50;
        s.loop = LoopRevision::April2026;  // the April reference's behaviour
        const auto r = e.run(goldenPrompt(0), s);
        QCOMPARE(r.steps.size(), std::size_t(1));
        QVERIFY(r.stoppedAtEos);
        auto expected = promptIds(0);
        expected.push_back(258);
        QCOMPARE(r.outputIds, expected);
        QCOMPARE(r.perPositionAcceptance.at(0), 1.0);
        QVERIFY(r.tau >= 1.0);
        // The current loop checks stop tokens inside the loop: a stop token as the first
        // anchor ends the run before any step, with the same output (docs/ENGINE.md).
        s.loop = LoopRevision::Current;
        const auto c = e.run(goldenPrompt(0), s);
        QCOMPARE(c.steps.size(), std::size_t(0));
        QVERIFY(c.stoppedAtEos);
        QCOMPARE(c.outputIds, expected);
    }

    void hugeMaxNewIsRefusedNotOverflowed() {
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = std::numeric_limits<std::int64_t>::max();
        QVERIFY(errorOf([&] { e.run(goldenPrompt(0), s); }).contains("exceeds"));
        QVERIFY(errorOf([&] { e.greedy(goldenPrompt(0), s.maxNewTokens, true); }).contains("exceeds"));
    }

    void deeplyNestedJsonIsRefusedNotAStackOverflow() {
        const std::string deep = std::string(200000, '[') + std::string(200000, ']');
        const auto d = copyModel(demoTarget(), dir("deepcfg"));
        auto j = readJson(d + "/config.json");
        std::string text = j.dump();
        text.insert(text.size() - 1, ",\"junk\":" + deep);
        writeBytes(d + "/config.json", text);
        Engine e;
        QVERIFY(errorOf([&] { e.loadTarget(d); }).contains("levels deep"));
        const auto t = copyModel(demoTarget(), dir("deeptok"));
        writeBytes(t + "/tokenizer.json", "{\"x\":" + deep + "}");
        QVERIFY(errorOf([&] { e.loadTarget(t); }).contains("levels deep"));
    }

    void float16IsRefusedWithAClearMessage() {
        Engine e;
        LoadOptions o;
        o.dtype = "float16";
        QCOMPARE(errorOf([&] { e.loadTarget(demoTarget(), o); }), QString("dtype: expected float32 or bfloat16, found 'float16'"));
    }

    void cancelledRun() {
        Engine e;
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        std::atomic<bool> cancel{false};
        int calls = 0;
        RunSettings s;
        s.maxNewTokens = 96;
        s.ignoreEos = true;
        bool cancelled = false;
        try {
            e.run(goldenPrompt(0), s, [&](std::int64_t, std::int64_t) { if (++calls == 3) cancel = true; }, &cancel);
        } catch (const Cancelled&) {
            cancelled = true;
        }
        QVERIFY(cancelled);
        QCOMPARE(calls, 3);
    }

    void shardedCheckpointMatchesSingleFile() {
        // Split the demo target into two shards with an index; logits must be identical.
        const auto d = copyModel(demoTarget(), dir("sharded"));
        const auto f = SafetensorsFile::open(demoTarget() + "/model.safetensors");
        SafetensorsWriter a, b;
        nlohmann::json map = nlohmann::json::object();
        std::size_t i = 0;
        for (const auto& t : f->tensors()) {
            const bool first = (i++ % 2) == 0;
            (first ? a : b).add(t.name, t.dtype, t.shape, f->data(t), t.byteSize());
            map[t.name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
        }
        a.write(d + "/model-00001-of-00002.safetensors");
        b.write(d + "/model-00002-of-00002.safetensors");
        std::filesystem::remove(d + "/model.safetensors");
        writeJson(d + "/model.safetensors.index.json", {{"metadata", {{"total_size", 0}}}, {"weight_map", map}});

        Engine single, sharded;
        single.loadTarget(demoTarget());
        sharded.loadTarget(d);
        const auto r1 = single.forward(goldenPrompt(1));
        const auto r2 = sharded.forward(goldenPrompt(1));
        QCOMPARE(r2.logits, r1.logits);

        // An index that points outside the directory is refused.
        auto bad = map;
        bad[f->tensors().front().name] = "../model.safetensors";
        writeJson(d + "/model.safetensors.index.json", {{"weight_map", bad}});
        Engine e;
        QVERIFY(errorOf([&] { e.loadTarget(d); }).contains("not a plain file name"));
        // An index that maps a tensor to a shard without it.
        auto wrong = map;
        wrong[f->tensors().front().name] = map[f->tensors()[1].name];
        writeJson(d + "/model.safetensors.index.json", {{"weight_map", wrong}});
        QVERIFY(errorOf([&] { e.loadTarget(d); }).contains("has no such tensor"));
    }

    void cliErrorsExitNonZero() {
        const QString target = QString::fromStdString(demoTarget());
        const QString drafter = QString::fromStdString(demoDrafter());
        struct Case {
            QStringList args;
            QString expect;
        };
        writeBytes(dir("empty-prompt.txt"), "");
        const QString emptyPrompt = QString::fromStdString(dir("empty-prompt.txt"));
        const QList<Case> cases = {
            {{"run", "--target", "/nonexistent", "--drafter", drafter, "--prompt", "x"}, "not found"},
            {{"run", "--target", target, "--drafter", drafter, "--prompt-file", emptyPrompt},
             "--prompt-file: '" + emptyPrompt + "' is empty: nothing to condition the target on"},
            {{"run", "--target", target, "--drafter", drafter, "--drafter-config", drafter + "/config.json", "--prompt", "x"},
             "--drafter-config: only for a .pt checkpoint file; --drafter '" + drafter + "' is a model directory"},
            {{"run", "--target", target, "--drafter", drafter, "--prompt-ids", "1,x,3"}, "'x' is not an integer"},
            {{"run", "--target", target, "--drafter", drafter, "--prompt-ids", "1,2", "--device", "tpu"}, "--device: expected cpu, cuda, cuda:N, a comma-separated list of them (cuda:0,cuda:1) or auto, found 'tpu'"},
            {{"run", "--target", drafter, "--drafter", drafter, "--prompt", "x"}, "drafter"},
            {{"run", "--target", target, "--drafter", target, "--prompt", "x"}, "is not a drafter family draftscope implements"},
            {{"forward", "--model", target, "--prompt-file", "/nonexistent.txt", "--out", "/tmp/x.safetensors"},
             "--prompt-file: expected an existing file, found '/nonexistent.txt' (not found)"},
            // An empty item is refused, not skipped; spaces around items are allowed (so the
            // error names 'x', not ' 1').
            {{"forward", "--model", target, "--prompt-ids", "1,2,", "--out", "/tmp/x.safetensors"},
             "--prompt-ids: empty item in '1,2,': expected comma-separated integer token ids"},
            {{"forward", "--model", target, "--prompt-ids", "1,,2", "--out", "/tmp/x.safetensors"}, "empty item in '1,,2'"},
            {{"forward", "--model", target, "--prompt-ids", " 1, 2 ,x", "--out", "/tmp/x.safetensors"},
             "--prompt-ids: 'x' is not an integer token id"},
            {{"forward", "--model", target, "--prompt-ids", "1,-1", "--out", "/tmp/x.safetensors"},
             "--prompt-ids: '-1' is negative: token ids are >= 0"},
            {{"forward", "--model", target, "--prompt-ids", "99999999999999999999", "--out", "/tmp/x.safetensors"},
             "--prompt-ids: '99999999999999999999' is out of range for a token id"},
            {{"forward", "--model", target, "--prompt-ids", "+5", "--out", "/tmp/x.safetensors"}, "'+5' is not an integer"},
            {{"forward", "--model", target, "--prompt-ids", "\n1", "--out", "/tmp/x.safetensors"}, "'\\n1' is not an integer"},
            {{"diagnose", "--target", target, "--drafter", drafter, "--chat"},
             "--chat: applies to --prompt or --prompt-file; the built-in prompts are used as they are"},
            // Which side of compare-targets failed to load (this CPU build has no CUDA).
            {{"compare-targets", "--target", target, "--prompt-ids", "1,2", "--device-b", "cuda"},
             "load B (--device-b cuda): device 'cuda' requested"},
            // A config option for a model directory would be ignored: refused.
            {{"inspect", drafter, "--config", drafter + "/config.json"},
             "--config: only for a .pt checkpoint file; path '" + drafter + "' is a model directory"},
            {{"inspect", drafter, "--diff", target, "--diff-config", drafter + "/config.json"},
             "--diff-config: only for a .pt checkpoint file; --diff '" + target + "' is a model directory"},
        };
        for (const auto& c : cases) {
            const auto r = cli(c.args);
            QCOMPARE(r.status, QProcess::NormalExit);
            QVERIFY2(r.exitCode == 1, qPrintable(c.args.join(' ') + " -> " + QString::number(r.exitCode)));
            QVERIFY2(r.err.contains("error: ") && r.err.contains(c.expect), qPrintable(r.err));
        }
        const auto usage = cli({"run", "--target", target});
        QCOMPARE(usage.exitCode, 2);
        // Usage errors (exit 2): contradictory prompt options, an unknown subcommand.
        const struct {
            QStringList args;
            QString expect;
        } usageCases[] = {
            {{"run", "--target", target, "--drafter", drafter, "--prompt-ids", "1,2", "--chat"}, "--prompt-ids excludes --chat"},
            {{"run", "--target", target, "--drafter", drafter, "--prompt", "x", "--no-thinking"}, "--no-thinking requires --chat"},
            {{"diagnose", "--target", target, "--drafter", drafter, "--prompt", "x", "--prompts", "p.jsonl"},
             "--prompt excludes --prompts"},
            {{"compare", "--target", target, "--drafter", drafter, "--drafter", drafter, "--prompts", "p.jsonl",
              "--prompt-ids", "1"},
             "--prompt-ids excludes --prompts"},
            {{"bogus"}, "error: unknown subcommand 'bogus': expected one of run, forward, diagnose"},
            {{"--", "bogus"}, "error: unknown subcommand 'bogus'"},
            {{"--bogus"}, "error: unknown option '--bogus' before the subcommand: expected one of run,"},
            {{"inspect", drafter, "--diff-config", drafter + "/config.json"}, "--diff-config requires --diff"},
            {{"diagnose", "--target", target, "--drafter", drafter, "--prompts", "p.jsonl", "--chat"},
             "--chat excludes --prompts"},
            {{"compare", "--target", target, "--drafter", drafter, "--drafter", drafter, "--prompts", "p.jsonl",
              "--chat", "--no-thinking"},
             "excludes --prompts"},
        };
        for (const auto& c : usageCases) {
            const auto r = cli(c.args);
            QVERIFY2(r.exitCode == 2 && r.err.contains(c.expect), qPrintable(c.args.join(' ') + " -> " + r.err));
        }
        const auto empty = cli({"run", "--target", target, "--drafter", drafter, "--prompt", ""});
        QCOMPARE(empty.exitCode, 2);
        QVERIFY2(empty.err.contains("--prompt: expected a value, found an empty string"), qPrintable(empty.err));
    }

    void cliForwardWritesSafetensors() {
        const auto out = dir("fwd.safetensors");
        QStringList ids;
        for (auto id : promptIds(0)) ids << QString::number(id);
        const auto r = cli({"forward", "--model", QString::fromStdString(demoTarget()), "--prompt-ids", ids.join(','),
                            "--out", QString::fromStdString(out)});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const auto f = SafetensorsFile::open(out);
        QCOMPARE(f->at("hidden_states").shape, (std::vector<std::int64_t>{7, 22, 256}));
        QCOMPARE(f->at("logits").shape, (std::vector<std::int64_t>{22, 2048}));
        QVERIFY(relativeMaxError(f->readFloat32("logits"), goldenTensors().readFloat32("p0.target.logits")) <= 1e-4);
        QVERIFY(relativeMaxError(f->readFloat32("hidden_states"), goldenTensors().readFloat32("p0.target.hidden_states")) <= 1e-4);
    }

    void cliRunJson() {
        const auto out = dir("run.json");
        QStringList ids;
        for (auto id : promptIds(3)) ids << QString::number(id);
        const auto r = cli({"run", "--target", QString::fromStdString(demoTarget()), "--drafter",
                            QString::fromStdString(demoDrafter()), "--prompt-ids", ids.join(','), "--max-new", "96",
                            "--ignore-eos", "--loop", "2026-04", "--json", QString::fromStdString(out), "--quiet"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const auto j = readJson(out);
        const auto& run = j["runs"][0];
        QCOMPARE(run["settings"]["loop"], "2026-04");
        const auto& g = goldens()["dflash_generate"]["drafter-good.p3"];  // the April loop
        QCOMPARE(run["output_ids"], g["output_ids"]);
        QCOMPARE(run["acceptance_lengths"], g["acceptance_lengths"]);
        QCOMPARE(run["steps"].size(), g["acceptance_lengths"].size());
        QVERIFY(run["tau"].get<double>() > 1.0);
        QCOMPARE(run["steps"][0]["draft_topk_ids"][0].size(), std::size_t(5));
    }
};

QTEST_GUILESS_MAIN(TestBadInput)
#include "tst_bad_input.moc"
