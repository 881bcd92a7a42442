// The one state of what the views show (issue 33; app/gui/run_state.h), driven as a state
// machine without a window: every transition's Log line, the grid caption's note, the Prompt
// panel's line, the status bar and the DDTree placeholder it derives.

#include "gui/run_state.h"

#include <QtTest>

using namespace draftscope;
using Phase = RunState::Phase;

class TestRunState : public QObject {
    Q_OBJECT

private slots:
    void freshWindowSaysNothingRan() {
        RunState s;
        QCOMPARE(s.phase(), Phase::Empty);
        QVERIFY(s.captionNote().isEmpty());
        QVERIFY(s.progressLine().isEmpty());
        QVERIFY(!s.progressIsLive());
        QVERIFY(s.treeEmptyText().contains("enter DDTree budgets"));
    }

    void runToTheEnd() {
        qint64 now = 1000;  // the clock, in ms
        RunState s([&now] { return now; });
        QCOMPARE(s.analysisStarted(3, {4, 8}), QString("analysis 3 started"));
        QCOMPARE(s.phase(), Phase::Running);
        QCOMPARE(s.captionNote(), QString(" (running: DDTree 4, 8 to come)"));
        QVERIFY(s.treeEmptyText().contains("budgets 4, 8 run after the chain run"));
        // Every run that appears is logged with the time since the start.
        now += 1234;
        QCOMPARE(s.runShown(3, "chain", false), QString("analysis 3: chain done after 1.2 s"));
        QCOMPARE(s.runShown(3, "chain", false), QString());  // shown again: nothing new
        QCOMPARE(s.progressLine(), QString("running; done: chain"));
        now += 11000;
        QCOMPARE(s.runShown(3, "chain, DDTree 4", false), QString("analysis 3: DDTree 4 done after 12 s"));
        QCOMPARE(s.captionNote(), QString(" (running: DDTree 8 to come)"));
        now += 113000;
        QCOMPARE(s.runShown(3, "chain, DDTree 4, DDTree 8", true), QString("analysis 3 finished in 2 min 5 s: chain, DDTree 4, DDTree 8"));
        QCOMPARE(s.phase(), Phase::Finished);
        QVERIFY(s.captionNote().isEmpty());
        QCOMPARE(s.progressLine(), QString("done: chain, DDTree 4, DDTree 8"));
        QCOMPARE(s.statusLine(), QString("Analysis 3 finished: chain, DDTree 4, DDTree 8"));
        // A reply of an older analysis changes nothing.
        QCOMPARE(s.runShown(2, "chain", false), QString());
        QCOMPARE(s.runs(), QString("chain, DDTree 4, DDTree 8"));
    }

    void cancelKeepsWhatFinished() {
        // The caption no longer says runs are still running, the DDTree view says why it is
        // empty, and the Log names what was kept.
        qint64 now = 0;
        RunState s([&now] { return now; });
        s.analysisStarted(5, {4, 8});
        s.runShown(5, "chain", false);
        now = 2500;
        QCOMPARE(s.cancelled(5), QString("analysis 5 cancelled after 2.5 s; kept on screen: chain"));
        QCOMPARE(s.phase(), Phase::Cancelled);
        QCOMPARE(s.captionNote(), QString(" (cancelled: kept chain)"));
        QVERIFY(!s.captionNote().contains("running"));
        QCOMPARE(s.progressLine(), QString("cancelled (kept: chain)"));
        QVERIFY2(s.treeEmptyText().contains("cancelled before its DDTree runs (budgets 4, 8)"), qPrintable(s.treeEmptyText()));
        QVERIFY(s.progressIsLive());  // the bar keeps the tokens the chain counted
        // Cancelled before anything finished.
        s.analysisStarted(6, {});
        now = 2900;
        QCOMPARE(s.cancelled(6), QString("analysis 6 cancelled after 0.4 s, before its chain run finished; nothing kept"));
        QCOMPARE(s.progressLine(), QString("cancelled (nothing finished)"));
        QVERIFY(s.treeEmptyText().contains("No DDTree runs in this analysis"));
    }

    void failedLoadMakesTheShownRunStale() {
        RunState s;
        s.analysisStarted(7, {});
        s.runShown(7, "chain", true);
        QVERIFY(!s.stale());
        QVERIFY(s.loadFailed().contains("analysis 7) is stale"));
        QVERIFY(s.stale());
        QCOMPARE(s.captionNote(), QString(" - stale: its models are no longer loaded"));
        QVERIFY(s.statusLine().contains("stale"));
        // Nothing on screen: nothing to mark.
        RunState e;
        QVERIFY(e.loadFailed().isEmpty());
        QVERIFY(!e.stale());
        // New models clear the views and the state.
        s.modelsLoaded();
        QCOMPARE(s.phase(), Phase::Empty);
        QVERIFY(!s.stale() && s.captionNote().isEmpty());
    }

    void failedAnalysis() {
        qint64 now = 0;
        RunState s([&now] { return now; });
        s.analysisStarted(8, {16});
        s.runShown(8, "chain", false);
        now = 61000;
        QCOMPARE(s.analysisFailed(8, "the tree outgrew the context\nmore"), QString("analysis 8 failed after 61 s; kept on screen: chain"));
        QCOMPARE(s.progressLine(), QString("failed: the tree outgrew the context"));
        QCOMPARE(s.captionNote(), QString(" (failed after: chain)"));
        QVERIFY(s.treeEmptyText().contains("failed before its DDTree runs (budgets 16)"));
    }

    void recordedPromptResetsTheLiveProgress() {
        RunState s;
        s.analysisStarted(9, {4});
        s.runShown(9, "chain", false);
        s.cancelled(9);
        s.recordedShown("R.dsresults", "p3", "chain, DDTree 8");
        QCOMPARE(s.phase(), Phase::Recorded);
        QVERIFY(!s.progressIsLive());  // the cancelled live run's bar is not shown beside it
        QCOMPARE(s.progressLine(), QString("recorded, not live: R.dsresults prompt 'p3'"));
        QVERIFY(s.captionNote().isEmpty());
        QCOMPARE(s.statusLine(), QString("Recorded, not live: R.dsresults prompt 'p3'"));
        // A recorded run needs no models: a failed load leaves it as it is.
        QVERIFY(s.loadFailed().isEmpty());
        QVERIFY(!s.stale());
        // A late cancel of the old live run does not touch it.
        s.cancelled(9);
        QCOMPARE(s.phase(), Phase::Recorded);
    }
};

QTEST_GUILESS_MAIN(TestRunState)
#include "tst_run_state.moc"
