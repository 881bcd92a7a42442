// The Training run dock (issue 32; docs/TRACK.md, "In the GUI"): a run index drawn as tau over
// steps (chain, DDTree, teacher-forced, the trainer's log on the right axis), the gap, the
// per-position heatmap, the findings as markers and the best checkpoint; the table and
// exports; a click opening a checkpoint as drafter A or B with the run's target and prompt set;
// the dock following the index while `track --watch` rewrites it; `draftscope --track DIR
// --export-figures OUT`; a directory without an index refused with a message.

#include "draftscope/training_run.h"
#include "gui/main_window.h"
#include "gui/model_panel.h"
#include "gui/prompt_panel.h"
#include "gui_test_support.h"
#include "figure_export.h"
#include "heatmap_plot.h"
#include "test_support.h"
#include "training_run_view.h"

#include <qcustomplot.h>

#include <QDockWidget>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTableView>
#include <QtTest>

#include <filesystem>

using namespace draftscope;
using namespace testsupport;

namespace {

std::string promptSet() { return std::string(DRAFTSCOPE_DEMO_DIR) + "/../prompts/demo-prompts.jsonl"; }

TrackedCheckpoint done(std::int64_t step, double tau, double tf, const std::vector<double>& positions) {
    TrackedCheckpoint c;
    c.checkpoint.step = step;
    c.checkpoint.path = demoDrafter();
    c.checkpoint.layout = "step";
    c.checkpoint.stepFrom = "name";
    c.status = "done";
    c.resultsFile = "step-" + std::to_string(step) + ".dsresults";
    c.promptIds = {"a", "b"};
    c.tau = tau;
    c.promptTaus = {tau, tau};
    c.treeBudgets = {8};
    c.treeTaus = {tau + 1};
    c.teacherForcedTau = tf;
    c.teacherForcedExpected = tf;
    c.promptTeacherForcedExpected = {tf, tf};
    c.gap = tf - tau;
    c.positionAcceptance = positions;
    return c;
}

/// Three done checkpoints, one failed, a logged metric and a regression at step 3000.
TrackIndex sampleIndex(std::size_t doneCount = 3) {
    TrackIndex x;
    x.runDir = "/runs/demo";
    x.targetDir = demoTarget();
    x.promptSetPath = promptSet();
    x.settings.ddtreeBudgets = {8};
    const std::vector<TrackedCheckpoint> all = {done(1000, 1.2, 1.1, {1, 0.2, 0.05, 0.0}),
                                                done(2000, 2.0, 1.7, {1, 0.7, 0.3, 0.1}),
                                                done(3000, 1.5, 1.6, {1, 0.4, 0.1, 0.05}),
                                                done(4000, 2.1, 1.8, {1, 0.75, 0.35, 0.1})};
    for (std::size_t i = 0; i < doneCount; ++i) x.checkpoints.push_back(all[i]);
    TrackedCheckpoint failed;
    failed.checkpoint.step = 500;
    failed.checkpoint.path = "/runs/demo/step_500";
    failed.status = "failed";
    failed.error = "no config.json";
    x.checkpoints.insert(x.checkpoints.begin(), failed);
    x.bestStep = doneCount >= 4 ? 4000 : 2000;
    x.trainerLog = TrainerLog{"/runs/demo/log.jsonl", "train/accept_len", {{500, 1.5}, {1500, 2.8}, {3000, 3.4}}};
    x.findings = {{"regression", Severity::Warning, 3000, 2000, "tau fell from 2.00 at step 2000 to 1.50 at step 3000", {}, {1, 2}}};
    x.updatedUtc = "2026-12-04T00:00:00Z";
    return x;
}

QVector<double> graphValues(QCustomPlot* p, int graph) {
    QVector<double> out;
    for (auto it = p->graph(graph)->data()->constBegin(); it != p->graph(graph)->data()->constEnd(); ++it) out << it->value;
    return out;
}

}  // namespace

class TestTrackGui : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

