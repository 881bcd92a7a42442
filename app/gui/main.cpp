// draftscope: the GUI workbench.
//   draftscope                          open the window
//   draftscope --demo                   open with the shipped demo pair and a sample prompt, and run it
//   draftscope R.dsresults              open a results file (draftscope-cli eval --out) as a recorded run
//   draftscope R.dsresults --export-figures DIR [--results-prompt ID] [--results-drafter N]
//                                       write the recorded prompt's views and the cross-prompt plots, exit
//   draftscope --track DIR [--export-figures OUT]
//                                       show a training run (draftscope-cli track's output), following it
//   draftscope --target T --drafter A --drafter B [--prompt-file F]
//                                       compare drafter A with drafter B on the same target and prompt
//   draftscope [--demo] [--ddtree-budget N]... --export-figures DIR [--target D --drafter D --prompt T]
//                                       run, write every view as PNG/SVG/PDF (+ tables) to DIR, exit
// An interactive window prints "draftscope: run N finished: ..." on stdout after each run.
// Exit codes: 0 success, 1 failure (message on stderr), 2 usage error.

#include "gui/analysis_controller.h"
#include "gui/headless_run.h"
#include "gui/main_window.h"
#include "gui/model_panel.h"
#include "gui/prompt_panel.h"
#include "training_run_view.h"
#include "draftscope/file_io.h"
#include "draftscope/settings_validation.h"
#include "draftscope/version.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QTimer>

#include <csignal>
#include <cstdio>

using namespace draftscope;

