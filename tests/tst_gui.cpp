// The controller and the main window on the real demo pair: the event loop keeps running
// during a run, cancel and superseding work, a bad checkpoint is reported without taking
// the window down, every view is populated, and `draftscope --export-figures` writes
// every figure.

#include "acceptance_plots.h"
#include "acceptance_tree_view.h"
#include "budget_sweep_plot.h"
#include "comparison_summary_view.h"
#include "drafter_comparison.h"
#include "mask_view.h"
#include "tree_steps.h"
#include "attention_view.h"
#include "block_agreement_view.h"
#include "gui/analysis_controller.h"
#include "gui/dialog_dirs.h"
#include "gui/headless_run.h"
#include "gui/inspector_dialog.h"
#include "gui/loaded_models.h"
#include "gui/main_window.h"
#include "gui/run_state.h"
#include "gui/shortcuts_dialog.h"
#include "gui/model_panel.h"
#include "gui/prompt_panel.h"
#include "hidden_stats_view.h"
#include "output_strip_view.h"
#include "step_selection.h"
#include "gui_test_support.h"
#include "test_support.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QProcess>
#include <QSignalSpy>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QMenuBar>
#include <QMenu>
#include <QAction>
#include <QScrollArea>
#include <QScrollBar>
#include <QRegularExpression>

#include <functional>
#include <memory>
#include <QPushButton>
#include <QSpinBox>
#include <QStatusBar>
#include <QStandardItemModel>
#include <QTimer>
#include <QScreen>
#include <QSettings>
#include <QToolBar>
#include <QtTest>

using namespace draftscope;
using namespace testsupport;

namespace {
ModelRequest demoModels() {
    ModelRequest r;
    r.targetDir = QString::fromStdString(demoTarget());
    r.drafterDir = QString::fromStdString(demoDrafter());
    return r;
}

AnalysisRequest demoRequest(int maxNew) {
    AnalysisRequest r;
    r.prompt.kind = PromptSpec::Kind::Ids;
    r.prompt.ids = promptIds(0);
    r.settings.maxNewTokens = maxNew;
    r.settings.ignoreEos = true;
    r.settings.loop = LoopRevision::April2026;  // goldens.json holds the April loop
    return r;
}
/// Loads `models` (the demo pair by default) into `c` and waits for them (false after a minute).
[[nodiscard]] bool loadModelsAndWait(AnalysisController& c, const ModelRequest& models = demoModels()) {
    QSignalSpy loaded(&c, &AnalysisController::modelsLoaded);
    c.loadModels(models);
    return testsupport::waitForSignal(loaded, 60000);
}

/// Analyses `r` on `c` and returns its finished bundle (nullptr after two minutes);
/// *requestId gets analyse()'s id.
RunBundlePtr analyseToEnd(AnalysisController& c, const AnalysisRequest& r, quint64* requestId = nullptr) {
    QSignalSpy finished(&c, &AnalysisController::analysisFinished);
    const quint64 id = c.analyse(r);
    if (requestId) *requestId = id;
    if (!testsupport::waitForSignal(finished, 120000)) return nullptr;
    return finished.first().first().value<RunBundlePtr>();
}
}  // namespace

class TestGui : public QObject {
    Q_OBJECT
private slots:
    void modelsPanelNamesTheTargetsWeightStorage() {
        // gpt-oss's MXFP4 experts: the Models panel says how they are held; plain targets say nothing.
        ModelsLoaded loaded;
        loaded.target.architecture = "GptOssForCausalLM";
        loaded.target.layerTypes = {"sliding_attention", "full_attention", "sliding_attention"};
        QVERIFY(!describeLoadedModels(loaded).contains("Target weights"));
        loaded.target.quantization = "MXFP4 experts, kept packed (each chosen expert dequantised per forward)";
        const auto text = describeLoadedModels(loaded);
        QVERIFY2(text.contains("\nTarget weights: MXFP4 experts, kept packed") &&
                     text.contains("(1 x sliding_attention, 1 x full_attention, 1 x sliding_attention)"),
                 qPrintable(text));
    }

    void initTestCase() {
        QCoreApplication::setOrganizationName("draftscope-tests");
        QCoreApplication::setApplicationName("tst_gui");
    }

    void eventLoopKeepsRunningDuringARun() {
        AnalysisController c;
        QVERIFY(loadModelsAndWait(c));
        QSignalSpy finished(&c, &AnalysisController::analysisFinished);
        QSignalSpy progress(&c, &AnalysisController::progress);
        int ticks = 0;
        QTimer timer;
        connect(&timer, &QTimer::timeout, [&] { ++ticks; });
        timer.start(10);
        QElapsedTimer clock;
        clock.start();
        c.analyse(demoRequest(96));
        QVERIFY(waitForSignal(finished, 120000));
        const qint64 ms = clock.elapsed();
        timer.stop();
        // The GUI thread served its timer throughout: at least a third of the ideal tick count.
        qInfo("run took %lld ms; %d timer ticks (ideal %lld); %lld progress signals", ms, ticks, ms / 10,
              static_cast<long long>(progress.count()));
        QVERIFY2(ticks >= ms / 30, qPrintable(QString("%1 ticks in %2 ms").arg(ticks).arg(ms)));
        QVERIFY(progress.count() >= 10);
        const auto bundle = finished.first().first().value<RunBundlePtr>();
        QCOMPARE(bundle->run.acceptanceLengths,
                 goldens()["dflash_generate"]["drafter-good.p0"]["acceptance_lengths"].get<std::vector<int>>());
        QCOMPARE(bundle->pieces.size(), bundle->run.outputIds.size());
        QCOMPARE(bundle->hiddenStats.series.size(), std::size_t(4));  // 3 tapped layers + drafter context
    }

    void cancelStopsARun() {
        AnalysisController c;
        QVERIFY(loadModelsAndWait(c));
        QSignalSpy cancelled(&c, &AnalysisController::cancelled);
        QSignalSpy finished(&c, &AnalysisController::analysisFinished);
        QSignalSpy progress(&c, &AnalysisController::progress);
        c.analyse(demoRequest(3000));
        QVERIFY(waitForSignal(progress, 60000));
        c.cancel();
        QVERIFY(waitForSignal(cancelled, 60000));
        QCOMPARE(finished.count(), 0);
        QTRY_VERIFY(!c.isBusy());
    }

    void newerRequestSupersedesPendingAndRunning() {
        AnalysisController c;
        QVERIFY(loadModelsAndWait(c));
        QSignalSpy started(&c, &AnalysisController::analysisStarted);
        QSignalSpy finished(&c, &AnalysisController::analysisFinished);
        QSignalSpy cancelled(&c, &AnalysisController::cancelled);
        QSignalSpy progress(&c, &AnalysisController::progress);
        // Replies reach receivers on this thread; once a newer analysis is asked for, none of
        // an older one's progress, stages or results may arrive (the controller drops them).
        quint64 first = 0;
        bool superseded = false;
        int staleReplies = 0;
        auto countStale = [&](quint64 id) { staleReplies += superseded && id == first; };
        connect(&c, &AnalysisController::progress, this, [&](quint64 id, qint64, qint64) { countStale(id); });
        connect(&c, &AnalysisController::stageChanged, this, [&](quint64 id, const QString&) { countStale(id); });
        connect(&c, &AnalysisController::partialResult, this, [&](const RunBundlePtr& b) { countStale(b->requestId); });
        connect(&c, &AnalysisController::analysisFinished, this, [&](const RunBundlePtr& b) { countStale(b->requestId); });
        first = c.analyse(demoRequest(3000));
        QVERIFY(waitForSignal(progress, 30000));  // the first is running now
        QVERIFY(!c.isLatestAnalysis(0));
        QVERIFY(c.isLatestAnalysis(first));
        const auto second = c.analyse(demoRequest(8));
        superseded = true;
        QVERIFY(!c.isLatestAnalysis(first));
        const auto third = c.analyse(demoRequest(16));
        QVERIFY(waitForCount(finished, 1, 120000));
        QTest::qWait(300);
        // The running one was cancelled, the pending second never started, the third ran.
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(cancelled.first().first().toULongLong(), first);
        QCOMPARE(started.count(), 2);
        QCOMPARE(started.at(1).first().toULongLong(), third);
        QCOMPARE(finished.count(), 1);
        const auto b = finished.first().first().value<RunBundlePtr>();
        QCOMPARE(b->requestId, third);
        QVERIFY(second != third);
        QCOMPARE(static_cast<int>(b->run.outputIds.size() - b->run.promptIds.size()), 16);
        QCOMPARE(staleReplies, 0);
    }