private slots:
    void initTestCase() { QVERIFY(tmp_.isValid()); }

    void viewDrawsTheIndex() {
        TrainingRunView v;
        v.resize(1400, 800);
        v.setIndex(sampleIndex());
        const auto& s = v.series();
        QCOMPARE(s.steps, (std::vector<double>{1000, 2000, 3000}));  // the failed one is not drawn
        QCOMPARE(s.bestIndex, 1);
        // Graphs: chain, DDTree 8, teacher-forced, best, logged.
        QCOMPARE(v.tauPlot()->graphCount(), 5);
        QCOMPARE(graphValues(v.tauPlot(), 0), (QVector<double>{1.2, 2.0, 1.5}));
        QCOMPARE(graphValues(v.tauPlot(), 1), (QVector<double>{2.2, 3.0, 2.5}));
        QCOMPARE(graphValues(v.tauPlot(), 3), (QVector<double>{2.0}));
        QCOMPARE(v.tauPlot()->graph(4)->valueAxis(), v.tauPlot()->yAxis2);
        QCOMPARE(graphValues(v.tauPlot(), 4), (QVector<double>{1.5, 2.8, 3.4}));
        // The regression as a marker line at step 3000 on both plots.
        for (auto* p : {v.tauPlot(), v.gapPlot()}) {
            int lines = 0;
            for (int i = 0; i < p->itemCount(); ++i)
                if (auto* l = qobject_cast<QCPItemStraightLine*>(p->item(i)); l && l->point1->coords().x() == 3000) ++lines;
            QCOMPARE(lines, 1);
        }
        QCOMPARE(graphValues(v.gapPlot(), 0)[2], 1.6 - 1.5);
        // Heatmap: block positions 1..3 x the three done steps.
        const auto& cells = v.positionPlot()->cells();
        QCOMPARE(cells.rows, 3);
        QCOMPARE(cells.cols, 3);
        QCOMPARE(cells.at(0, 1), 0.7);
        QCOMPARE(cells.columnLabels, (QStringList{"1000", "2000", "3000"}));
        // Table: every checkpoint, the best marked, the logged value at or before each step.
        QCOMPARE(v.model()->rowCount(), 4);
        QCOMPARE(v.model()->index(2, 1).data().toString(), QString("done (best)"));
        QCOMPARE(v.model()->index(0, 1).data().toString(), QString("failed"));
        const int logged = 3 + 1 + 3;  // step, status, tau, DDTree 8, tf tau, tf expected, gap, logged
        QCOMPARE(v.model()->headerData(logged, Qt::Horizontal).toString(), QString("logged train/accept_len"));
        QCOMPARE(v.model()->index(2, logged).data(kExportRole).toDouble(), 2.8);  // step 2000: the 1500 point
        QCOMPARE(v.findings()->rowCount(), 1);
        QVERIFY(v.summaryText().contains("best step 2000") && v.summaryText().contains("regression"));
    }

    void clickOpensACheckpoint() {
        TrainingRunView v;
        v.setIndex(sampleIndex());
        QSignalSpy spy(&v, &TrainingRunView::checkpointActivated);
        v.activate(1, false);
        v.activate(2, true);
        v.activate(7, false);  // out of range: nothing
        QCOMPARE(spy.count(), 2);
        QCOMPARE(spy[0][0].toString(), QString::fromStdString(demoDrafter()));
        QCOMPARE(spy[0][1].toBool(), false);
        QCOMPARE(spy[1][1].toBool(), true);
        QCOMPARE(spy[0][2].toString(), QString::fromStdString(demoTarget()));
        QCOMPARE(spy[0][3].toString(), QString::fromStdString(promptSet()));
        // A click on a table row of a done checkpoint does the same; the failed row does nothing.
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        auto* table = v.tableView();
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(v.model()->index(0, 0)).center());
        QCOMPARE(spy.count(), 2);
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(v.model()->index(3, 0)).center());
        QCOMPARE(spy.count(), 3);
    }

    void exportsFiguresAndTables() {
        TrainingRunView v;
        v.resize(1400, 800);
        v.setIndex(sampleIndex());
        QString error;
        const auto dir = tmp_.filePath("export");
        const auto written = v.exportAll(dir, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(written.size(), 3 * 3 + 2 * 2);
        const QImage tau(dir + "/training_run_tau.png");
        QVERIFY(tau.width() >= 900 && tau.height() >= 500);
        QVERIFY(QFile::exists(dir + "/training_run_positions.pdf"));
        QFile csv(dir + "/training_run.csv");
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const auto text = QString::fromUtf8(csv.readAll());
        QVERIFY2(text.startsWith("step,status,tau,DDTree 8,teacher-forced tau") && text.contains("2000,done (best),2"),
                 qPrintable(text));
    }

    void dockFollowsALiveRun() {
        // The index written by `track --watch` grows: the dock shows each new checkpoint.
        const auto dir = tmp_.filePath("live").toStdString();
        std::filesystem::create_directories(dir);
        writeTrackIndex(dir + "/track.json", sampleIndex(2));
        MainWindow w(false);
        QString error;
        QVERIFY2(w.openTrainingRun(QString::fromStdString(dir), &error), qPrintable(error));
        QVERIFY(!w.findChild<QDockWidget*>("trainingRunDock")->isHidden());
        QCOMPARE(w.trainingRunView()->model()->rowCount(), 3);
        QVERIFY(w.exportableViews().contains(w.trainingRunView()));
        for (std::size_t n : {3u, 4u}) {
            QTest::qWait(20);
            auto x = sampleIndex(n);
            x.updatedUtc = "2026-12-04T00:00:0" + std::to_string(n) + "Z";
            writeTrackIndex(dir + "/track.json", x);
            QTRY_COMPARE_WITH_TIMEOUT(w.trainingRunView()->model()->rowCount(), static_cast<int>(n + 1), 10000);
        }
        QCOMPARE(w.trainingRunView()->series().bestIndex, 3);
        // A damaged rewrite keeps what was shown.
        writeBytes(dir + "/track.json", "{\"format\": \"draftscope-track\", \"version\": 1");
        QTest::qWait(600);
        QCOMPARE(w.trainingRunView()->model()->rowCount(), 5);
        // A directory without an index: refused, named.
        QVERIFY(!w.openTrainingRun(tmp_.filePath("nothing-here"), &error));
        QVERIFY2(error.contains("holds no run index"), qPrintable(error));
    }

    void clickedCheckpointLoadsAsDrafter() {
        MainWindow w(false);
        w.modelPanel()->setTargetDir("/elsewhere");  // replaced by the run's target
        w.modelPanel()->setDrafterDir({});
        w.modelPanel()->setDrafterBDir({});
        QSignalSpy loaded(w.controller(), &AnalysisController::modelsLoaded);
        w.openTrackedCheckpoint(QString::fromStdString(demoDrafter()), /*asB=*/true, QString::fromStdString(demoTarget()),
                                QString::fromStdString(promptSet()));
        QVERIFY(waitForSignal(loaded, 120000));
        const auto m = loaded.last()[0].value<ModelsLoaded>();
        QCOMPARE(QString::fromStdString(m.target.directory), QString::fromStdString(demoTarget()));
        QCOMPARE(QString::fromStdString(m.drafter.directory), QString::fromStdString(demoDrafter()));  // no A yet: A
        QCOMPARE(w.promptPanel()->promptSet().size(), 4);
        // With A loaded, Shift+click takes B.
        w.openTrackedCheckpoint(QString::fromStdString(demoDrafter()), true, QString::fromStdString(demoTarget()),
                                QString::fromStdString(promptSet()));
        QVERIFY(waitForSignal(loaded, 120000));
        QVERIFY(loaded.last()[0].value<ModelsLoaded>().drafterB.has_value());
    }

    void headlessExport() {
        const auto dir = tmp_.filePath("cli-index").toStdString();
        std::filesystem::create_directories(dir + "/draftscope-track");
        writeTrackIndex(dir + "/draftscope-track/track.json", sampleIndex());
        QProcess p;
        const auto out = tmp_.filePath("cli-figs");
        startOffscreen(p, DRAFTSCOPE_GUI, {"--track", QString::fromStdString(dir), "--export-figures", out});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(QFile::exists(out + "/training_run_gap.svg"));
        startOffscreen(p, DRAFTSCOPE_GUI, {"--track", tmp_.filePath("none"), "--export-figures", out});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("holds no run index"));
    }
};

QTEST_MAIN(TestTrackGui)
#include "tst_track_gui.moc"
