// Batch evaluation: prompt-set parsing, the evaluation loop on the demo pair against
// Engine::run, the results-file round trip, and refusing truncated or foreign files. The
// one analysis path (analysePrompt) every front end takes, the one DDTree budget rule, and
// eval with DDTree budgets on a hybrid target agreeing with run.

#include "draftscope/analysis.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/evaluation.h"
#include "draftscope/file_io.h"
#include "draftscope/prompt_set.h"
#include "draftscope/results_file.h"
#include "draftscope/results_json.h"
#include "draftscope/results_summary.h"
#include "draftscope/safetensors.h"
#include "draftscope/sha256.h"
#include "draftscope/tokenizer.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace draftscope;
using namespace testsupport;

namespace {

// Three lines: a raw completion (HumanEval-style task_id), a two-turn MT-Bench question, a
// messages conversation with a system message.
const char* kPromptSet =
    "{\"task_id\": \"HumanEval/0\", \"prompt\": \"def add(a, b):\\n    \\\"\\\"\\\"Return a + b.\\\"\\\"\\\"\\n\"}\n"
    "\n"
    "{\"question_id\": 81, \"category\": \"coding\", \"turns\": [\"Write a Python function that reverses a list.\", "
    "\"Now make it recursive.\"]}\n"
    "{\"id\": \"sys\", \"messages\": [{\"role\": \"system\", \"content\": \"You are terse.\"}, "
    "{\"role\": \"user\", \"content\": \"def fib(n):\"}]}\n";

std::string writeText(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

}  // namespace

class TestEval : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    Engine engine_;
    EvalSettings settings_;
    ResultsFile results_;  // the evaluation of kPromptSet, shared by the round-trip tests

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        LoadOptions one;
        one.threads = 1;  // the demo pair is tiny: one thread is fastest, above all on a loaded machine
        engine_.loadTarget(demoTarget(), one);
        engine_.loadDrafter(demoDrafter());
        settings_.run.maxNewTokens = 20;
        settings_.run.ignoreEos = true;
        settings_.ddtreeBudgets = {4};
        settings_.allTurns = true;
        settings_.histogramBins = 12;
    }

    void sha256KnownVectors() {
        QCOMPARE(sha256Hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        QCOMPARE(sha256Hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        // 56 bytes: the padding needs a second block.
        QCOMPARE(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                 std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    }

    void promptSetMapping() {
        const auto e = parsePromptSet(kPromptSet, "set.jsonl");
        QCOMPARE(e.size(), std::size_t{3});
        QCOMPARE(e[0].id, std::string("HumanEval/0"));
        QCOMPARE(e[0].line, 1);
        QVERIFY(!e[0].chat);
        QCOMPARE(e[0].text, std::string("def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n"));
        QCOMPARE(e[1].id, std::string("81"));  // question_id, a number
        QCOMPARE(e[1].line, 3);                // the empty line counts
        QVERIFY(e[1].chat);
        QCOMPARE(e[1].userTurns(), 2);
        QCOMPARE(e[1].messages[1].content, std::string("Now make it recursive."));
        QCOMPARE(e[2].id, std::string("sys"));
        QCOMPARE(e[2].messages.size(), std::size_t{2});
        QCOMPARE(e[2].messages[0].role, std::string("system"));
        QCOMPARE(e[2].firstUserText(), std::string("def fib(n):"));

        // HF mt_bench_prompts: `prompt` is a list of turns.
        const auto hf = parsePromptSet("{\"prompt\": [\"a\", \"b\"], \"prompt_id\": 7}", "hf.jsonl");
        QVERIFY(hf[0].chat);
        QCOMPARE(hf[0].userTurns(), 2);
        QCOMPARE(hf[0].id, std::string("1"));  // no id field: the line number

        // Turn 0 of a one-message chat is the engine's own ChatML (as run --chat).
        const auto t0 = promptSpecForTurn(e[1], 0, {}, true);
        QVERIFY(t0.chat);
        QCOMPARE(t0.text, e[1].messages[0].content);
        // Turn 1 is the rendered conversation with the model's answer in between.
        const auto t1 = promptSpecForTurn(e[1], 1, {"ANSWER-ONE"}, false);
        QVERIFY(!t1.chat);
        QCOMPARE(t1.text, std::string("<|im_start|>user\nWrite a Python function that reverses a list.<|im_end|>\n"
                                      "<|im_start|>assistant\nANSWER-ONE<|im_end|>\n"
                                      "<|im_start|>user\nNow make it recursive.<|im_end|>\n"
                                      "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        // A system message is kept.
        const auto sys = promptSpecForTurn(e[2], 0, {}, true);
        QCOMPARE(sys.text, std::string("<|im_start|>system\nYou are terse.<|im_end|>\n"
                                       "<|im_start|>user\ndef fib(n):<|im_end|>\n<|im_start|>assistant\n"));
        // Raw prompts: as is, or wrapped with --chat.
        QVERIFY(!promptSpecForTurn(e[0], 0, {}, true).chat);
        QVERIFY(promptSpecForTurn(e[0], 0, {}, true, /*chatWrapRaw=*/true).chat);
        const auto bad = errorOf([&] { promptSpecForTurn(e[1], 1, {}, true); });
        QVERIFY2(bad.contains("needs the answers"), qPrintable(bad));
    }

    void promptSetErrors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::newRow("invalid json") << "{\"prompt\": \"a\"}\n{\"prompt\": \n" << "line 2: invalid JSON";
        QTest::newRow("not an object") << "[1, 2]\n" << "line 1: expected a JSON object, found array";
        QTest::newRow("no prompt field") << "{\"text\": \"a\"}\n" << "line 1: no 'prompt', 'turns' or 'messages' field";
        QTest::newRow("turn not a string") << "{\"turns\": [\"a\", 3]}\n" << "line 1: 'turns[1]' is number, expected a string";
        QTest::newRow("prompt wrong type") << "{\"prompt\": 5}\n" << "'prompt' is number, expected a string or a list";
        QTest::newRow("no user message") << "{\"messages\": [{\"role\": \"system\", \"content\": \"x\"}]}\n"
                                         << "line 1: 'messages' has no message with role 'user'";
        QTest::newRow("bad role") << "{\"messages\": [{\"role\": \"bot\", \"content\": \"x\"}]}\n"
                                  << "'messages[0]' has role 'bot', expected system, user or assistant";
        QTest::newRow("empty set") << "\n\n" << "has no prompts";
    }
    void promptSetErrors() {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        const auto msg = errorOf([&] { parsePromptSet(text.toStdString(), "p.jsonl"); });
        QVERIFY2(msg.contains("prompt set 'p.jsonl'") && msg.contains(expected), qPrintable(msg));
    }

    void evalMatchesEngineRun() {
        const auto entries = parsePromptSet(kPromptSet, "set.jsonl");
        QCOMPARE(plannedItems(entries, settings_), std::size_t{4});  // 1 + 2 turns + 1
        std::vector<std::string> doneIds;
        EvalCallbacks cb;
        double lastFraction = -1;
        bool monotone = true;
        cb.progress = [&](const EvalProgress& p) {
            monotone = monotone && p.fraction() >= lastFraction - 1e-12;
            lastFraction = p.fraction();
        };
        cb.itemDone = [&](const PromptResult& p, std::size_t, std::size_t) { doneIds.push_back(p.id); };
        results_ = runEvaluation(engine_, entries, settings_, cb);
        QVERIFY(results_.complete);
        QVERIFY(monotone);
        QVERIFY(lastFraction > 0.9);
        QCOMPARE(doneIds, (std::vector<std::string>{"HumanEval/0", "81", "81#turn2", "sys"}));
        QCOMPARE(results_.prompts.size(), std::size_t{4});
        QCOMPARE(results_.drafters.size(), std::size_t{1});
        QCOMPARE(results_.target.configSha256, sha256File(demoTarget() + "/config.json"));
        QCOMPARE(results_.drafters[0].configSha256, sha256File(demoDrafter() + "/config.json"));
        QVERIFY(results_.target.summary.parameters > 0);
        QCOMPARE(results_.settings.device, std::string("cpu"));

        // Each prompt's numbers are those of a plain Engine::run / runTree on its prompt.
        double sum = 0;
        for (const auto& p : results_.prompts) {
            QVERIFY2(p.error.empty(), p.error.c_str());
            QCOMPARE(p.drafters.size(), std::size_t{1});
            const auto& got = p.drafters[0];
            const auto ref = engine_.run(p.prompt, settings_.run);
            QCOMPARE(got.run.tau, ref.tau);
            QCOMPARE(got.run.outputIds, ref.outputIds);
            QCOMPARE(got.run.acceptanceLengths, ref.acceptanceLengths);
            QCOMPARE(got.trees.size(), std::size_t{1});
            QCOMPARE(got.trees[0].tau, engine_.runTree(p.prompt, settings_.run, 4).tau);
            QCOMPARE(got.hiddenStats.ids, ref.promptIds);
            QCOMPARE(got.hiddenStats.promptLength, static_cast<std::int64_t>(ref.promptIds.size()));  // prompt only
            QCOMPARE(got.hiddenStats.series.size(), std::size_t{4});  // 3 tapped layers + drafter context
            QCOMPARE(got.hiddenStats.series[0].histogramCounts.size(), std::size_t{12});
            sum += ref.tau;
            for (auto id : got.run.outputIds) QVERIFY(results_.tokenPieces.count(id));
        }
        // The second turn saw the first turn's answer.
        const auto& t1 = results_.prompts[1].drafters[0].run;
        const std::vector<std::int64_t> answerIds(t1.outputIds.begin() + static_cast<std::ptrdiff_t>(t1.promptIds.size()),
                                                  t1.outputIds.end());
        const auto answer = engine_.tokenizer()->decode(answerIds, true);
        QVERIFY(!answer.empty());
        QVERIFY(results_.prompts[2].prompt.text.find(answer) != std::string::npos);
        QCOMPARE(results_.prompts[2].turn, 1);
        QCOMPARE(results_.prompts[2].sourceId, std::string("81"));

        // Macro tau = mean of per-prompt taus; pooled rates and histogram from the steps.
        const auto a = aggregateDrafter(results_, 0);
        QCOMPARE(a.prompts, std::size_t{4});
        QCOMPARE(a.macroTau, sum / 4);
        std::int64_t steps = 0, reach3 = 0, len2 = 0;
        for (const auto& p : results_.prompts)
            for (const auto& s : p.drafters[0].run.steps) {
                ++steps;
                reach3 += s.acceptedCount >= 3;
                len2 += s.acceptanceLength() == 2;
            }
        QCOMPARE(a.steps, steps);
        QCOMPARE(a.perPositionAcceptance.size(), std::size_t{16});
        QCOMPARE(a.perPositionAcceptance[0], 1.0);
        QCOMPARE(a.perPositionAcceptance[3], static_cast<double>(reach3) / static_cast<double>(steps));
        QCOMPARE(a.acceptanceHistogram[2], len2);
        QCOMPARE(a.treeMacroTau.size(), std::size_t{1});
        // Sorted worst first.
        const auto order = promptsByTau(results_, 0);
        for (std::size_t i = 1; i < order.size(); ++i)
            QVERIFY(results_.prompts[order[i - 1]].drafters[0].run.tau <= results_.prompts[order[i]].drafters[0].run.tau);
    }

    void cancelKeepsFinishedPrompts() {
        const auto entries = parsePromptSet(kPromptSet, "set.jsonl");
        std::atomic<bool> cancel{false};
        EvalCallbacks cb;
        cb.itemDone = [&](const PromptResult&, std::size_t, std::size_t) { cancel = true; };
        EvalSettings s = settings_;
        s.ddtreeBudgets.clear();
        const auto r = runEvaluation(engine_, entries, s, cb, &cancel);
        QVERIFY(!r.complete);
        QCOMPARE(r.prompts.size(), std::size_t{1});
        QCOMPARE(r.prompts[0].id, std::string("HumanEval/0"));
    }

    void failedPromptIsRecorded() {
        // A prompt longer than the demo target's context (4096) fails alone; the next one runs.
        std::string longText;
        for (int i = 0; i < 6000; ++i) longText += "word ";
        const auto entries = parsePromptSet("{\"id\": \"long\", \"prompt\": \"" + longText + "\"}\n{\"id\": \"ok\", \"prompt\": \"x = 1\\n\"}\n", "s");
        EvalSettings s = settings_;
        s.ddtreeBudgets.clear();
        const auto r = runEvaluation(engine_, entries, s);
        QVERIFY(r.complete);
        QCOMPARE(r.prompts.size(), std::size_t{2});
        QVERIFY2(QString::fromStdString(r.prompts[0].error).contains("max_position_embeddings"), r.prompts[0].error.c_str());
        QVERIFY(r.prompts[0].drafters.empty());
        QVERIFY(r.prompts[1].error.empty());
        const auto a = aggregateDrafter(r, 0);
        QCOMPARE(a.prompts, std::size_t{1});
        QCOMPARE(a.skipped, std::size_t{1});
        QCOMPARE(a.macroTau, r.prompts[1].drafters[0].run.tau);
    }

    void resultsRoundTrip() {
        QVERIFY(!results_.prompts.empty());
        ResultsFile in = results_;
        in.producer = "tst_eval";
        in.promptSetPath = "/data/set.jsonl";
        in.promptSetSha256 = sha256Hex(kPromptSet);
        // Values JSON cannot hold must survive too: NaN in a packed array and inline.
        in.prompts[0].drafters[0].hiddenStats.series[0].rms[0] = std::nanf("");
        in.prompts[0].drafters[0].run.steps[0].draftProb[0] = std::numeric_limits<float>::infinity();
        in.settings.run.seed = 18446744073709551615ull;
        in.drafters[0].summary.layout = {{true, 24}, {false, std::nullopt}};  // drafter-swa's layout
        const std::string path = tmp_.filePath("roundtrip.dsresults").toStdString();
        writeResultsFile(path, in);
        const ResultsFile out = readResultsFile(path);

        QCOMPARE(out.version, kResultsFormatVersion);
        QCOMPARE(out.producer, in.producer);
        QCOMPARE(out.createdUtc, in.createdUtc);
        QCOMPARE(out.complete, in.complete);
        QCOMPARE(out.promptSetPath, in.promptSetPath);
        QCOMPARE(out.promptSetSha256, in.promptSetSha256);
        QCOMPARE(out.promptSetLines, in.promptSetLines);
        QCOMPARE(toJson(out.target.summary), toJson(in.target.summary));
        QCOMPARE(out.target.configSha256, in.target.configSha256);
        QCOMPARE(toJson(out.drafters[0].summary), toJson(in.drafters[0].summary));
        QCOMPARE(out.drafters[0].summary.layout, in.drafters[0].summary.layout);
        // Files written before drafter layouts carry no attention_layout: read as empty.
        auto old = toJson(in.drafters[0].summary);
        old.erase("attention_layout");
        QVERIFY(modelSummaryFromJson(old, "drafters[0]").layout.empty());
        QCOMPARE(out.settings.run.seed, in.settings.run.seed);
        QCOMPARE(out.settings.ddtreeBudgets, in.settings.ddtreeBudgets);
        QCOMPARE(out.settings.allTurns, true);
        QCOMPARE(out.settings.histogramBins, 12);
        QCOMPARE(out.tokenPieces, in.tokenPieces);
        QCOMPARE(out.prompts.size(), in.prompts.size());
        for (std::size_t i = 0; i < in.prompts.size(); ++i) {
            const auto& a = in.prompts[i];
            const auto& b = out.prompts[i];
            QCOMPARE(b.id, a.id);
            QCOMPARE(b.sourceId, a.sourceId);
            QCOMPARE(b.line, a.line);
            QCOMPARE(b.turn, a.turn);
            QCOMPARE(toJson(b.prompt), toJson(a.prompt));
            QCOMPARE(b.drafters.size(), a.drafters.size());
            for (std::size_t d = 0; d < a.drafters.size(); ++d) {
                if (i == 0 && d == 0) continue;  // NaN != NaN: checked below
                // JSON equality compares every number exactly (doubles bit for bit).
                QCOMPARE(toJson(b.drafters[d].run), toJson(a.drafters[d].run));
                QCOMPARE(toJson(b.drafters[d].trees[0]), toJson(a.drafters[d].trees[0]));
                QCOMPARE(toJson(b.drafters[d].hiddenStats), toJson(a.drafters[d].hiddenStats));
                QCOMPARE(b.drafters[d].run.tau, a.drafters[d].run.tau);
                QCOMPARE(b.drafters[d].run.steps.back().draftTopProbs, a.drafters[d].run.steps.back().draftTopProbs);
            }
        }
        const auto& r0 = out.prompts[0].drafters[0];
        QVERIFY(std::isnan(r0.hiddenStats.series[0].rms[0]));
        QCOMPARE(r0.hiddenStats.series[0].rms[1], in.prompts[0].drafters[0].hiddenStats.series[0].rms[1]);
        QVERIFY(std::isinf(r0.run.steps[0].draftProb[0]));
        QCOMPARE(r0.run.steps[1].draftProb, in.prompts[0].drafters[0].run.steps[1].draftProb);
        QCOMPARE(r0.run.outputIds, in.prompts[0].drafters[0].run.outputIds);
        QCOMPARE(toJson(r0.trees[0]), toJson(in.prompts[0].drafters[0].trees[0]));
        // Aggregates read back equal.
        QCOMPARE(aggregateDrafter(out, 0).macroTau, aggregateDrafter(results_, 0).macroTau);
        // The big arrays live in tensors, not in the JSON header.
        const auto f = SafetensorsFile::open(path);
        QVERIFY(f->tensors().size() > 20);
        QVERIFY(f->metadata().at(kResultsMetadataKey).size() < 64 * 1024);
    }

    void badFiles() {
        const std::string good = tmp_.filePath("good.dsresults").toStdString();
        writeResultsFile(good, results_);
        const std::string bytes = readFileToString(good);

        const auto truncated = writeText(tmp_, "truncated.dsresults", bytes.substr(0, bytes.size() / 2));
        auto msg = errorOf([&] { readResultsFile(truncated); });
        QVERIFY2(msg.startsWith("cannot open results file: invalid safetensors file") && msg.contains("truncated.dsresults"),
                 qPrintable(msg));

        const auto headerCut = writeText(tmp_, "header-cut.dsresults", bytes.substr(0, 100));
        msg = errorOf([&] { readResultsFile(headerCut); });
        QVERIFY2(msg.startsWith("cannot open results file: invalid safetensors file"), qPrintable(msg));

        std::string noise;
        for (int i = 0; i < 4096; ++i) noise += static_cast<char>((i * 7919 + 13) & 0xff);
        const auto random = writeText(tmp_, "random.dsresults", noise);
        msg = errorOf([&] { readResultsFile(random); });
        QVERIFY2(msg.startsWith("cannot open results file: invalid safetensors file") && msg.contains("random.dsresults"),
                 qPrintable(msg));

        // A checkpoint is safetensors, but not results.
        msg = errorOf([&] { readResultsFile(demoDrafter() + "/model.safetensors"); });
        QVERIFY2(msg.startsWith("not a draftscope results file: no 'draftscope_results' metadata in") &&
                     msg.contains("model.safetensors"),
                 qPrintable(msg));

        SafetensorsWriter future;
        future.setMetadata(kResultsMetadataKey, "{\"format\": \"draftscope_results\", \"version\": 3}");
        const std::string futurePath = tmp_.filePath("future.dsresults").toStdString();
        future.write(futurePath);
        msg = errorOf([&] { readResultsFile(futurePath); });
        QVERIFY2(msg.contains("was written by format version 3, this build reads 2"), qPrintable(msg));

        SafetensorsWriter other;
        other.setMetadata(kResultsMetadataKey, "{\"format\": \"something_else\", \"version\": 1}");
        const std::string otherPath = tmp_.filePath("other.dsresults").toStdString();
        other.write(otherPath);
        msg = errorOf([&] { readResultsFile(otherPath); });
        QVERIFY2(msg.startsWith("not a draftscope results file"), qPrintable(msg));

        // Right format, damaged document: the message names the field.
        SafetensorsWriter damaged;
        damaged.setMetadata(kResultsMetadataKey,
                            "{\"format\": \"draftscope_results\", \"version\": 1, \"producer\": \"x\", \"created_utc\": \"t\", "
                            "\"complete\": 7}");
        const std::string damagedPath = tmp_.filePath("damaged.dsresults").toStdString();
        damaged.write(damagedPath);
        msg = errorOf([&] { readResultsFile(damagedPath); });
        QVERIFY2(msg.contains("is damaged") && msg.contains("results.complete"), qPrintable(msg));

        // A tensor reference to a tensor that is not there.
        SafetensorsWriter dangling;
        dangling.setMetadata(kResultsMetadataKey, "{\"format\": \"draftscope_results\", \"version\": 1, \"prompts\": {\"$tensor\": \"t9\"}}");
        const std::string danglingPath = tmp_.filePath("dangling.dsresults").toStdString();
        dangling.write(danglingPath);
        msg = errorOf([&] { readResultsFile(danglingPath); });
        QVERIFY2(msg.contains("results.prompts: refers to tensor 't9'"), qPrintable(msg));

        msg = errorOf([&] { readResultsFile(tmp_.filePath("missing.dsresults").toStdString()); });
        QVERIFY2(msg.contains("file not found") && msg.contains("missing.dsresults"), qPrintable(msg));
    }

    /// The acceptance criterion: the CLI's macro tau equals the mean of the per-prompt taus
    /// that `draftscope-cli run` gives, and the file it writes reads back.
    void cliEvalMatchesRun() {
        const auto set = writeText(tmp_, "cli.jsonl",
                                   "{\"id\": \"a\", \"prompt\": \"def fibonacci(n):\\n\"}\n"
                                   "{\"id\": \"b\", \"prompt\": \"import os\\nimport sys\\n\"}\n"
                                   "{\"id\": \"c\", \"prompt\": \"class Stack:\\n\"}\n");
        const QString out = tmp_.filePath("cli.dsresults"), json = tmp_.filePath("cli.json");
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"eval", "--target", QString::fromStdString(demoTarget()), "--drafter",
                                 QString::fromStdString(demoDrafter()), "--prompts", QString::fromStdString(set), "--max-new",
                                 "16", "--limit", "2", "--threads", "1", "--out", out, "--json", json});
        QVERIFY(p.waitForFinished(120000));
        const QString stdoutText = QString::fromUtf8(p.readAllStandardOutput());
        const QString stderrText = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitCode() == 0, qPrintable(stderrText));
        QVERIFY2(stdoutText.contains("macro tau = ") && stdoutText.contains("[2/2]") && !stdoutText.contains("[3/"),
                 qPrintable(stdoutText));
        QVERIFY2(stderrText.contains("progress"), qPrintable(stderrText));  // plain lines: not a terminal

        const auto summary = nlohmann::json::parse(readFileToString(json.toStdString()));
        QCOMPARE(summary["prompts"].size(), std::size_t{2});
        double sum = 0;
        for (int i = 0; i < 2; ++i) {
            const QString promptFile = tmp_.filePath(QString("p%1.txt").arg(i));
            writeText(tmp_, QString("p%1.txt").arg(i).toStdString(), i == 0 ? "def fibonacci(n):\n" : "import os\nimport sys\n");
            const QString runJson = tmp_.filePath(QString("run%1.json").arg(i));
            QProcess r;
            r.start(DRAFTSCOPE_CLI, {"run", "--target", QString::fromStdString(demoTarget()), "--drafter",
                                     QString::fromStdString(demoDrafter()), "--prompt-file", promptFile, "--max-new", "16",
                                     "--threads", "1", "--quiet", "--json", runJson});
            QVERIFY(r.waitForFinished(120000));
            QCOMPARE(r.exitCode(), 0);
            const double runTau = nlohmann::json::parse(readFileToString(runJson.toStdString()))["runs"][0]["tau"].get<double>();
            QCOMPARE(summary["prompts"][i]["tau"].get<double>(), runTau);
            sum += runTau;
        }
        QCOMPARE(summary["macro_tau"].get<double>(), sum / 2);
        QCOMPARE(summary["per_position_acceptance"].size(), std::size_t{16});

        const auto file = readResultsFile(out.toStdString());
        QVERIFY(file.complete);
        QCOMPARE(file.prompts.size(), std::size_t{2});
        QCOMPARE(file.prompts[1].id, std::string("b"));
        QCOMPARE(file.prompts[0].drafters[0].run.tau, summary["prompts"][0]["tau"].get<double>());
        QCOMPARE(file.promptSetSha256, sha256File(set));
        QCOMPARE(file.settings.limit, std::int64_t{2});
    }

    // The prompt set's content and the output paths are checked before any model loads.
    void cliEvalRefusesBadInputBeforeWork() {
        const auto target = QString::fromStdString(demoTarget()), drafter = QString::fromStdString(demoDrafter());
        const auto set = writeText(tmp_, "bad.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": 12}\n");
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"eval", "--target", target, "--drafter", drafter, "--prompts",
                                 QString::fromStdString(set), "--out", tmp_.filePath("x.dsresults")});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains("bad.jsonl' line 2: 'prompt' is number") && !err.contains("loading"), qPrintable(err));

        const auto okSet = writeText(tmp_, "ok.jsonl", "{\"prompt\": \"ok\"}\n");
        QProcess q;
        q.start(DRAFTSCOPE_CLI, {"eval", "--target", target, "--drafter", drafter, "--prompts",
                                 QString::fromStdString(okSet), "--out", "/nonexistent-dir/x.dsresults"});
        QVERIFY(q.waitForFinished(60000));
        QCOMPARE(q.exitCode(), 1);
        err = QString::fromUtf8(q.readAllStandardError());
        QVERIFY2(err.contains("directory '/nonexistent-dir' does not exist") && !err.contains("loading"), qPrintable(err));
    }

    // One budget rule for the GUI field, the GUI's and the CLI's --ddtree-budget.
    void treeBudgetRule() {
        QCOMPARE(parseTreeBudgets("16 4,8"), (std::vector<int>{4, 8, 16}));
        QCOMPARE(parseTreeBudgets(" 0 "), std::vector<int>{});
        QCOMPARE(parseTreeBudgets(""), std::vector<int>{});
        QCOMPARE(parseTreeBudgets("4096"), std::vector<int>{kMaxTreeBudget});
        QCOMPARE(errorOf([] { parseTreeBudgets("4097"); }),
                 QString("DDTree budget '4097' is not an integer from 1 to 4096 (0 = no trees)"));
        QCOMPARE(errorOf([] { parseTreeBudgets("4, 123456789012345"); }),
                 QString("DDTree budget '1234567890...' is not an integer from 1 to 4096 (0 = no trees)"));
        QCOMPARE(errorOf([] { parseTreeBudgets("4,,8"); }), QString("DDTree budgets: an entry between commas is empty"));
        QCOMPARE(errorOf([] { validateTreeBudgets({8, 4, 8}); }), QString("DDTree budget 8 is listed twice"));
        QCOMPARE(errorOf([] { validateTreeBudgets({0}); }),
                 QString("DDTree budget '0' is not an integer from 1 to 4096 (0 = no trees)"));
        QVERIFY(errorOf([] { validateTreeBudgets({4}, 0.7); }).startsWith("DDTree runs are greedy: they need temperature 0"));
        validateTreeBudgets({}, 0.7);  // no trees: any temperature
        // The CLI's option goes through the same rule, before any model loads.
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"run", "--target", "/nonexistent-target", "--drafter", "/nonexistent-drafter", "--prompt",
                                 "x", "--ddtree-budget", "4", "--ddtree-budget", "5000"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains("error: --ddtree-budget: DDTree budget '5000' is not an integer from 1 to 4096") &&
                     !err.contains("loading"),
                 qPrintable(err));
    }

    // Every id a run mentions, once, sorted: chain outputs and steps, tree outputs and nodes.
    void tokenIdsOfARun() {
        RunResult run;
        run.outputIds = {5, 6, 7};
        VerifyStep st;
        st.anchor = 6;
        st.drafted = {30, 31};
        st.targetTokens = {30, 40, 41};
        st.bonusToken = 42;  // not in the outputs: the output was cut
        st.draftTopIds = {{30, 50}, {31, 51}};
        run.steps = {st};
        TreeRunResult tree;
        tree.outputIds = {5, 6, 8};
        TreeStep ts;
        ts.tokens = {6, 60, 61};
        ts.targetChoice = {60, 62, 63};
        ts.bonusToken = 64;
        tree.steps = {ts};
        QCOMPARE(collectTokenIds(run, {tree}),
                 (std::vector<std::int64_t>{5, 6, 7, 8, 30, 31, 40, 41, 42, 50, 51, 60, 61, 62, 63, 64}));
        QCOMPARE(collectTokenIds(run, {}), (std::vector<std::int64_t>{5, 6, 7, 30, 31, 40, 41, 42, 50, 51}));
    }

    // analysePrompt equals the engine's own runs, reports each part in order, and a
    // cancellation after the chain keeps the reported chain run.
    void analysePromptMatchesEngine() {
        PromptAnalysisRequest request;
        request.prompt.text = "def fibonacci(n):\n";
        request.settings.maxNewTokens = 16;
        request.settings.ignoreEos = true;
        request.treeBudgets = {8, 4};
        request.hiddenStats = HiddenStatsScope::Output;
        request.histogramBins = 10;
        QStringList stages, parts;
        AnalysisCallbacks cb;
        cb.stageStarted = [&](const AnalysisStage& s) {
            stages << (s.kind == AnalysisStage::Kind::Chain ? QString("chain")
                                                            : QString("tree %1 %2/%3").arg(s.budget).arg(s.index).arg(s.count));
        };
        cb.partFinished = [&](const AnalysisStage& s, const PromptAnalysis& a) {
            parts << QString("%1:%2").arg(s.kind == AnalysisStage::Kind::Chain ? "chain" : "tree").arg(a.trees.size());
        };
        const auto a = analysePrompt(engine_, request, cb);
        QCOMPARE(stages, (QStringList{"chain", "tree 8 0/2", "tree 4 1/2"}));
        QCOMPARE(parts, (QStringList{"chain:0", "tree:1", "tree:2"}));
        const auto run = engine_.run(request.prompt, request.settings);
        QCOMPARE(a.run.outputIds, run.outputIds);
        QCOMPARE(a.run.acceptanceLengths, run.acceptanceLengths);
        QCOMPARE(a.trees.size(), std::size_t{2});
        for (std::size_t i = 0; i < 2; ++i) {
            const auto tree = engine_.runTree(request.prompt, request.settings, request.treeBudgets[i]);
            QCOMPARE(a.trees[i].budget, request.treeBudgets[i]);
            QCOMPARE(a.trees[i].acceptanceLengths, tree.acceptanceLengths);
            QCOMPARE(a.trees[i].outputIds, tree.outputIds);
        }
        QVERIFY(a.treeError.empty() && a.hiddenStatsError.empty());
        QCOMPARE(a.hiddenStats.ids, run.outputIds);  // Output scope: prompt + generated
        QCOMPARE(a.hiddenStats.promptLength, static_cast<std::int64_t>(run.promptIds.size()));
        request.hiddenStats = HiddenStatsScope::Prompt;
        std::atomic<bool> cancel{false};
        std::vector<std::int64_t> keptOutput;
        cb.partFinished = [&](const AnalysisStage&, const PromptAnalysis& part) {
            keptOutput = part.run.outputIds;
            QCOMPARE(part.hiddenStats.ids, run.promptIds);  // Prompt scope
            cancel = true;
        };
        QVERIFY_THROWS_EXCEPTION(Cancelled, analysePrompt(engine_, request, cb, &cancel));
        QCOMPARE(keptOutput, run.outputIds);
        request.settings.temperature = 0.5;
        QVERIFY(errorOf([&] { analysePrompt(engine_, request); }).contains("DDTree runs are greedy"));
    }

    // eval --ddtree-budget on a hybrid target (Qwen3.5: Gated DeltaNet + gated attention)
    // runs the trees, and each prompt's DDTree acceptance equals `run --ddtree-budget` on it.
    void cliEvalDdtreeOnHybridTarget() {
        namespace fs = std::filesystem;
        const fs::path target = tmp_.filePath("hybrid-target").toStdString();
        fs::create_directories(target);
        for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
            fs::copy_file(dataPath(std::string("models/qwen3_5-tiny-causallm/") + f), target / f);
        for (const char* f : {"tokenizer.json", "tokenizer_config.json"})  // same vocabulary size (2048)
            fs::copy_file(fs::path(demoTarget()) / f, target / f);
        const std::string drafter = tmp_.filePath("hybrid-drafter").toStdString();
        writeRandomDrafter(drafter, RandomDrafterShape{128, 32, 256, 2048}, 8, 11);
        const auto set = writeText(tmp_, "hybrid.jsonl",
                                   "{\"id\": \"a\", \"prompt\": \"def fibonacci(n):\"}\n"
                                   "{\"id\": \"b\", \"prompt\": \"import os\"}\n");
        const QString out = tmp_.filePath("hybrid.dsresults");
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"eval", "--target", QString::fromStdString(target.string()), "--drafter",
                                 QString::fromStdString(drafter), "--prompts", QString::fromStdString(set), "--max-new",
                                 "12", "--ignore-eos", "--ddtree-budget", "4,8", "--threads", "1", "--out", out});
        QVERIFY(p.waitForFinished(180000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto file = readResultsFile(out.toStdString());
        QVERIFY(file.complete);
        QCOMPARE(file.settings.ddtreeBudgets, (std::vector<int>{4, 8}));
        QCOMPARE(file.prompts.size(), std::size_t{2});
        const char* texts[] = {"def fibonacci(n):", "import os"};
        for (std::size_t i = 0; i < 2; ++i) {
            const auto& pr = file.prompts[i];
            QVERIFY2(pr.error.empty(), pr.error.c_str());
            const auto& trees = pr.drafters.at(0).trees;
            QCOMPARE(trees.size(), std::size_t{2});
            const QString runJson = tmp_.filePath(QString("hybrid-run%1.json").arg(i));
            QProcess r;
            r.start(DRAFTSCOPE_CLI, {"run", "--target", QString::fromStdString(target.string()), "--drafter",
                                     QString::fromStdString(drafter), "--prompt", texts[i], "--max-new", "12", "--ignore-eos",
                                     "--ddtree-budget", "8", "--ddtree-budget", "4", "--threads", "1", "--quiet", "--json",
                                     runJson});
            QVERIFY(r.waitForFinished(180000));
            QVERIFY2(r.exitCode() == 0, r.readAllStandardError().constData());
            const auto j = nlohmann::json::parse(readFileToString(runJson.toStdString()))["runs"][0];
            QCOMPARE(j["ddtree"].size(), std::size_t{2});
            for (std::size_t k = 0; k < 2; ++k) {
                QCOMPARE(j["ddtree"][k]["budget"].get<int>(), trees[k].budget);
                QCOMPARE(j["ddtree"][k]["acceptance_lengths"].get<std::vector<int>>(), trees[k].acceptanceLengths);
                QCOMPARE(j["ddtree"][k]["tau"].get<double>(), trees[k].tau);
                QCOMPARE(j["ddtree"][k]["output_ids"].get<std::vector<std::int64_t>>(), trees[k].outputIds);
            }
            // Lossless: the greedy trees reproduce the chain run's greedy output.
            QCOMPARE(trees[0].outputIds, pr.drafters[0].run.outputIds);
        }
    }
};

QTEST_GUILESS_MAIN(TestEval)
#include "tst_eval.moc"