namespace {

/// SIGINT/SIGTERM: remove any export being written (no partial file remains), then end as
/// the signal would.
extern "C" void onTerminatingSignal(int sig) {
    removePendingOutputFiles();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

/// Prints a bad option's message ("error: --max-new: expected ..."); returns the usage exit code.
int optionError(const std::string& message) {
    std::fprintf(stderr, "error: %s\n", escapeForDisplay(message).c_str());
    return 2;
}

/// resources/ next to the source tree when run from a build, or the installed data dir.
QString resourcesDir() {
    const QString app = QCoreApplication::applicationDirPath();
    for (const QString& candidate : {app + "/../share/draftscope", app + "/../../resources", app + "/../resources",
                                     QString(DRAFTSCOPE_SOURCE_RESOURCES)})
        if (QFile::exists(candidate + "/demo/target/config.json")) return QDir(candidate).canonicalPath();
    return {};
}

}  // namespace

int main(int argc, char** argv) {
    // Headless export needs no display: fall back to the offscreen platform.
    bool exporting = false;
    for (int i = 1; i < argc; ++i)
        if (QString(argv[i]) == "--export-figures") exporting = true;
    if (exporting && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
        qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");

    QApplication app(argc, argv);
    std::signal(SIGINT, onTerminatingSignal);
    std::signal(SIGTERM, onTerminatingSignal);
    QApplication::setApplicationName("draftscope");
    QApplication::setOrganizationName("draftscope");
    QApplication::setApplicationVersion(DRAFTSCOPE_VERSION);
    QApplication::setWindowIcon(QIcon(":/icons/draftscope.svg"));

    QCommandLineParser cli;
    cli.setApplicationDescription("draftscope: see what a speculative-decoding drafter drafts and where the target disagrees");
    cli.addHelpOption();
    cli.addVersionOption();
    QCommandLineOption demo("demo", "Open with the shipped demo target + drafter and a sample prompt, and run it.");
    QCommandLineOption target("target", "Target model directory.", "dir");
    QCommandLineOption drafter("drafter", "DFlash drafter directory; given twice, the second is drafter B, compared "
                               "with the first on every analysis.", "dir");
    QCommandLineOption prompt("prompt", "Prompt text (raw).", "text");
    QCommandLineOption promptFile("prompt-file", "Read the prompt text from a file.", "file");
    QCommandLineOption chat("chat", "Wrap the prompt as a ChatML user turn.");
    QCommandLineOption maxNew("max-new", "Tokens to generate (default 96).", "n", "96");
    QCommandLineOption device("device", "cpu, cuda, cuda:N, a comma-separated list splitting the target's layers "
                              "across devices (cuda:0,cuda:1), or auto (default cpu).", "device", "cpu");
    QCommandLineOption gpuMemory("gpu-memory", "Usable memory per device of --device, e.g. 40GiB,40GiB (default: "
                                 "a GPU's free memory).", "limits");
    QCommandLineOption dtype("dtype", "float32 or bfloat16 (default float32).", "dtype", "float32");
    QCommandLineOption ddtreeBudget("ddtree-budget", "Also run the DDTree loop with N tree nodes per step (repeatable; "
                                    "replaces the default budgets 4, 8, 16, 32; 0 = no tree runs).", "n");
    QCommandLineOption exportDir("export-figures", "Render every view to DIR as PNG, SVG and PDF (tables as CSV "
                                 "and JSON) without showing a window, then exit.", "dir");
    QCommandLineOption resultsPrompt("results-prompt", "With a results file: show (and export) the prompt with this id "
                                     "(default: the worst by tau).", "id");
    QCommandLineOption resultsDrafter("results-drafter", "With a results file: show drafter N (1-based, default 1).", "n", "1");
    QCommandLineOption track("track", "Show the training run evaluated by draftscope-cli track into DIR (its --out, or "
                             "the run directory holding draftscope-track/) and follow it while track --watch runs.", "dir");
    for (const auto& o : {demo, target, drafter, prompt, promptFile, chat, maxNew, device, gpuMemory, dtype, ddtreeBudget, exportDir,
                          resultsPrompt, resultsDrafter, track})
        cli.addOption(o);
    cli.addPositionalArgument("results", "A results file written by draftscope-cli eval --out: opened as a recorded "
                              "run, without models or a GPU.", "[R.dsresults]");
    cli.process(app);
    const QStringList positional = cli.positionalArguments();
    if (positional.size() > 1) {
        std::fprintf(stderr, "error: give at most one results file, not %lld arguments\n",
                     static_cast<long long>(positional.size()));
        return 2;
    }
    const QString resultsPath = positional.isEmpty() ? QString() : positional.first();
    bool okDrafter = false;
    const int resultsDrafterIndex = cli.value(resultsDrafter).toInt(&okDrafter) - 1;
    if (!okDrafter || resultsDrafterIndex < 0) {
        std::fprintf(stderr, "error: --results-drafter must be a positive integer\n");
        return 2;
    }

    // Option values go through the backend's validators, as the CLI's (settings_validation.h).
    const QString res = resourcesDir();
    ModelRequest models;
    models.device = cli.value(device);
    models.dtype = cli.value(dtype);
    models.gpuMemory = cli.value(gpuMemory).trimmed();
    bool okMax = false;
    const int maxNewTokens = cli.value(maxNew).toInt(&okMax);
    try {
        RunSettings settings;
        settings.maxNewTokens = maxNewTokens;
        if (!okMax) throw InvalidSetting("max-new", "an integer >= 1 (tokens to generate)",
                                         "'" + cli.value(maxNew).toStdString() + "'");
        validate(settings);
        LoadOptions load;
        load.device = models.device.toStdString();
        load.dtype = models.dtype.toStdString();
        if (!models.gpuMemory.isEmpty()) load.deviceMemory = parseMemoryLimits(models.gpuMemory.toStdString());
        validate(load);
    } catch (const InvalidSetting& e) {
        return optionError(e.renamed("--" + e.option()).what());
    }
    try {  // a missing file is bad input (exit 1), as a failed load
        if (cli.isSet(target)) validateInputPath("target", cli.value(target).toStdString(), PathKind::Directory);
        for (const QString& d : cli.values(drafter)) validateInputPath("drafter", d.toStdString(), PathKind::FileOrDirectory);
        if (cli.isSet(promptFile)) validateInputPath("prompt-file", cli.value(promptFile).toStdString(), PathKind::File);
    } catch (const InvalidSetting& e) {
        optionError(e.renamed("--" + e.option()).what());
        return 1;
    }
    QString promptText;
    if (cli.isSet(demo)) {
        if (res.isEmpty()) {
            std::fprintf(stderr, "error: the demo models were not found (looked for resources/demo next to the program)\n");
            return 1;
        }
        models.targetDir = res + "/demo/target";
        models.drafterDir = res + "/demo/drafter";
        QFile f(res + "/prompts/fibonacci.py");
        if (f.open(QIODevice::ReadOnly)) promptText = QString::fromUtf8(f.readAll());
    }
    if (cli.isSet(target)) models.targetDir = cli.value(target);
    const QStringList drafters = cli.values(drafter);
    if (drafters.size() > 2) {
        std::fprintf(stderr, "error: --drafter can be given at most twice (drafter A, then drafter B to compare)\n");
        return 2;
    }
    if (!drafters.isEmpty()) models.drafterDir = drafters[0];
    if (drafters.size() == 2) models.drafterBDir = drafters[1];
    if (cli.isSet(prompt)) promptText = cli.value(prompt);
    if (cli.isSet(promptFile)) {
        try {
            promptText = QString::fromStdString(readFileToString(cli.value(promptFile).toStdString()));
        } catch (const Error& e) {
            std::fprintf(stderr, "error: --prompt-file: %s\n", escapeForDisplay(e.what()).c_str());
            return 1;
        }
    }

    std::vector<int> budgets;
    if (QString err; !parseDdtreeBudgets(cli.values(ddtreeBudget).join(QLatin1Char(',')), &budgets, &err)) {
        std::fprintf(stderr, "error: --ddtree-budget: %s\n", qPrintable(err));
        return 2;
    }

    MainWindow window(/*showErrorDialogs=*/!exporting);
    if (cli.isSet(ddtreeBudget)) window.promptPanel()->setDdtreeBudgets(budgets);
    if (!res.isEmpty()) {
        try {
            window.promptPanel()->loadPromptSet(res + "/prompts/demo-prompts.jsonl");
        } catch (const std::exception&) {
        }
    }
    window.promptPanel()->setMaxNewTokens(maxNewTokens);
    if (cli.isSet(chat)) window.promptPanel()->setChat(true);
    if (!promptText.isEmpty()) window.promptPanel()->setPromptText(promptText);
    {  // the fields show what the command line named (device, GPU memory and dtype always)
        ModelRequest shown = window.modelPanel()->request();
        if (!models.targetDir.isEmpty()) shown.targetDir = models.targetDir;
        if (!models.drafterDir.isEmpty()) shown.drafterDir = models.drafterDir;
        if (!models.drafterBDir.isEmpty()) shown.drafterBDir = models.drafterBDir;
        shown.device = models.device;
        shown.gpuMemory = models.gpuMemory;
        shown.dtype = models.dtype;
        window.modelPanel()->setRequest(shown);
    }

    if (cli.isSet(track)) {
        QString error;
        if (!window.openTrainingRun(cli.value(track), &error)) {
            std::fprintf(stderr, "error: --track: %s\n", error.toLocal8Bit().constData());
            return 1;
        }
        if (exporting && resultsPath.isEmpty() && models.targetDir.isEmpty()) {
            const QStringList written = window.trainingRunView()->exportAll(cli.value(exportDir), &error);
            for (const auto& f : written) std::printf("%s\n", f.toLocal8Bit().constData());
            if (!error.isEmpty()) {
                std::fprintf(stderr, "error: %s\n", error.toLocal8Bit().constData());
                return 1;
            }
            return 0;
        }
    }
    if (exporting && !resultsPath.isEmpty())
        return HeadlessRun(window).exportRecorded(resultsPath, cli.value(exportDir),
                                                  cli.isSet(resultsPrompt) ? std::optional(cli.value(resultsPrompt))
                                                                           : std::nullopt,
                                                  resultsDrafterIndex);
    if (exporting) {
        if (models.targetDir.isEmpty() || models.drafterDir.isEmpty() || promptText.isEmpty()) {
            std::fprintf(stderr, "error: --export-figures needs a results file, --demo, or --target, --drafter and "
                                 "--prompt/--prompt-file\n");
            return 2;
        }
        return HeadlessRun(window).exportLive(models, cli.value(exportDir));
    }

    // One line on stdout per finished run, once the window shows it: the signal scripts
    // wait for (tools/gui-smoke.sh).
    QObject::connect(window.controller(), &AnalysisController::analysisFinished, &window, [](const RunBundlePtr& b) {
        std::printf("draftscope: run %llu finished: %zu verify steps, tau %.3f, %zu DDTree run(s)\n",
                    static_cast<unsigned long long>(b->requestId), b->run.steps.size(), b->run.tau, b->treeRuns.size());
        std::fflush(stdout);
    });
    window.show();
    if (!resultsPath.isEmpty()) {
        // The recorded run replaces the demo run; models given on the command line are only filled in.
        QTimer::singleShot(0, &window, [&window, resultsPath] { window.openResultsFile(resultsPath); });
    } else if (!models.targetDir.isEmpty() && !models.drafterDir.isEmpty()) {
        QTimer::singleShot(0, &window, [&window, models, run = !promptText.isEmpty()] {
            window.loadModels(models);
            if (run) window.runAnalysis();
        });
    }
    return app.exec();
}
