// Every numeric and path option validated by name, in one place: the backend validators
// (settings_validation.h: validate(RunSettings), validate(LoadOptions), validateInputPath,
// validate(DiagnoseSettings)) with their exact messages, the engine refusing bad settings
// given in code, and draftscope-cli (and the GUI's command line) refusing each bad value
// before any model loads, with the option's name and the expected and found values.

#include "draftscope/diagnosis.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/settings_validation.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <cmath>
#include <limits>

using namespace draftscope;
using namespace testsupport;

namespace {

struct Exit {
    int code = -1;
    QString err;
};

Exit runProgram(const QString& program, const QStringList& args) {
    QProcess p;
    p.start(program, args);
    if (!p.waitForFinished(60000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardError())};
}

Exit cli(const QStringList& args) { return runProgram(DRAFTSCOPE_CLI, args); }

}  // namespace

class TestOptions : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    QString path(const QString& name) const { return tmp_.filePath(name); }

private slots:
    void formatSettingValueIsShortestRoundTrip() {
        QCOMPARE(formatSettingValue(std::nan("")), std::string("nan"));
        QCOMPARE(formatSettingValue(std::numeric_limits<double>::infinity()), std::string("inf"));
        QCOMPARE(formatSettingValue(-std::numeric_limits<double>::infinity()), std::string("-inf"));
        QCOMPARE(formatSettingValue(1.5), std::string("1.5"));
        QCOMPARE(formatSettingValue(0.1), std::string("0.1"));
        QCOMPARE(formatSettingValue(-0.5), std::string("-0.5"));
        QCOMPARE(formatSettingValue(1e300), std::string("1e+300"));
        QCOMPARE(formatSettingValue(0.30000000000000004), std::string("0.30000000000000004"));
    }

    void runSettingsValidator() {
        validate(RunSettings{});  // the defaults are valid
        const auto message = [](auto edit) {
            RunSettings s;
            edit(s);
            try {
                validate(s);
            } catch (const InvalidSetting& e) {
                return QString::fromStdString(e.what());
            }
            return QString();
        };
        const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
        QCOMPARE(message([&](RunSettings& s) { s.temperature = nan; }),
                 QString("temperature: expected a finite number >= 0 (0 = greedy), found nan"));
        QCOMPARE(message([&](RunSettings& s) { s.temperature = inf; }),
                 QString("temperature: expected a finite number >= 0 (0 = greedy), found inf"));
        QCOMPARE(message([&](RunSettings& s) { s.temperature = -inf; }),
                 QString("temperature: expected a finite number >= 0 (0 = greedy), found -inf"));
        QCOMPARE(message([&](RunSettings& s) { s.temperature = -0.5; }),
                 QString("temperature: expected a finite number >= 0 (0 = greedy), found -0.5"));
        QCOMPARE(message([&](RunSettings& s) { s.topP = nan; }), QString("top-p: expected a number in (0, 1] (1 = off), found nan"));
        QCOMPARE(message([&](RunSettings& s) { s.topP = 0; }), QString("top-p: expected a number in (0, 1] (1 = off), found 0"));
        QCOMPARE(message([&](RunSettings& s) { s.topP = 1.5; }), QString("top-p: expected a number in (0, 1] (1 = off), found 1.5"));
        QCOMPARE(message([&](RunSettings& s) { s.topP = inf; }), QString("top-p: expected a number in (0, 1] (1 = off), found inf"));
        QCOMPARE(message([&](RunSettings& s) { s.topK = -1; }), QString("top-k: expected an integer >= 0 (0 = off), found -1"));
        QCOMPARE(message([&](RunSettings& s) { s.maxNewTokens = 0; }),
                 QString("max-new: expected an integer >= 1 (tokens to generate), found 0"));
        QCOMPARE(message([&](RunSettings& s) { s.recordTopK = 0; }),
                 QString("record-top-k: expected an integer from 1 to 1024, found 0"));
        QCOMPARE(message([&](RunSettings& s) { s.recordTopK = 1025; }),
                 QString("record-top-k: expected an integer from 1 to 1024, found 1025"));
        QCOMPARE(message([&](RunSettings& s) { s.drafter = -1; }), QString("drafter: expected a drafter index >= 0, found -1"));
        // Edges that are valid.
        QCOMPARE(message([&](RunSettings& s) { s.topP = 1; s.temperature = 0; s.topK = 0; s.recordTopK = 1024; }), QString());
        QCOMPARE(message([&](RunSettings& s) { s.topP = 1e-300; s.temperature = 1e300; }), QString());

        // The error carries its parts, and renamed() keeps them under another spelling.
        try {
            RunSettings s;
            s.topP = 2;
            validate(s);
            QFAIL("no error");
        } catch (const InvalidSetting& e) {
            QCOMPARE(e.option(), std::string("top-p"));
            QCOMPARE(e.found(), std::string("2"));
            QCOMPARE(QString(e.renamed("--top-p").what()), QString("--top-p: expected a number in (0, 1] (1 = off), found 2"));
        }
    }

    void seedParser() {
        QCOMPARE(parseSeed("0"), std::uint64_t{0});
        QCOMPARE(parseSeed("42"), std::uint64_t{42});
        QCOMPARE(parseSeed("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
        for (const char* bad : {"-1", "18446744073709551616", "99999999999999999999", "", " 1", "1e3", "0x10", "+1"})
            QCOMPARE(errorOf([&] { parseSeed(bad); }),
                     QString("seed: expected an integer from 0 to 18446744073709551615, found '%1'").arg(bad));
    }

    void loadOptionsValidator() {
        const auto message = [](auto edit) {
            LoadOptions o;
            edit(o);
            return errorOf([&] { validate(o); });
        };
        QCOMPARE(message([](LoadOptions&) {}), QString());
        for (const char* ok : {"cpu", "cuda", "cuda:0", "cuda:12"})
            QCOMPARE(message([&](LoadOptions& o) { o.device = ok; }), QString());
        for (const char* bad : {"tpu", "cuda:", "cuda:x", "cuda:-1", "cuda:12345", "CPU", ""})
            QCOMPARE(message([&](LoadOptions& o) { o.device = bad; }),
                     QString("device: expected cpu, cuda, cuda:N, a comma-separated list of them (cuda:0,cuda:1) or auto, found '%1'").arg(bad));
        QCOMPARE(message([](LoadOptions& o) { o.device = "cu\x01" "da\xff"; }),
                 QString("device: expected cpu, cuda, cuda:N, a comma-separated list of them (cuda:0,cuda:1) or auto, found 'cu\\x01da\\xff'"));
        for (const char* ok : {"float32", "bfloat16", "bf16", "fp32", "f32"})
            QCOMPARE(message([&](LoadOptions& o) { o.dtype = ok; }), QString());
        QCOMPARE(message([](LoadOptions& o) { o.dtype = "float16"; }),
                 QString("dtype: expected float32 or bfloat16, found 'float16'"));
        QCOMPARE(message([](LoadOptions& o) { o.threads = -1; }),
                 QString("threads: expected an integer from 0 to 1024 (0 = all cores), found -1"));
        QCOMPARE(message([](LoadOptions& o) { o.threads = 1025; }),
                 QString("threads: expected an integer from 0 to 1024 (0 = all cores), found 1025"));
        QCOMPARE(message([](LoadOptions& o) { o.threads = 1024; }), QString());
    }

    void inputPathValidator() {
        const std::string dir = tmp_.path().toStdString();
        const std::string file = path("plain.txt").toStdString();
        writeBytes(file, "x");
        const std::string fifo = path("fifo").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        const auto message = [](const std::string& p, PathKind k) { return errorOf([&] { validateInputPath("target", p, k); }); };
        QCOMPARE(message(dir, PathKind::Directory), QString());
        QCOMPARE(message(file, PathKind::File), QString());
        QCOMPARE(message(file, PathKind::FileOrDirectory), QString());
        QCOMPARE(message(dir, PathKind::FileOrDirectory), QString());
        QCOMPARE(message(dir + "/missing", PathKind::Directory),
                 QString::fromStdString("target: expected an existing directory, found '" + dir + "/missing' (not found)"));
        QCOMPARE(message(file, PathKind::Directory),
                 QString::fromStdString("target: expected an existing directory, found '" + file + "' (a file)"));
        QCOMPARE(message(dir, PathKind::File),
                 QString::fromStdString("target: expected an existing file, found '" + dir + "' (a directory)"));
        QCOMPARE(message(fifo, PathKind::File),
                 QString::fromStdString("target: expected an existing file, found '" + fifo + "' (not a regular file: a FIFO, device or socket)"));
        QCOMPARE(message("", PathKind::File), QString("target: expected an existing file, found an empty path"));
    }

    void diagnoseSettingsValidator() {
        DiagnoseSettings s;
        QCOMPARE(errorOf([&] { validate(s); }), QString());
        s.maxNewTokens = 0;
        QCOMPARE(errorOf([&] { validate(s); }),
                 QString("max-new: expected an integer from 1 to 4096 (tokens generated per prompt), found 0"));
        s.maxNewTokens = 4097;
        QVERIFY(errorOf([&] { validate(s); }).endsWith("found 4097"));
        s.maxNewTokens = 96;
        s.sampling.temperature = std::nan("");
        QCOMPARE(errorOf([&] { validate(s); }), QString("temperature: expected a finite number >= 0 (0 = greedy), found nan"));
        s.sampling.temperature = 0;
        s.probes = {"acceptance,nonsense"};
        QVERIFY(errorOf([&] { validate(s); }).contains("nonsense"));
    }

    // Settings built in code reach the same validator: the engine refuses them by name
    // before any work (runTree too, whose DDTree loop ignores the sampling fields).
    void engineRefusesBadSettings() {
        Engine e;
        LoadOptions o;
        o.threads = -3;
        QCOMPARE(errorOf([&] { e.loadTarget(demoTarget(), o); }),
                 QString("threads: expected an integer from 0 to 1024 (0 = all cores), found -3"));
        QVERIFY(!e.hasTarget());
        e.loadTarget(demoTarget());
        e.loadDrafter(demoDrafter());
        RunSettings s;
        s.topP = std::nan("");
        QCOMPARE(errorOf([&] { e.run(goldenPrompt(0), s); }), QString("top-p: expected a number in (0, 1] (1 = off), found nan"));
        s = RunSettings{};
        s.maxNewTokens = -5;
        QCOMPARE(errorOf([&] { e.runTree(goldenPrompt(0), s, 4); }),
                 QString("max-new: expected an integer >= 1 (tokens to generate), found -5"));
    }

    // Each bad value: exit code 1, the option named with the expected and found values,
    // before anything loads (no "loading" line).
    void cliRefusesBadValuesByName() {
        const QString target = QString::fromStdString(demoTarget());
        const QString drafter = QString::fromStdString(demoDrafter());
        const QStringList run = {"run", "--target", target, "--drafter", drafter, "--prompt-ids", "1,2,3"};
        const QString promptSet = path("set.jsonl");
        writeBytes(promptSet.toStdString(), "{\"prompt\": \"hello\"}\n");
        const QStringList eval = {"eval", "--target", target, "--drafter", drafter, "--prompts", promptSet, "--out",
                                  path("r.dsresults")};
        const QStringList compare = {"compare", "--target", target, "--drafter", drafter, "--drafter", drafter,
                                     "--prompt-ids", "1,2,3"};
        const QStringList diagnose = {"diagnose", "--target", target, "--drafter", drafter};
        struct Case {
            QStringList args;
            QString message;
        };
        const QString temperature = "--temperature: expected a finite number >= 0 (0 = greedy), found ";
        const QString topP = "--top-p: expected a number in (0, 1] (1 = off), found ";
        const QList<Case> cases = {
            {run + QStringList{"--temperature", "nan"}, temperature + "nan"},
            {run + QStringList{"--temperature", "inf"}, temperature + "inf"},
            {run + QStringList{"--temperature", "-inf"}, temperature + "-inf"},
            {run + QStringList{"--temperature", "-1"}, temperature + "-1"},
            {eval + QStringList{"--temperature", "NaN"}, temperature + "nan"},
            {compare + QStringList{"--temperature", "nan"}, temperature + "nan"},
            {diagnose + QStringList{"--temperature", "nan"}, temperature + "nan"},
            {run + QStringList{"--top-p", "nan"}, topP + "nan"},
            {run + QStringList{"--top-p", "0"}, topP + "0"},
            {run + QStringList{"--top-p", "1.5"}, topP + "1.5"},
            {eval + QStringList{"--top-p", "inf"}, topP + "inf"},
            {run + QStringList{"--top-k", "-1"}, "--top-k: expected an integer >= 0 (0 = off), found -1"},
            {run + QStringList{"--seed", "-1"}, "--seed: expected an integer from 0 to 18446744073709551615, found '-1'"},
            {eval + QStringList{"--seed", "18446744073709551616"},
             "--seed: expected an integer from 0 to 18446744073709551615, found '18446744073709551616'"},
            {diagnose + QStringList{"--seed", "1e3"}, "--seed: expected an integer from 0 to 18446744073709551615, found '1e3'"},
            {run + QStringList{"--record-top-k", "0"}, "--record-top-k: expected an integer from 1 to 1024, found 0"},
            {run + QStringList{"--max-new", "0"}, "--max-new: expected an integer >= 1 (tokens to generate), found 0"},
            {eval + QStringList{"--max-new", "-4"}, "--max-new: expected an integer >= 1 (tokens to generate), found -4"},
            {compare + QStringList{"--max-new", "0"}, "--max-new: expected an integer >= 1 (tokens to generate), found 0"},
            {diagnose + QStringList{"--max-new", "5000"},
             "--max-new: expected an integer from 1 to 4096 (tokens generated per prompt), found 5000"},
            {run + QStringList{"--threads", "-1"}, "--threads: expected an integer from 0 to 1024 (0 = all cores), found -1"},
            {eval + QStringList{"--threads", "5000"}, "--threads: expected an integer from 0 to 1024 (0 = all cores), found 5000"},
            {run + QStringList{"--device", "tpu"}, "--device: expected cpu, cuda, cuda:N, a comma-separated list of them (cuda:0,cuda:1) or auto, found 'tpu'"},
            {diagnose + QStringList{"--device", "cuda:x"}, "--device: expected cpu, cuda, cuda:N, a comma-separated list of them (cuda:0,cuda:1) or auto, found 'cuda:x'"},
            {run + QStringList{"--dtype", "float16"}, "--dtype: expected float32 or bfloat16, found 'float16'"},
            {run + QStringList{"--device", "cpu,cpu", "--gpu-memory", "nanGiB,1GiB"},
             "--gpu-memory: expected a comma-separated list of sizes >= 0 with a unit (e.g. 40GiB,40GiB; units B, KB, "
             "MB, GB, TB, KiB, MiB, GiB, TiB), found 'nanGiB'"},
            {eval + QStringList{"--device", "cpu,cpu", "--gpu-memory", "1GiB"},
             "--gpu-memory: expected one limit per device of --device (2), found 1 limits"},
            {diagnose + QStringList{"--device", "cpu,cpu", "--split-after", "1,2"},
             "--split-after: expected 1 layer index(es), one fewer than the 2 device(s) the target is split across, found 2"},
            {run + QStringList{"--device", "cpu,cpu", "--drafter-device", "cuda:1"},
             "--drafter-device: expected one of the devices listed in --device ('cpu,cpu'), found 'cuda:1'"},
            {run + QStringList{"--max-context", "0"},
             "--max-context: expected an integer >= 1 (tokens of KV cache planned per layer), found 0"},
            {eval + QStringList{"--cuda-graphs", "maybe"}, "--cuda-graphs: expected auto, on or off, found 'maybe'"},
            {{"compare-targets", "--target", target, "--prompt-ids", "1,2", "--device-b", "tpu"},
             "--device-b: expected cpu, cuda, cuda:N, a comma-separated list of them (cuda:0,cuda:1) or auto, found 'tpu'"},
            {{"compare-targets", "--target", target, "--prompt-ids", "1,2", "--dtype-a", "half"},
             "--dtype-a: expected float32 or bfloat16, found 'half'"},
            {{"forward", "--model", target, "--prompt-ids", "1,2", "--out", path("f.safetensors"), "--dtype", "x"},
             "--dtype: expected float32 or bfloat16, found 'x'"},
            {run + QStringList{"--ddtree-budget", "5000"}, "--ddtree-budget: DDTree budget '5000' is not an integer from 1 to 4096"},
            {run + QStringList{"--ddtree-budget", "nan"}, "--ddtree-budget: DDTree budget 'nan' is not an integer from 1 to 4096"},
            {run + QStringList{"--ddtree-budget", "4", "--temperature", "0.7"}, "--ddtree-budget: DDTree runs are greedy"},
            // Paths.
            {{"run", "--target", path("missing"), "--drafter", drafter, "--prompt", "x"},
             "--target: expected an existing directory, found '" + path("missing") + "' (not found)"},
            {{"run", "--target", target, "--drafter", path("missing"), "--prompt", "x"},
             "--drafter: expected an existing directory or file, found '" + path("missing") + "' (not found)"},
            {{"run", "--target", promptSet, "--drafter", drafter, "--prompt", "x"},
             "--target: expected an existing directory, found '" + promptSet + "' (a file)"},
            {run.mid(0, 5) + QStringList{"--prompt-file", tmp_.path()},
             "--prompt-file: expected an existing file, found '" + tmp_.path() + "' (a directory)"},
            {run.mid(0, 5) + QStringList{"--prompt-file", path("missing.txt")},
             "--prompt-file: expected an existing file, found '" + path("missing.txt") + "' (not found)"},
            {{"eval", "--target", target, "--drafter", drafter, "--prompts", path("missing.jsonl"), "--out", path("r.dsresults")},
             "--prompts: expected an existing file, found '" + path("missing.jsonl") + "' (not found)"},
            {{"diagnose", "--target", target, "--drafter", drafter, "--prompts", tmp_.path()},
             "--prompts: expected an existing file, found '" + tmp_.path() + "' (a directory)"},
            {{"compare-targets", "--target", target, "--target-b", path("nope"), "--prompt-ids", "1,2"},
             "--target-b: expected an existing directory, found '" + path("nope") + "' (not found)"},
            {{"inspect", path("nope")}, "path: expected an existing directory or file, found '" + path("nope") + "' (not found)"},
            {run + QStringList{"--json", tmp_.path()},
             "--json: refusing to write '" + tmp_.path() + "': it is a directory, not a regular file; give a file name"},
            {eval.mid(0, 7) + QStringList{"--out", "/dev/null"},
             "--out: refusing to write '/dev/null': it is a character device, not a regular file; give a file name"},
            {run + QStringList{"--json", path("no-such-dir/run.json")},
             "--json: cannot write '" + path("no-such-dir/run.json") + "': directory '" + path("no-such-dir") +
                 "' does not exist"},
            {{"forward", "--model", target, "--prompt-ids", "1,2", "--out", tmp_.path()},
             "--out: refusing to write '" + tmp_.path() + "': it is a directory"},
            {{"inspect", target, "--csv", "/dev/null"}, "--csv: refusing to write '/dev/null': it is a character device"},
        };
        for (const auto& c : cases) {
            const Exit r = cli(c.args);
            const QString what = c.args.join(' ') + "\n -> " + QString::number(r.code) + ": " + r.err;
            QVERIFY2(r.code == 1, qPrintable(what));
            QVERIFY2(r.err.contains("error: " + c.message), qPrintable(what));
            QVERIFY2(!r.err.contains("loading"), qPrintable(what));  // refused before any model loads
        }
        // Found only once the target's layer count is known (while loading): still named, as
        // on the command line.
        {
            const Exit r = cli(run + QStringList{"--device", "cpu,cpu", "--split-after", "9"});
            QVERIFY2(r.code == 1 && r.err.contains("error: --split-after: expected strictly increasing decoder layer "
                                                   "indices in 0..4 (the target has 6 layers), found a boundary after "
                                                   "layer 9"),
                     qPrintable(r.err));
        }
        {
            const Exit r = cli(run + QStringList{"--cuda-graphs", "on"});  // the device is known at load
            QVERIFY2(r.code == 1 && r.err.contains("error: --cuda-graphs: expected auto or off here (CUDA graphs are "
                                                   "impossible: the device is the CPU), found 'on'"),
                     qPrintable(r.err));
        }
        {  // the same from one of several replicas loading at once
            const Exit r = cli(eval + QStringList{"--replicas", "2", "--cuda-graphs", "on"});
            QVERIFY2(r.code == 1 && r.err.contains("error: replica 0 (cpu): --cuda-graphs: expected auto or off here"),
                     qPrintable(r.err));
        }
        // Values CLI11 cannot convert stay usage errors (exit 2), named by CLI11.
        for (const QStringList& extra : {QStringList{"--top-k", "2.5"}, QStringList{"--temperature", "warm"},
                                          QStringList{"--threads", "1e9"}}) {
            const Exit r = cli(run + extra);
            QVERIFY2(r.code == 2 && r.err.contains(extra[0]), qPrintable(extra.join(' ') + " -> " + r.err));
        }
        // An empty value is refused by name (never read as 0 or as not given), numbers and
        // paths alike; --limit's range in words, not CLI11's 300-digit bound.
        for (const QString option : {"--temperature", "--top-k", "--threads", "--split-after", "--json", "--drafter-config",
                                      "--ddtree-budget", "--drafter-device"}) {
            const Exit r = cli(run + QStringList{option, ""});
            QVERIFY2(r.code == 2 && r.err.contains(option + ": expected a value, found an empty string"),
                     qPrintable(option + " '' -> " + r.err));
        }
        {
            const Exit r = cli(eval + QStringList{"--limit", "-1"});
            QVERIFY2(r.code == 2 && r.err.contains("--limit: expected an integer >= 0 (0 = all), found '-1'") &&
                         r.err.size() < 200,
                     qPrintable(r.err));
        }
        QVERIFY(QFileInfo("/dev/null").exists() && !QFileInfo("/dev/null").isFile());  // never replaced
    }

#ifdef DRAFTSCOPE_GUI
    // The GUI's command line goes through the same validators, before a window: exit 2 for a
    // bad value, 1 for a missing file (as a failed load).
    void guiRefusesBadValuesByName() {
        struct Case {
            QStringList args;
            QString message;
        };
        const QList<Case> cases = {
            {{"--max-new", "0"}, "--max-new: expected an integer >= 1 (tokens to generate), found 0"},
            {{"--max-new", "many"}, "--max-new: expected an integer >= 1 (tokens to generate), found 'many'"},
            {{"--device", "tpu"}, "--device: expected cpu, cuda, cuda:N, a comma-separated list of them (cuda:0,cuda:1) or auto, found 'tpu'"},
            {{"--dtype", "float16"}, "--dtype: expected float32 or bfloat16, found 'float16'"},
            {{"--target", path("missing")}, "--target: expected an existing directory, found '" + path("missing") + "' (not found)"},
            {{"--prompt-file", tmp_.path()}, "--prompt-file: expected an existing file, found '" + tmp_.path() + "' (a directory)"},
        };
        for (const auto& c : cases) {
            const Exit r = runProgram(DRAFTSCOPE_GUI, c.args + QStringList{"--export-figures", path("figs")});
            const QString what = c.args.join(' ') + " -> " + QString::number(r.code) + ": " + r.err;
            const bool path = c.args[0] == "--target" || c.args[0] == "--prompt-file";  // bad input: exit 1
            QVERIFY2(r.code == (path ? 1 : 2), qPrintable(what));
            QVERIFY2(r.err.contains("error: " + c.message), qPrintable(what));
        }
    }
#endif
};

QTEST_GUILESS_MAIN(TestOptions)
#include "tst_options.moc"