    void supersededAttentionIsDropped() {
        AnalysisController c;
        QVERIFY(loadModelsAndWait(c));
        const auto b = analyseToEnd(c, demoRequest(32));
        QVERIFY(b && b->run.steps.size() >= 3);
        // Two requests back to back: the first is superseded whether it is still pending or
        // already computing, so only the second one's answer arrives.
        QSignalSpy attn(&c, &AnalysisController::attentionReady);
        c.requestAttention(b, 1);
        c.requestAttention(b, 2);
        QVERIFY(waitForSignal(attn, 60000));
        QTRY_VERIFY(!c.isBusy());
        QTest::qWait(200);
        QCOMPARE(attn.count(), 1);
        QCOMPARE(attn.first().at(0).toULongLong(), b->requestId);
        QCOMPARE(attn.first().at(1).value<DrafterAttention>().step, 2);
    }

    void eachRunArrivesWhenItFinishes() {
        AnalysisController c;
        QVERIFY(loadModelsAndWait(c));
        QSignalSpy partial(&c, &AnalysisController::partialResult);
        AnalysisRequest r = demoRequest(32);
        r.ddtreeBudgets = {4, 8};
        quint64 id = 0;
        const auto full = analyseToEnd(c, r, &id);
        QVERIFY(full);
        QCOMPARE(full->treeRuns.size(), std::size_t(2));
        // The chain run (with its statistics), then chain + budget 4; the last run comes complete.
        QCOMPARE(partial.count(), 2);
        for (int i = 0; i < 2; ++i) {
            const auto p = partial.at(i).first().value<RunBundlePtr>();
            QCOMPARE(p->requestId, id);
            QCOMPARE(p->run.acceptanceLengths, full->run.acceptanceLengths);
            QCOMPARE(p->pieces.size(), p->run.outputIds.size());
            QCOMPARE(p->hiddenStats.series.size(), full->hiddenStats.series.size());
            QCOMPARE(p->treeRuns.size(), std::size_t(i));
            for (int k = 0; k < i; ++k) {
                QCOMPARE(p->treeRuns[k].budget, full->treeRuns[k].budget);
                QCOMPARE(p->treeRuns[k].acceptanceLengths, full->treeRuns[k].acceptanceLengths);
                for (const auto& st : p->treeRuns[k].steps)
                    for (auto t : st.tokens) QVERIFY(p->tokenPieces.count(t));
            }
        }
    }

    void cancelKeepsTheRunsThatFinished() {
        MainWindow w(false);
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["0"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(64);
        w.promptPanel()->setDdtreeBudgets({4, 8});
        QSignalSpy loaded(w.controller(), &AnalysisController::modelsLoaded);
        w.loadModels(demoModels());
        QVERIFY(waitForSignal(loaded, 60000));
        // While budget 4 runs, the chain is already on screen; cancel once budget 8 starts.
        int chainRowsDuringBudget4 = -1;
        connect(w.controller(), &AnalysisController::stageChanged, &w, [&](quint64, const QString& stage) {
            if (stage.startsWith("DDTree budget 4"))
                chainRowsDuringBudget4 = w.blockAgreementView()->model()->rowCount();
            if (stage.startsWith("DDTree budget 8"))
                w.promptPanel()->findChild<QPushButton*>("cancelButton")->click();
        });
        QSignalSpy cancelled(w.controller(), &AnalysisController::cancelled);
        QSignalSpy finished(w.controller(), &AnalysisController::analysisFinished);
        w.runAnalysis();
        QVERIFY(waitForSignal(cancelled, 200000));
        QCOMPARE(finished.count(), 0);
        QVERIFY(w.lastResult());
        const auto& run = w.lastResult()->run;
        QVERIFY(!run.steps.empty());
        QCOMPARE(chainRowsDuringBudget4, static_cast<int>(run.steps.size()));
        QCOMPARE(w.blockAgreementView()->model()->rowCount(), static_cast<int>(run.steps.size()));
        QCOMPARE(w.lastResult()->treeRuns.size(), std::size_t(1));  // budget 4 finished, 8 was cancelled
        QCOMPARE(w.lastResult()->treeRuns[0].budget, 4);
        QCOMPARE(w.treeView()->budgetCount(), 1);
        QCOMPARE(w.budgetSweepPlot()->budgets(), (QVector<double>{4}));
        QCOMPARE(w.promptPanel()->progressText(), QString("cancelled (kept: chain, DDTree 4)"));
        QVERIFY(w.statusBar()->currentMessage().contains("cancelled"));
        // The caption says what is on screen, not that runs are still coming; the Log names
        // what was kept.
        const QString caption = w.blockAgreementView()->caption();
        QVERIFY2(!caption.contains("running") && caption.contains("(cancelled: kept chain, DDTree 4)"), qPrintable(caption));
        const QString logText = w.logText();
        QVERIFY2(logText.contains(QRegularExpression("cancelled after [0-9.]+ s; kept on screen: chain, DDTree 4")), qPrintable(logText));
        // Each run that finished before the cancel has its own line with its time.
        QVERIFY2(logText.contains(QRegularExpression(": chain done after [0-9.]+ s")) &&
                     logText.contains(QRegularExpression(": DDTree 4 done after [0-9.]+ s")),
                 qPrintable(logText));
        QCOMPARE(w.runState().phase(), RunState::Phase::Cancelled);
    }

    void cancelBeforeTheTreesSaysSoInTheDDTreeView() {
        MainWindow w(false);
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["0"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(48);
        w.promptPanel()->setDdtreeBudgets({4, 8});
        QSignalSpy loaded(w.controller(), &AnalysisController::modelsLoaded);
        w.loadModels(demoModels());
        QVERIFY(waitForSignal(loaded, 60000));
        connect(w.controller(), &AnalysisController::stageChanged, &w, [&](quint64, const QString& stage) {
            if (stage.startsWith("DDTree budget 4")) w.promptPanel()->findChild<QPushButton*>("cancelButton")->click();
        });
        QSignalSpy cancelled(w.controller(), &AnalysisController::cancelled);
        w.runAnalysis();
        QVERIFY(waitForSignal(cancelled, 200000));
        QCOMPARE(w.treeView()->budgetCount(), 0);
        const QString tree = w.treeView()->stepInfoText();
        QVERIFY2(tree.contains("cancelled before its DDTree runs (budgets 4, 8) finished") && !tree.contains("enter DDTree budgets"),
                 qPrintable(tree));
        QCOMPARE(w.promptPanel()->progressText(), QString("cancelled (kept: chain)"));
    }

    void freshWindowAndFailedLoadTellTheTruth() {
        MainWindow w(false);
        // A fresh window has run nothing: its bar says so.
        QCOMPARE(w.promptPanel()->progressBarText(), QString("no run yet"));
        // A finished run, then a load that fails: the run is marked stale, and the Run queued
        // behind the load reports nothing more (one error, the load's).
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["1"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(16);
        w.promptPanel()->setDdtreeBudgets({});
        QString err;
        QVERIFY2(HeadlessRun(w).loadAndRun(demoModels(), &err), qPrintable(err));
        QVERIFY(!w.blockAgreementView()->caption().contains("stale"));
        QSignalSpy errors(&w, &MainWindow::errorReported);
        QSignalSpy failed(w.controller(), &AnalysisController::failed);
        ModelRequest bad = demoModels();
        bad.drafterDir = QString::fromStdString(dataPath("models/qwen3_5-tiny-causallm"));  // not a drafter
        w.loadModels(bad);
        w.runAnalysis();
        QVERIFY(waitForCount(failed, 2, 60000));  // the load, then the run queued behind it
        QTest::qWait(50);
        deliverQueuedSlots();
        QCOMPARE(errors.count(), 1);
        QCOMPARE(errors.first().first().toString(), QString("load"));
        QVERIFY2(w.blockAgreementView()->caption().contains("stale: its models are no longer loaded"),
                 qPrintable(w.blockAgreementView()->caption()));
        QVERIFY(w.logText().contains("not run: the models did not load"));
    }

    void restartRestoresOnlyWhatHasContent() {
        // A session closed with the A vs B, Diagnose and Results docks and the Compare toolbar
        // open comes back without them (nothing loaded); the window fits the screen.
        {
            MainWindow w(false);
            w.show();
            for (const char* d : {"comparisonDock", "diagnoseDock", "resultsDock", "resultsAggregateDock", "trainingRunDock"})
                w.findChild<QDockWidget*>(d)->show();
            w.findChild<QToolBar*>("compareToolBar")->show();
            w.resize(5000, 4000);
            w.move(3000, 2000);
            w.close();
        }
        MainWindow w(false);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        for (const char* d : {"comparisonDock", "diagnoseDock", "resultsDock", "resultsAggregateDock", "trainingRunDock"})
            QVERIFY2(w.findChild<QDockWidget*>(d)->isHidden(), d);
        QVERIFY(w.findChild<QToolBar*>("compareToolBar")->isHidden());
        const QRect avail = w.screen()->availableGeometry();
        // The test screen (800x800) is narrower than the window's minimum width (the docks at
        // their smallest): the window is then at that width, from the screen's left edge.
        const QRect g = w.geometry();
        const QString where = QString("%1,%2 %3x%4 on %5x%6").arg(g.x()).arg(g.y()).arg(g.width()).arg(g.height())
                                  .arg(avail.width()).arg(avail.height());
        QVERIFY2(g.top() >= avail.top() && g.bottom() <= avail.bottom(), qPrintable(where));
        QVERIFY2(g.left() >= avail.left() - 2 && g.width() <= std::max(avail.width(), w.minimumSizeHint().width()),
                 qPrintable(where));
        // View > Reset layout leaves no stray dock or toolbar either.
        w.findChild<QDockWidget*>("diagnoseDock")->show();
        w.resetLayout();
        QVERIFY(w.findChild<QDockWidget*>("diagnoseDock")->isHidden());
        QVERIFY(w.findChild<QToolBar*>("compareToolBar")->isHidden());
        // Models loaded: the Diagnose dock open at the last close comes back with them.
        QSignalSpy loaded(w.controller(), &AnalysisController::modelsLoaded);
        w.loadModels(demoModels());
        QVERIFY(waitForSignal(loaded, 60000));
        QVERIFY(w.findChild<QDockWidget*>("diagnoseDock")->isHidden());  // Reset layout forgot it
        QSettings().remove("window");
    }

    void liveRunsNameTheirPrompt() {
        // The label figure titles use: a prompt's id, else its first line (quoted, elided).
        PromptSpec text;
        text.text = "\n  def a_function_with_a_rather_long_name(argument):\n    return 1\n";
        QCOMPARE(promptLabelOf(text, "p7"), QString("p7"));
        QCOMPARE(promptLabelOf(text, {}), QString("\"def a_function_with_a_rather_long_name(\u2026\"")); // 39 + ellipsis
        text.text = "x = 1\ny = 2";
        QCOMPARE(promptLabelOf(text, {}), QString("\"x = 1\""));
        PromptSpec ids;
        ids.kind = PromptSpec::Kind::Ids;
        ids.ids = {1, 2, 3};
        QCOMPARE(promptLabelOf(ids, {}), QString("ids[3]"));
        // A live run of a bundled sample prompt is labelled with the sample's name, as a
        // results file's prompt is with its id; edited, with its first line.
        MainWindow w(false);
        const QString samples = QString(DRAFTSCOPE_DEMO_DIR) + "/../prompts/demo-prompts.jsonl";
        w.promptPanel()->loadPromptSet(samples);
        const QString fib = QString::fromStdString(goldens()["prompts"]["0"].get<std::string>());
        QCOMPARE(w.promptPanel()->promptSetModel()->item(0)->data(Qt::DisplayRole).toString().section(' ', 0, 0),
                 QString("fibonacci"));
        w.promptPanel()->setPromptText(fib);  // what --demo puts in the editor (fibonacci.py)
        w.promptPanel()->setMaxNewTokens(8);
        w.promptPanel()->setDdtreeBudgets({});
        QCOMPARE(w.promptPanel()->request().promptId, QString("fibonacci"));
        QString err;
        QVERIFY2(HeadlessRun(w).loadAndRun(demoModels(), &err), qPrintable(err));
        QCOMPARE(w.lastResult()->promptLabel, QString("fibonacci"));
        QTemporaryDir dir;
        w.exportAllFigures(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(w.blockAgreementView()->figureTitle(), QString("prompt fibonacci, drafter drafter"));
        QCOMPARE(w.maskView()->figureTitle(), QString("prompt fibonacci, drafter drafter"));
        w.promptPanel()->setPromptText(fib + "    if n < 2:\n");
        QVERIFY(w.promptPanel()->request().promptId.isEmpty());
        QSignalSpy finished(w.controller(), &AnalysisController::analysisFinished);
        w.runAnalysis();
        QVERIFY(waitForSignal(finished, 60000));
        QCOMPARE(w.lastResult()->promptLabel, QString("\"def fibonacci(n):\""));
        w.exportAllFigures(dir.path(), &err);
        QCOMPARE(w.blockAgreementView()->figureTitle(), QString("prompt \"def fibonacci(n):\", drafter drafter"));
    }

    void badCheckpointIsReportedNotFatal() {
        MainWindow w(/*showErrorDialogs=*/false);
        QSignalSpy failed(w.controller(), &AnalysisController::failed);
        ModelRequest r = demoModels();
        r.drafterDir = QString::fromStdString(dataPath("models/qwen3_5-tiny-causallm"));  // not a drafter
        w.loadModels(r);
        QVERIFY(waitForSignal(failed, 60000));
        QCOMPARE(failed.first().at(0).toULongLong(), quint64(1));  // the id of this controller's first load
        QCOMPARE(failed.first().at(1).value<FailureKind>(), FailureKind::Load);
        QVERIFY(failed.first().at(2).toString().contains("is not a drafter family draftscope implements"));
        QVERIFY(w.logText().contains("error (load): "));
        QVERIFY(w.logText().contains("is not a drafter family draftscope implements"));
        // The window still works: load the real pair and run.
        QString err;
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["1"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(24);
        w.promptPanel()->setDdtreeBudgets({});
        QVERIFY2(HeadlessRun(w).loadAndRun(demoModels(), &err), qPrintable(err));
        QVERIFY(w.lastResult()->treeRuns.empty());
    }

    /// The model panel's Device and GPU memory fields reach the engine's placement: "cpu,cpu"
    /// splits the demo target in two groups (identical acceptance to one device), the
    /// status and the log show the placement and the per-device peaks, and bad limits are
    /// refused as load errors that name the field.
    void modelPanelSplitsTheTargetAcrossDevices() {
        MainWindow w(false);
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["0"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(96);  // the goldens' length
        w.promptPanel()->setLoopRevision(LoopRevision::April2026);
        w.promptPanel()->setDdtreeBudgets({});
        ModelRequest split = demoModels();
        split.device = "cpu,cpu";
        split.gpuMemory = "64GiB, 64GiB";
        QString err;
        QVERIFY2(HeadlessRun(w).loadAndRun(split, &err), qPrintable(err));
        QCOMPARE(w.modelPanel()->findChild<QComboBox*>("device")->currentText(), QString("cpu,cpu"));
        QCOMPARE(w.modelPanel()->findChild<QLineEdit*>("gpuMemory")->text(), QString("64GiB, 64GiB"));
        QVERIFY(!w.modelPanel()->differsFromLoaded());
        // The same lists spelt with other spaces are the same models (no reload).
        w.modelPanel()->findChild<QComboBox*>("device")->setCurrentText("cpu , cpu");
        w.modelPanel()->findChild<QLineEdit*>("gpuMemory")->setText("64GiB,64GiB");
        QVERIFY(!w.modelPanel()->differsFromLoaded());
        w.modelPanel()->findChild<QComboBox*>("device")->setCurrentText("cpu");
        QVERIFY(w.modelPanel()->differsFromLoaded());
        w.modelPanel()->findChild<QComboBox*>("device")->setCurrentText("cpu,cpu");
        const QString status = w.modelPanel()->status();
        QVERIFY2(status.contains("Placement: cpu: embeddings, layers 0-") && status.contains("cpu: layers") &&
                     status.contains("head"),
                 qPrintable(status));
        QCOMPARE(w.lastResult()->run.acceptanceLengths,
                 goldens()["dflash_generate"]["drafter-good.p0"]["acceptance_lengths"].get<std::vector<int>>());
        QVERIFY2(w.logText().contains(QRegularExpression("analysis \\S+: placement cpu: embeddings, layers 0-\\d+[^;]*; cpu: layers \\d+-\\d+[^;]*head")),
                 qPrintable(w.logText()));
        // Another limit is another load; a malformed one fails that load, naming the field.
        auto* mem = w.modelPanel()->findChild<QLineEdit*>("gpuMemory");
        mem->setText("40XB,40GiB");
        QVERIFY(w.modelPanel()->differsFromLoaded());
        QSignalSpy failed(w.controller(), &AnalysisController::failed);
        w.loadModels(w.modelPanel()->request());
        QVERIFY(waitForSignal(failed, 60000));
        QVERIFY2(failed.first().at(2).toString().contains("gpu-memory") && failed.first().at(2).toString().contains("40XB"),
                 qPrintable(failed.first().at(2).toString()));
        QVERIFY(w.modelPanel()->status().contains("Load failed"));
        // Limits too small for the target: refused before loading, with the bytes per device.
        mem->setText("1KiB,1KiB");
        w.loadModels(w.modelPanel()->request());
        QVERIFY(waitForCount(failed, 2, 60000));
        const QString tooSmall = failed.at(1).at(2).toString();
        QVERIFY2(tooSmall.contains("does not fit") && tooSmall.contains("cpu 1.00 KiB"), qPrintable(tooSmall));
    }

    void runLoadsTheModelsTheFieldsName() {
        MainWindow w(false);
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["0"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(24);
        w.promptPanel()->setDdtreeBudgets({});
        QString err;
        QVERIFY2(HeadlessRun(w).loadAndRun(demoModels(), &err), qPrintable(err));
        auto* changed = w.modelPanel()->findChild<QLabel*>("modelFieldsChanged");
        QVERIFY(changed);
        QVERIFY(changed->isHidden());
        QVERIFY(!w.modelPanel()->differsFromLoaded());
        // Another drafter in the field: a visible "fields differ" state, then Run loads it first.
        const QString leak = QString::fromStdString(drafterDir("drafter-anchor-leak"));
        w.modelPanel()->setDrafterDir(leak);
        QVERIFY(w.modelPanel()->differsFromLoaded());
        QVERIFY(!changed->isHidden());
        QVERIFY(changed->text().contains("differ from the loaded models"));
        QSignalSpy loaded(w.controller(), &AnalysisController::modelsLoaded);
        QSignalSpy finished(w.controller(), &AnalysisController::analysisFinished);
        w.promptPanel()->setMaxNewTokens(96);  // the goldens' length
        w.promptPanel()->setLoopRevision(LoopRevision::April2026);  // goldens.json holds the April loop
        w.promptPanel()->findChild<QPushButton*>("runButton")->click();
        QVERIFY(w.logText().contains("differ from the loaded models: loading them"));
        QVERIFY(waitForCount(finished, 1, 300000));  // 2 shared cores can be slow
        QCOMPARE(loaded.count(), 1);
        auto b = finished.first().first().value<RunBundlePtr>();
        QCOMPARE(QFileInfo(QString::fromStdString(b->drafter.directory)).canonicalFilePath(),
                 QFileInfo(leak).canonicalFilePath());
        // drafter-anchor-leak's own run (the official golden), not the demo drafter's.
        QCOMPARE(b->run.acceptanceLengths,
                 goldens()["dflash_generate"]["drafter-anchor-leak.p0"]["acceptance_lengths"].get<std::vector<int>>());
        QVERIFY(!w.modelPanel()->differsFromLoaded());
        QVERIFY(changed->isHidden());
        w.promptPanel()->setMaxNewTokens(16);
        // The same path written differently (trailing slash) is the same model: no reload.
        w.modelPanel()->setDrafterDir(leak + "/");
        QVERIFY(!w.modelPanel()->differsFromLoaded());
        // Ticking Compare with a drafter B: Run loads A + B and runs both.
        w.modelPanel()->setDrafterBDir(QString::fromStdString(demoDrafter()));
        QVERIFY(w.modelPanel()->differsFromLoaded());
        finished.clear();
        loaded.clear();
        w.runAnalysis();
        QVERIFY(waitForCount(finished, 1, 300000));  // 2 shared cores can be slow
        QCOMPARE(loaded.count(), 1);
        b = finished.first().first().value<RunBundlePtr>();
        QVERIFY(b->comparison);
        QTRY_VERIFY_WITH_TIMEOUT(w.isComparing(), 10000);  // the window shows it from its own queued slot
        // Unticking it again: Run reloads without B; the old pair is never run silently.
        auto* compare = w.modelPanel()->findChild<QCheckBox*>("compareDrafters");
        QVERIFY(compare);
        compare->setChecked(false);
        QVERIFY(!changed->isHidden());
        finished.clear();
        loaded.clear();
        w.runAnalysis();
        QVERIFY(waitForCount(finished, 1, 300000));  // 2 shared cores can be slow
        QCOMPARE(loaded.count(), 1);
        QVERIFY(!finished.first().first().value<RunBundlePtr>()->comparison);
        // Tools > Inspect checkpoint offers the loaded checkpoints.
        auto* inspect = w.findChild<QAction*>("inspectCheckpointAction");
        QVERIFY(inspect);
        inspect->trigger();
        auto* dialog = w.findChild<InspectorDialog*>("inspectorDialog");
        QVERIFY(dialog);
        QStringList offered;
        for (const auto& path : dialog->loadedCheckpoints()) offered << QFileInfo(path).canonicalFilePath();
        QCOMPARE(offered, (QStringList{QFileInfo(QString::fromStdString(demoTarget())).canonicalFilePath(),
                                       QFileInfo(leak).canonicalFilePath()}));
        dialog->close();
        // An empty drafter field refuses the run with a message; nothing starts.
        QSignalSpy started(w.controller(), &AnalysisController::analysisStarted);
        w.modelPanel()->setDrafterDir(QString());
        w.runAnalysis();
        QVERIFY(w.logText().contains("choose a target and a drafter"));
        QTest::qWait(200);
        QCOMPARE(started.count(), 0);
    }

    void sidePanelsFitWithoutScrolling() {
        // At 1600x1000 with the demo's prompt set and models loaded (wrapped status lines), the
        // Models and Prompt panels fit: no scrollbar, Run in view. (Each panel alone fitted its
        // dock's share before: the dock area split the height by preferred sizes and left
        // Models 2 px short of its minimum.)
        QSettings().remove("window");
        MainWindow w(false);
        w.resize(1600, 1000);
        w.promptPanel()->loadPromptSet(QString(DRAFTSCOPE_DEMO_DIR) + "/../prompts/demo-prompts.jsonl");
        w.modelPanel()->setStatus("Target: Qwen3ForCausalLM, 6 layers (6 x full_attention), hidden 256, vocab 2048\n"
                                  "Drafter: DFlash: 2 layers (2 x full bidirectional), block 16, tapped layers [1, 2, 4]");
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTest::qWait(200);
        for (const char* name : {"modelsDock", "promptDock"}) {
            auto* scroll = qobject_cast<QScrollArea*>(w.findChild<QDockWidget*>(name)->widget());
            QVERIFY(scroll);
            QVERIFY2(scroll->verticalScrollBar()->maximum() == 0,
                     qPrintable(QString("%1 scrolls by %2 px").arg(name).arg(scroll->verticalScrollBar()->maximum())));
        }
        auto* run = w.promptPanel()->findChild<QPushButton*>("runButton");
        QVERIFY(run);
        const QRect inWindow(run->mapTo(&w, QPoint(0, 0)), run->size());
        QVERIFY2(w.rect().contains(inWindow) && run->visibleRegion().boundingRect().size() == run->size(),
                 qPrintable(QString("Run at %1,%2").arg(inWindow.x()).arg(inWindow.y())));
        QSettings().remove("window");
    }

    void deviceFieldsAreCheckedAsTyped() {
        MainWindow w(false);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* panel = w.modelPanel();
        auto* device = panel->findChild<QComboBox*>("device");
        auto* memory = panel->findChild<QLineEdit*>("gpuMemory");
        auto* error = panel->findChild<QLabel*>("loadSettingsError");
        QVERIFY(device && memory && error);
        QVERIFY(panel->settingsError().isEmpty());
        QVERIFY(!error->isVisible());
        device->setCurrentText("cuda:x");
        QVERIFY2(panel->settingsError().startsWith("Device: expected") && panel->settingsError().contains("cuda:x"),
                 qPrintable(panel->settingsError()));
        QVERIFY(error->isVisible());
        QCOMPARE(error->text(), panel->settingsError());
        QVERIFY(device->styleSheet().contains("#b00020"));
        device->setCurrentText("cpu,cpu");
        memory->setText("40GiB");  // one limit for two devices
        QVERIFY2(panel->settingsError().startsWith("GPU memory") || panel->settingsError().contains("memory"),
                 qPrintable(panel->settingsError()));
        QVERIFY(!device->styleSheet().contains("#b00020"));
        memory->setText("40 parsecs");
        QVERIFY2(panel->settingsError().contains("parsecs"), qPrintable(panel->settingsError()));
        QVERIFY(memory->styleSheet().contains("#b00020"));
        memory->setText("40GiB, 40GiB");
        QVERIFY2(panel->settingsError().isEmpty(), qPrintable(panel->settingsError()));
        QVERIFY(!error->isVisible());
        QVERIFY(memory->styleSheet().isEmpty());
    }

    void shortcutsListWhatTheKeysDo() {
        MainWindow w(false);
        std::unique_ptr<QStandardItemModel> m(shortcutsModel(w.menuBar(), nullptr));
        QStringList rows;
        for (int r = 0; r < m->rowCount(); ++r) rows << m->item(r, 0)->text() + " = " + m->item(r, 2)->text();
        const QString all = rows.join('\n');
        // Read from the menus: every action with a shortcut, under its menu path.
        QVERIFY2(all.contains("Run > Run prompt = " + QKeySequence(Qt::CTRL | Qt::Key_R).toString(QKeySequence::NativeText)),
                 qPrintable(all));
        QVERIFY2(all.contains("File > Open Results... = " + QKeySequence(QKeySequence::Open).toString(QKeySequence::NativeText)),
                 qPrintable(all));
        QVERIFY2(all.contains("File > Export all figures and tables... = " +
                              QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E).toString(QKeySequence::NativeText)),
                 qPrintable(all));
        QVERIFY(all.contains("Help > Keyboard shortcuts"));
        QVERIFY(!all.contains("&"));
        int actions = 0;  // every menu action with a shortcut is listed once
        std::function<void(const QMenu*)> count = [&](const QMenu* menu) {
            for (QAction* a : menu->actions())
                if (a->menu()) count(a->menu());
                else if (!a->shortcuts().isEmpty()) ++actions;
        };
        for (QAction* a : w.menuBar()->actions())
            if (a->menu()) count(a->menu());
        QVERIFY(actions >= 6);
        QCOMPARE(static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const QString& r) { return r.contains(" > "); })),
                 actions);
        // The views' gestures follow.
        QVERIFY(all.contains("double-click its title bar"));
        // Help > Keyboard shortcuts opens the dialog.
        auto* action = w.findChild<QAction*>("shortcutsAction");
        QVERIFY(action);
        action->trigger();
        auto* dialog = w.findChild<ShortcutsDialog*>("shortcutsDialog");
        QVERIFY(dialog && dialog->isVisible());
        QCOMPARE(dialog->model()->rowCount(), m->rowCount());
        dialog->close();
    }

    void ddtreeBudgetParsing() {
        std::vector<int> b;
        QString err;
        QVERIFY(parseDdtreeBudgets("8, 4 16,32", &b, &err));  // commas and/or spaces, sorted
        QCOMPARE(b, (std::vector<int>{4, 8, 16, 32}));
        QVERIFY(parseDdtreeBudgets("  ", &b, &err));
        QVERIFY(b.empty());
        QVERIFY(!parseDdtreeBudgets("4, x", &b, &err));
        QVERIFY(err.contains("'x'"));
        // 0 = no trees, as the CLI's --ddtree-budget 0.
        b = {4};
        QVERIFY(parseDdtreeBudgets("0", &b, &err));
        QVERIFY(b.empty());
        QVERIFY(parseDdtreeBudgets(" 0 ", &b, &err));
        QVERIFY(b.empty());
        QVERIFY(!parseDdtreeBudgets("0, 8", &b, &err));
        QVERIFY(err.contains("0 means no trees"));
        QVERIFY(!parseDdtreeBudgets("-3", &b, &err));
        QVERIFY(err.contains("'-3'"));
        QVERIFY(!parseDdtreeBudgets("5000", &b, &err));
        QVERIFY(err.contains("1 to 4096"));
        // Duplicates and empty entries are refused, naming what is wrong.
        QVERIFY(!parseDdtreeBudgets("4, 8, 4", &b, &err));
        QCOMPARE(err, QString("DDTree budget 4 is listed twice"));
        QVERIFY(!parseDdtreeBudgets("8 8", &b, &err));
        QVERIFY(err.contains("8 is listed twice"));
        QVERIFY(!parseDdtreeBudgets("4,,8", &b, &err));
        QVERIFY(err.contains("empty"));
        QVERIFY(!parseDdtreeBudgets("4, 8,", &b, &err));
        QVERIFY(err.contains("empty"));
        QVERIFY(!parseDdtreeBudgets(", 4", &b, &err));
        QVERIFY(err.contains("empty"));
        // A bad field refuses the run with its message and starts nothing.
        MainWindow w(false);
        QSignalSpy started(w.controller(), &AnalysisController::analysisStarted);
        w.promptPanel()->setPromptText("def f():");
        auto* field = w.promptPanel()->findChild<QLineEdit*>("ddtreeBudgets");
        QVERIFY(field);
        QCOMPARE(field->text(), QString("4, 8, 16, 32"));  // the default
        field->setText("4, eight");
        QVERIFY(w.promptPanel()->ddtreeBudgetError().contains("'eight'"));
        QVERIFY(w.promptPanel()->request().ddtreeBudgetError.contains("'eight'"));  // the request carries it
        QVERIFY(w.promptPanel()->request().ddtreeBudgets.empty());
        w.runAnalysis();
        QVERIFY(w.logText().contains("DDTree budget 'eight'"));
        QTest::qWait(100);
        QCOMPARE(started.count(), 0);
        // The message is shown whole under the field (at the panel's default width) and the
        // form does not move when it appears or goes.
        auto* panel = w.promptPanel();
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTest::qWait(50);  // the first-start dock sizes are applied after the first show
        auto* message = panel->findChild<QLabel*>("ddtreeBudgetError");
        auto* runButton = panel->findChild<QPushButton*>("runButton");
        QVERIFY(message && runButton);
        field->setText("4, 8");
        QVERIFY(panel->isVisible());
        QCoreApplication::processEvents();
        QVERIFY(message->text().isEmpty());
        const QRect runAt = runButton->geometry();
        const QRect fieldAt = field->geometry();
        for (const QString bad : {"4, eight", "4, 8, 4", "4,,8", "0, 8", "123456789012345678"}) {
            field->setText(bad);
            QCoreApplication::processEvents();
            QVERIFY2(!message->text().isEmpty(), qPrintable(bad));
            QVERIFY2(message->heightForWidth(message->width()) <= message->height(),
                     qPrintable(QString("'%1' is clipped: needs %2 px, has %3 at width %4")
                                    .arg(message->text()).arg(message->heightForWidth(message->width()))
                                    .arg(message->height()).arg(message->width())));
            QCOMPARE(runButton->geometry(), runAt);
            QCOMPARE(field->geometry(), fieldAt);
        }
        field->setText("0");
        QCoreApplication::processEvents();
        QVERIFY(message->text().isEmpty());
        QVERIFY(w.promptPanel()->request().ddtreeBudgets.empty());
        QCOMPARE(runButton->geometry(), runAt);
    }

    void progressLineIsNeverClipped() {
        // The stage of a comparison and the summary of a finished one are long: the line above
        // the progress bar wraps them at the Prompt panel's default width, whole.
        MainWindow w(false);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTest::qWait(50);  // the first-start dock sizes are applied after the first show
        auto* panel = w.promptPanel();
        auto* line = panel->findChild<QLabel*>("runStage");
        auto* bar = panel->findChild<QProgressBar*>("runProgress");
        QVERIFY(line && bar);
        QVERIFY(line->isHidden());  // nothing ran yet
        const QString stage = "drafter B: DDTree budget 32 (4 of 4)";
        const QString done = "done: A: chain, DDTree 4, DDTree 8, DDTree 16, DDTree 32; B: chain, DDTree 4, DDTree 8, "
                             "DDTree 16, DDTree 32";
        panel->setProgress(37, 96);
        for (const QString& text : {stage, done}) {
            if (text == stage) panel->setStage(text);
            else panel->setProgressText(text);
            QCoreApplication::processEvents();
            QCOMPARE(panel->progressText(), text);
            QCOMPARE(line->toolTip(), text);
            QVERIFY(line->isVisible());
            QVERIFY2(line->heightForWidth(line->width()) <= line->height(),
                     qPrintable(QString("'%1' is clipped: needs %2 px, has %3 at width %4")
                                    .arg(text).arg(line->heightForWidth(line->width())).arg(line->height())
                                    .arg(line->width())));
            QVERIFY(line->mapTo(panel, QPoint(line->width(), 0)).x() <= panel->width());
            // The bar counts tokens only: its text fits the bar.
            QCOMPARE(bar->text(), QString("37 / 96 tokens"));
            QVERIFY(bar->fontMetrics().horizontalAdvance(bar->text()) < bar->width());
        }
        QVERIFY2(line->height() > line->fontMetrics().lineSpacing(), "the finished comparison's summary wraps");
    }

    void fileDialogsRememberTheLastDirectory() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QCOMPARE(lastDialogDir("tst-kind", "/fallback"), QString("/fallback"));
        const QString file = dir.filePath("set.jsonl");
        rememberDialogPath("tst-kind", file);  // a file: its folder
        QCOMPARE(lastDialogDir("tst-kind"), QFileInfo(dir.path()).absoluteFilePath());
        QCOMPARE(lastDialogFile("tst-kind", "run.json"), QDir(dir.path()).filePath("run.json"));
        QDir(dir.path()).mkdir("sub");
        rememberDialogPath("tst-kind", dir.filePath("sub"));  // a directory: itself
        QCOMPARE(lastDialogDir("tst-kind"), QFileInfo(dir.filePath("sub")).absoluteFilePath());
        // The window's Load prompt set dialog opens in the folder of the last prompt set.
        rememberDialogPath("prompts", file);
        MainWindow w(false);
        QAction* load = nullptr;
        for (auto* a : w.findChildren<QAction*>())
            if (a->text() == "Load &prompt set...") load = a;
        QVERIFY(load);
        QString openedIn;
        QTimer::singleShot(200, [&] {
            for (auto* top : QApplication::topLevelWidgets())
                if (auto* d = qobject_cast<QFileDialog*>(top); d && d->isVisible()) {
                    openedIn = d->directory().absolutePath();
                    d->reject();
                }
        });
        load->trigger();
        QCOMPARE(openedIn, QFileInfo(dir.path()).absoluteFilePath());
    }

    void everyViewIsPopulated() {
        MainWindow w(false);
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["0"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(96);
        w.promptPanel()->setDdtreeBudgets({8, 4});
        QString err;
        QVERIFY2(HeadlessRun(w).loadAndRun(demoModels(), &err), qPrintable(err));  // the default, current loop
        const auto& run = w.lastResult()->run;
        QVERIFY(run.settings.loop == LoopRevision::Current);
        // The text prompt tokenizes to the golden ids, so the run equals the golden run of
        // the current loop (its last block clipped: the block view shows it shorter).
        QCOMPARE(run.promptIds, promptIds(0));
        const auto variants = nlohmann::json::parse(readFileToString(dataPath("variant_goldens.json")));
        QCOMPARE(run.acceptanceLengths, variants["current"]["drafter-good.p0"]["acceptance_lengths"].get<std::vector<int>>());
        // p0: the last step starts at 22 + 93 = 115, so it verifies min(16, 118 - 115) = 3 tokens.
        QCOMPARE(run.steps.back().drafted.size(), std::size_t(2));
        const auto* blocks = w.blockAgreementView()->model();
        const int lastRow = blocks->rowCount() - 1;
        QVERIFY(blocks->index(lastRow, 2).data().isValid());
        QVERIFY(!blocks->index(lastRow, 3).data().isValid());
        QVERIFY(!blocks->index(lastRow, static_cast<int>(run.blockSize) - 1).data().isValid());
        QCOMPARE(w.blockAgreementView()->model()->rowCount(), static_cast<int>(run.steps.size()));
        QCOMPARE(w.outputStripView()->model()->rowCount(), static_cast<int>(run.outputIds.size()));
        QCOMPARE(w.selection()->step(), 0);
        // Selecting another step requests that step's drafter attention.
        QSignalSpy attn(w.controller(), &AnalysisController::attentionReady);
        w.selection()->select(5, 2);
        QVERIFY(waitForSignal(attn, 30000));
        QCOMPARE(attn.first().at(0).toULongLong(), w.lastResult()->requestId);
        const auto a = attn.first().at(1).value<DrafterAttention>();
        QCOMPARE(a.step, 5);
        QCOMPARE(a.numKeys, run.steps[5].start + run.blockSize);

        // DDTree runs, budget order, equal to the official DDTree goldens.
        const auto& trees = w.lastResult()->treeRuns;
        QCOMPARE(trees.size(), std::size_t(2));
        for (std::size_t i = 0; i < 2; ++i) {
            const int budget = i == 0 ? 4 : 8;
            QCOMPARE(trees[i].budget, budget);
            const auto& g = goldens()["ddtree"]["budget" + std::to_string(budget) + ".p0"];
            QCOMPARE(trees[i].acceptanceLengths, g["acceptance_lengths"].get<std::vector<int>>());
            QCOMPARE(trees[i].outputIds, run.outputIds);  // greedy: both equal greedy decoding
            for (const auto& st : trees[i].steps) {
                for (auto id : st.tokens) QVERIFY(w.lastResult()->tokenPieces.count(id));
                for (auto id : st.targetChoice) QVERIFY(w.lastResult()->tokenPieces.count(id));
            }
        }
        // The tree view shows budget 4's tree of the step covering chain step 5's anchor.
        auto* tv = w.treeView();
        QCOMPARE(tv->budgetCount(), 2);
        QCOMPARE(tv->currentBudget(), 4);
        const int expected = treeStepCovering(trees[0], run.steps[5].start);
        QCOMPARE(tv->currentStep(), expected);
        const auto& ts = trees[0].steps[static_cast<std::size_t>(expected)];
        QVERIFY(ts.start <= run.steps[5].start && run.steps[5].start < ts.start + ts.acceptanceLength());
        QCOMPARE(tv->drawnNodeCount(), static_cast<int>(ts.tokens.size()));
        QCOMPARE(tv->nodesTable()->rowCount(), static_cast<int>(ts.tokens.size()));
        int accepted = 0;
        for (auto s : tv->nodeStates()) accepted += s == TreeNodeState::Accepted;
        QCOMPARE(accepted, ts.acceptanceLength());
        QCOMPARE(tv->bonusText(), "bonus '" + w.lastResult()->pieceOf(ts.bonusToken) + "'");
        // Chain step 0 -> tree step 0; budget 8 keeps the link.
        w.selection()->select(0, 1);
        QCOMPARE(tv->currentStep(), 0);
        QCOMPARE(tv->drawnNodeCount(), 5);  // root + 4 nodes
        QVERIFY(tv->setCurrentBudget(8));
        QCOMPARE(tv->drawnNodeCount(), 9);
        // The mask view's tree mode follows the tree view.
        w.maskView()->setMode(MaskView::Mode::TreeVerify);
        QCOMPARE(w.maskView()->matrix().rows, std::int64_t(9));
        QCOMPARE(w.maskView()->matrix().visibleCount(),
                 treeVerifyMask(trees[1].steps[0], true).visibleCount());
        // The sweep plot: one point per budget, the chain's tau as the reference.
        QCOMPARE(w.budgetSweepPlot()->budgets(), (QVector<double>{4, 8}));
        QCOMPARE(w.budgetSweepPlot()->taus(), (QVector<double>{trees[0].tau, trees[1].tau}));
        QCOMPARE(w.budgetSweepPlot()->chainTau(), run.tau);
    }

    void compareTwoDrafters() {
        MainWindow w(false);
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["0"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(96);
        w.promptPanel()->setDdtreeBudgets({4});
        w.promptPanel()->setLoopRevision(LoopRevision::April2026);  // goldens.json holds the April loop
        ModelRequest models = demoModels();
        models.drafterBDir = QString::fromStdString(drafterDir("drafter-anchor-leak"));
        QSignalSpy stages(w.controller(), &AnalysisController::stageChanged);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QString err;
        QVERIFY2(HeadlessRun(w).loadAndRun(models, &err), qPrintable(err));
        QVERIFY(w.modelPanel()->isComparing());
        QVERIFY(w.isComparing());
        {  // The Models panel describes the target, drafter A and drafter B.
            const QStringList lines = w.modelPanel()->status().split('\n');
            QCOMPARE(lines.size(), 3);
            QVERIFY2(lines[1].startsWith("Drafter: ") && lines[2].startsWith("Drafter B (compare): "),
                     qPrintable(w.modelPanel()->status()));
            QVERIFY(lines[2].contains(QString("block %1,").arg(w.lastResult()->comparison->drafter.blockSize)));
            // All three lines are shown: the Models dock grew to hold them.
            auto* status = w.modelPanel()->findChild<QLabel*>("modelStatus");
            QVERIFY(status);
            QTRY_VERIFY2(status->heightForWidth(status->width()) <= status->height() &&
                             status->mapTo(w.modelPanel(), QPoint(0, status->height())).y() <= w.modelPanel()->height(),
                         qPrintable(QString("the summary needs %1 px, has %2").arg(status->heightForWidth(status->width()))
                                        .arg(status->height())));
        }
        const RunBundlePtr a = w.lastResult();
        QVERIFY(a->comparison);
        const RunBundle& b = *a->comparison;
        QVERIFY(QString::fromStdString(b.drafter.directory).endsWith("drafter-anchor-leak"));
        QCOMPARE(b.requestId, a->requestId);
        // Each drafter's run is the one it makes alone (the official goldens), outputs identical.
        QCOMPARE(a->run.acceptanceLengths,
                 goldens()["dflash_generate"]["drafter-good.p0"]["acceptance_lengths"].get<std::vector<int>>());
        QCOMPARE(b.run.acceptanceLengths,
                 goldens()["dflash_generate"]["drafter-anchor-leak.p0"]["acceptance_lengths"].get<std::vector<int>>());
        QCOMPARE(b.run.outputIds, a->run.outputIds);
        QVERIFY(b.run.tau != a->run.tau);
        QCOMPARE(b.treeRuns.size(), std::size_t(1));
        QCOMPARE(b.treeRuns[0].outputIds, a->run.outputIds);
        QStringList stageNames;
        for (const auto& s : stages) stageNames << s.at(1).toString();
        QCOMPARE(stageNames, (QStringList{"drafter A: chain (DFlash)", "drafter A: DDTree budget 4 (1 of 1)",
                                          "drafter B: chain (DFlash)", "drafter B: DDTree budget 4 (1 of 1)"}));
        {  // B alone, as drafter A of a single-drafter controller: the same run.
            AnalysisController alone;
            ModelRequest onlyB = demoModels();
            onlyB.drafterDir = models.drafterBDir;
            QVERIFY(loadModelsAndWait(alone, onlyB));
            const auto single = analyseToEnd(alone, w.promptPanel()->request());
            QVERIFY(single && !single->comparison);
            QCOMPARE(single->run.acceptanceLengths, b.run.acceptanceLengths);
            QCOMPARE(single->run.tau, b.run.tau);
            QCOMPARE(single->treeRuns[0].acceptanceLengths, b.treeRuns[0].acceptanceLengths);
        }
        // Both grids, each with its own steps; the selections follow each other by position.
        QVERIFY(w.blockAgreementViewB()->isVisibleTo(&w));
        QCOMPARE(w.blockAgreementViewB()->model()->rowCount(), static_cast<int>(b.run.steps.size()));
        QCOMPARE(w.blockAgreementView()->model()->rowCount(), static_cast<int>(a->run.steps.size()));
        {  // The purple marks: one per step of A that starts where a step of B starts and
           // accepted a different count (greedy: the committed tokens agree).
            int parting = 0;
            for (const auto& sa : a->run.steps)
                for (const auto& sb : b.run.steps)
                    parting += sa.start == sb.start && sa.acceptedCount != sb.acceptedCount &&
                               std::min(sa.acceptedCount, sb.acceptedCount) + 1 < a->run.blockSize;
            QCOMPARE(w.blockAgreementView()->model()->differingCellCount(), parting);
            QVERIFY(parting > 0);  // the first steps share the anchor after the prompt
        }
        QVERIFY(w.blockAgreementView()->caption().contains(QString::number(a->run.tau, 'f', 3)));
        QVERIFY(w.blockAgreementViewB()->caption().contains(QString::number(b.run.tau, 'f', 3)));
        QSignalSpy attnA(w.controller(), &AnalysisController::attentionReady);
        w.selection()->select(4, 1);
        QVERIFY(waitForSignal(attnA, 30000));  // A's attention at step 4 is done
        QCOMPARE(attnA.first().at(1).value<DrafterAttention>().step, 4);
        const auto pos = a->run.steps[4].start + 1;
        QCOMPARE(w.selectionB()->step(), chainStepCovering(b.run, pos));
        // Overlaid acceptance plots and sweep, per-token classification, summary.
        QCOMPARE(w.acceptancePlots()->ratePlot()->graphCount(), 2);
        QVERIFY(w.acceptancePlots()->ratePlot()->graph(1)->name().contains(QString::number(b.run.tau, 'f', 3)));
        QCOMPARE(w.budgetSweepPlot()->tausB(), (QVector<double>{b.treeRuns[0].tau}));
        QCOMPARE(w.budgetSweepPlot()->chainTauB(), b.run.tau);
        const auto by = acceptedBy(a->run, b.run);
        for (int i = 0; i < static_cast<int>(by.size()); ++i)
            QCOMPARE(w.outputStripView()->model()->acceptedByOf(i), by[static_cast<std::size_t>(i)]);
        auto* summary = w.comparisonSummary();
        const int tauRow = summary->rowOf("tau");
        QVERIFY(tauRow >= 0);
        QCOMPARE(summary->table()->item(tauRow, 1)->text(), QString::number(a->run.tau, 'f', 4));
        QCOMPARE(summary->table()->item(tauRow, 2)->text(), QString::number(b.run.tau, 'f', 4));
        QCOMPARE(summary->table()->item(summary->rowOf("outputs identical"), 1)->text(), QString("yes"));
        // The detail views switch to drafter B: its trees, its attention at its step.
        QSignalSpy attn(w.controller(), &AnalysisController::attentionReady);
        w.setDetailDrafter(1);
        QCOMPARE(w.treeView()->currentRun()->acceptanceLengths, b.treeRuns[0].acceptanceLengths);
        QVERIFY(w.hiddenStatsView()->caption().contains("drafter B"));
        QVERIFY(waitForSignal(attn, 30000));
        const auto att = attn.last().at(1).value<DrafterAttention>();
        QCOMPARE(att.step, w.selectionB()->step());
        QCOMPARE(att.numKeys, b.run.steps[static_cast<std::size_t>(att.step)].start + b.run.blockSize);
        // Export writes B's grid and the summary too.
        QTemporaryDir dir;
        const auto written = w.exportAllFigures(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        for (const auto& f : {"block_agreement_b.png", "block_agreement_b.pdf", "verify_steps_b.csv", "ab_summary.csv",
                              "ab_summary.json", "acceptance_per_step.svg"})
            QVERIFY2(written.contains(dir.filePath(f)), f);
        // A single-drafter load leaves comparing.
        w.promptPanel()->setMaxNewTokens(16);
        QVERIFY2(HeadlessRun(w).loadAndRun(demoModels(), &err), qPrintable(err));
        QVERIFY(!w.isComparing());
        QVERIFY(!w.blockAgreementViewB()->isVisibleTo(&w));
        QCOMPARE(w.detailDrafter(), 0);
        QCOMPARE(w.acceptancePlots()->ratePlot()->graphCount(), 1);
    }

    void compareCommandLine() {
        QTemporaryDir dir;
        QProcess p;
        const QString leak = QString::fromStdString(drafterDir("drafter-anchor-leak"));
        startOffscreen(p, DRAFTSCOPE_GUI, {"--target", QString::fromStdString(demoTarget()), "--drafter",
                                         QString::fromStdString(demoDrafter()), "--drafter", leak, "--prompt", "def fib(n):",
                                         "--max-new", "16", "--ddtree-budget", "4", "--export-figures", dir.path()});
        QVERIFY(p.waitForFinished(180000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitCode() == 0, qPrintable(err));
        for (const auto& f : {"block_agreement.png", "block_agreement_b.png", "acceptance_rate.pdf", "ab_summary.csv",
                              "ddtree_budget_sweep.csv"})
            QVERIFY2(QFileInfo(dir.filePath(f)).size() > 10, f);
        QFile sweep(dir.filePath("ddtree_budget_sweep.csv"));
        QVERIFY(sweep.open(QIODevice::ReadOnly));
        const auto lines = QString::fromUtf8(sweep.readAll()).split("\r\n", Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 5);  // header, A's budget 4 and chain, B's budget 4 and chain
        QVERIFY(lines[0].endsWith(",drafter"));
        QVERIFY(lines[4].startsWith("chain,") && lines[4].endsWith(",drafter-anchor-leak"));
        p.start(DRAFTSCOPE_GUI, {"--demo", "--drafter", leak, "--drafter", leak, "--drafter", leak, "--export-figures",
                                 dir.path()});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("at most twice"));
    }

    void exportFiguresCommandLine() {
        QTemporaryDir dir;
        QProcess p;
        startOffscreen(p, DRAFTSCOPE_GUI, {"--demo", "--max-new", "32", "--ddtree-budget", "4", "--ddtree-budget", "8",
                                         "--export-figures", dir.path()});
        QVERIFY(p.waitForFinished(180000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QVERIFY2(p.exitCode() == 0, qPrintable(err));
        const QStringList figures = {"block_agreement", "output_strip", "acceptance_rate", "acceptance_histogram",
                                     "mask", "mask_training", "mask_tree", "drafter_attention", "drafter_attention_heads", "hidden_stats",
                                     "hidden_stats_histogram", "ddtree_tree", "ddtree_budget_sweep"};
        for (const auto& f : figures)
            for (const auto& ext : {"png", "svg", "pdf"}) {
                const QString path = dir.filePath(f + "." + ext);
                QVERIFY2(QFileInfo(path).size() > 200, qPrintable(path + " missing or empty; stderr: " + err));
            }
        for (const auto& t : {"block_agreement", "output_strip", "acceptance", "mask", "drafter_attention", "hidden_stats",
                              "ddtree_nodes", "ddtree_budget_sweep"})
            for (const auto& ext : {"csv", "json"}) QVERIFY2(QFileInfo(dir.filePath(QString(t) + "." + ext)).size() > 10, t);
        {
            QFile sweep(dir.filePath("ddtree_budget_sweep.csv"));
            QVERIFY(sweep.open(QIODevice::ReadOnly));
            const auto lines = QString::fromUtf8(sweep.readAll()).split("\r\n", Qt::SkipEmptyParts);
            QCOMPARE(lines.size(), 4);  // header, budgets 4 and 8, chain
            QVERIFY(lines[1].startsWith("ddtree,4,"));
            QVERIFY(lines[2].startsWith("ddtree,8,"));
            QVERIFY(lines[3].startsWith("chain,,"));
        }
        // Bad arguments fail cleanly.
        p.start(DRAFTSCOPE_GUI, {"--demo", "--ddtree-budget", "x", "--export-figures", dir.path()});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("--ddtree-budget"));
        p.start(DRAFTSCOPE_GUI, {"--export-figures", dir.path()});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
        p.start(DRAFTSCOPE_GUI, {"--target", "/nonexistent", "--drafter", "/nonexistent", "--prompt", "x",
                                 "--export-figures", dir.path()});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("not found"));
    }
};

QTEST_MAIN(TestGui)
#include "tst_gui.moc"
#include "draftscope/file_io.h"
