// Results files in the GUI: a file written by `draftscope-cli eval --out` on the demo pair
// (two drafters, one DDTree budget) opens without running anything; the Results table, the
// per-prompt views, the cross-prompt plots and `draftscope R --export-figures` show the
// file's numbers; bad files are reported with the reader's message and never crash.

#include "acceptance_tree_view.h"
#include "attention_view.h"
#include "block_agreement_view.h"
#include "budget_sweep_plot.h"
#include "draftscope/results_file.h"
#include "draftscope/results_summary.h"
#include "gui/main_window.h"
#include "gui/model_panel.h"
#include "gui/prompt_panel.h"
#include "gui/results_panel.h"
#include "output_strip_view.h"
#include "results_aggregate_plots.h"
#include "gui/recorded_results.h"
#include "step_selection.h"
#include "gui_test_support.h"
#include "test_support.h"

#include <qcustomplot.h>

#include <QDockWidget>
#include <QHeaderView>
#include <QMimeData>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QTabBar>
#include <QProcess>
#include <QPushButton>
#include <QMenu>
#include <QFileInfo>
#include <QAction>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTableView>
#include <QUrl>
#include <QtTest>

#include <algorithm>
#include <cctype>
#include <fstream>

using namespace draftscope;
using namespace testsupport;

class TestResultsGui : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QString path_;
    ResultsFile file_;

    QString writeSet() {
        const QString set = tmp_.filePath("set.jsonl");
        std::ofstream(set.toStdString()) << "{\"id\": \"fib\", \"prompt\": \"def fibonacci(n):\\n\"}\n"
                                            "{\"id\": \"main\", \"prompt\": \"import os\\nimport sys\\n\\n\\ndef main(argv):\\n\"}\n"
                                            "{\"id\": \"stack\", \"prompt\": \"class Stack:\\n    def __init__(self):\\n\"}\n";
        return set;
    }
    /// The reader's message for `path`.
    static QString readerError(const QString& path) {
        try {
            readResultsFile(path.toStdString());
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
        return {};
    }
    QString truncatedCopy() {
        QFile in(path_);
        in.open(QIODevice::ReadOnly);
        const QByteArray all = in.readAll();
        const QString out = tmp_.filePath("truncated.dsresults");
        QFile f(out);
        f.open(QIODevice::WriteOnly);
        f.write(all.left(all.size() * 2 / 3));
        return out;
    }

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("draftscope-tests");
        QCoreApplication::setApplicationName("tst_results_gui");
        QVERIFY(tmp_.isValid());
        path_ = tmp_.filePath("R.dsresults");
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"eval", "--target", QString::fromStdString(demoTarget()), "--drafter",
                                 QString::fromStdString(demoDrafter()), "--drafter",
                                 QString::fromStdString(drafterDir("drafter-label-shift")), "--prompts", writeSet(),
                                 "--max-new", "16", "--ddtree-budget", "4", "--threads", "1", "--out", path_});
        QVERIFY(p.waitForFinished(180000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        file_ = readResultsFile(path_.toStdString());
        QCOMPARE(file_.prompts.size(), std::size_t(3));
        QCOMPARE(file_.drafters.size(), std::size_t(2));
    }

    void tableHoldsTheFilesNumbersWorstFirst() {
        MainWindow w(false);
        QString err;
        QVERIFY2(w.openResultsFileNow(path_, &err), qPrintable(err));
        auto* panel = w.resultsPanel();
        QCOMPARE(panel->model()->rowCount(), 3);
        // Default: drafter A's tau ascending, as promptsByTau.
        QCOMPARE(panel->promptOrder(), promptsByTau(file_, 0));
        auto* proxy = panel->proxy();
        for (int row = 0; row < 3; ++row) {
            const auto& p = file_.prompts[panel->promptOrder()[static_cast<std::size_t>(row)]];
            QCOMPARE(proxy->index(row, 1).data().toString(), QString::fromStdString(p.id));
            for (int d = 0; d < 2; ++d)
                QCOMPARE(proxy->index(row, panel->tauColumn(d)).data().toString(),
                         QString::number(p.drafters[static_cast<std::size_t>(d)].run.tau, 'f', 3));
            QCOMPARE(proxy->index(row, 7).data().toString(), QString::number(p.drafters[0].trees[0].tau, 'f', 3));
            QCOMPARE(proxy->headerData(7, Qt::Horizontal).toString(), QString("DDTree 4 tau A"));
        }
        panel->sortByTau(1);
        QCOMPARE(panel->promptOrder(), promptsByTau(file_, 1));
        // The worst prompt of drafter A is shown; the title and status say it is recorded.
        const auto worst = promptsByTau(file_, 0).front();
        QVERIFY(w.lastResult());
        QCOMPARE(w.lastResult()->run.tau, file_.prompts[worst].drafters[0].run.tau);
        QVERIFY(w.windowTitle().contains("R.dsresults"));
        QVERIFY(w.windowTitle().contains("recorded run"));
        QVERIFY(w.windowTitle().contains("target"));
        QVERIFY(w.statusBar()->currentMessage().contains("not live"));
    }

    void selectingARowShowsThatPrompt() {
        MainWindow w(false);
        QString err;
        QVERIFY2(w.openResultsFileNow(path_, &err), qPrintable(err));
        auto* panel = w.resultsPanel();
        for (int i = 0; i < 3; ++i) {
            panel->selectPrompt(i);
            QCOMPARE(panel->currentPrompt(), i);
            const auto& dr = file_.prompts[static_cast<std::size_t>(i)].drafters[0];
            const auto& b = w.lastResult();
            QCOMPARE(b->run.tau, dr.run.tau);
            QCOMPARE(b->run.acceptanceLengths, dr.run.acceptanceLengths);
            QCOMPARE(w.blockAgreementView()->model()->rowCount(), static_cast<int>(dr.run.steps.size()));
            QCOMPARE(w.outputStripView()->model()->rowCount(), static_cast<int>(dr.run.outputIds.size()));
            QCOMPARE(b->pieces.size(), dr.run.outputIds.size());
            QCOMPARE(b->pieces.back(), QString::fromStdString(file_.pieceOf(dr.run.outputIds.back())));
            QCOMPARE(w.selection()->step(), 0);
            QCOMPARE(w.treeView()->budgetCount(), 1);
            QCOMPARE(w.budgetSweepPlot()->taus(), (QVector<double>{dr.trees[0].tau}));
            QCOMPARE(w.budgetSweepPlot()->chainTau(), dr.run.tau);
            QVERIFY(w.statusBar()->currentMessage().contains(QString::fromStdString(file_.prompts[i].id)));
        }
        // The drafter selector switches the views to drafter B's run of the same prompt.
        panel->setCurrentDrafter(1);
        QCOMPARE(panel->currentPrompt(), 2);
        QCOMPARE(w.lastResult()->run.tau, file_.prompts[2].drafters[1].run.tau);
        QCOMPARE(w.lastResult()->drafter.directory, file_.drafters[1].summary.directory);
        QCOMPARE(w.blockAgreementView()->model()->rowCount(), static_cast<int>(file_.prompts[2].drafters[1].run.steps.size()));
    }

    void liveRunReplacesTheRecordedRun() {
        MainWindow w(false);
        QString err;
        QVERIFY2(w.openResultsFileNow(path_, &err), qPrintable(err));
        auto* panel = w.resultsPanel();
        int fib = -1;
        for (std::size_t i = 0; i < file_.prompts.size(); ++i)
            if (file_.prompts[i].id == "fib") fib = static_cast<int>(i);
        QVERIFY(fib >= 0);
        panel->selectPrompt(fib);
        // The Prompt panel shows the recorded prompt and the file's settings.
        QCOMPARE(w.promptPanel()->promptText(), QString("def fibonacci(n):\n"));
        const auto shown = w.promptPanel()->request();
        QCOMPARE(shown.settings.maxNewTokens, std::int64_t(16));
        QCOMPARE(shown.settings.ignoreEos, file_.settings.run.ignoreEos);
        QCOMPARE(shown.settings.temperature, file_.settings.run.temperature);
        QCOMPARE(shown.ddtreeBudgets, (std::vector<int>{4}));
        QVERIFY(w.promptPanel()->recordedSource().contains("'fib'"));
        QVERIFY(w.promptPanel()->recordedSource().contains("R.dsresults"));
        QVERIFY(w.blockAgreementView()->caption().startsWith("Recorded, not live: R.dsresults prompt 'fib'"));
        QVERIFY(w.isComparing());  // two recorded drafters
        // A live run of the demo pair (Run loads the models the fields name): nothing recorded stays.
        w.modelPanel()->setTargetDir(QString::fromStdString(demoTarget()));
        w.modelPanel()->setDrafterDir(QString::fromStdString(demoDrafter()));
        w.promptPanel()->setMaxNewTokens(8);
        w.promptPanel()->setDdtreeBudgets({});
        QSignalSpy finished(w.controller(), &AnalysisController::analysisFinished);
        QSignalSpy started(w.controller(), &AnalysisController::analysisStarted);
        w.runAnalysis();
        QVERIFY(waitForSignal(started, 60000));
        // While it runs: the recorded run is gone from the views, table and Prompt panel.
        QVERIFY(!w.lastResult());
        QCOMPARE(w.blockAgreementView()->model()->rowCount(), 0);
        QCOMPARE(panel->currentPrompt(), -1);
        QVERIFY(panel->liveRunNote().contains("live analysis"));
        QVERIFY(w.promptPanel()->recordedSource().isEmpty());
        QVERIFY(w.windowTitle().contains("live run"));
        QVERIFY(!w.statusBar()->currentMessage().contains("ecorded"));
        QVERIFY(waitForCount(finished, 1, 120000));
        const auto live = w.lastResult();
        QVERIFY(live);
        QVERIFY(!(live->requestId & kRecordedRequestBit));
        QCOMPARE(static_cast<int>(live->run.outputIds.size() - live->run.promptIds.size()), 8);
        QVERIFY(!w.isComparing());
        QVERIFY(w.blockAgreementView()->caption().startsWith(QString("Live analysis %1").arg(live->requestId)));
        QVERIFY(w.blockAgreementView()->caption().contains(QString::number(live->run.tau, 'f', 3)));
        QCOMPARE(w.blockAgreementView()->model()->rowCount(), static_cast<int>(live->run.steps.size()));
        QVERIFY(w.statusBar()->currentMessage().contains(QString::number(live->run.tau, 'f', 3)));
        QVERIFY(!w.statusBar()->currentMessage().contains("ecorded"));
        QVERIFY(w.windowTitle().contains("live run"));
        QCOMPARE(panel->currentPrompt(), -1);
        // Selecting a row shows that recorded prompt again.
        panel->selectPrompt(fib);
        QVERIFY(w.lastResult()->requestId & kRecordedRequestBit);
        QVERIFY(panel->liveRunNote().isEmpty());
        QVERIFY(w.windowTitle().contains("recorded run"));
        QVERIFY(w.statusBar()->currentMessage().contains("not live"));
    }

    void coreViewsFitTheScreen_data() {
        QTest::addColumn<QSize>("screen");
        QTest::newRow("1600x1000") << QSize(1600, 1000);
        QTest::newRow("1920x1080") << QSize(1920, 1080);
    }

    void coreViewsFitTheScreen() {
        QFETCH(QSize, screen);
        QSettings().remove("window");  // first-start layout
        MainWindow w(false);
        w.resize(screen);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTest::qWait(100);
        QString err;
        QVERIFY2(w.openResultsFileNow(path_, &err), qPrintable(err));  // two drafters: A and B grids
        QTest::qWait(100);
        // Both grids show all 16 block positions without horizontal scrolling.
        for (auto* view : {w.blockAgreementView(), w.blockAgreementViewB()}) {
            auto* t = view->table();
            QCOMPARE(t->model()->columnCount(), 16);
            QVERIFY(t->isVisible());
            QCOMPARE(t->horizontalScrollBar()->maximum(), 0);
            QVERIFY2(t->columnViewportPosition(15) + t->columnWidth(15) <= t->viewport()->width(),
                     qPrintable(QString("%1 + %2 > %3").arg(t->columnViewportPosition(15)).arg(t->columnWidth(15))
                                    .arg(t->viewport()->width())));
            for (int c = 0; c < 16; ++c) QVERIFY(t->columnWidth(c) >= BlockAgreementView::kMinCellWidth + 4);
            QVERIFY(t->viewport()->height() >= 8 * t->verticalHeader()->defaultSectionSize());  // rows to read
            QVERIFY(!view->frozenAnchorView()->isVisible());
        }
        // Dock tab titles are not cut: every tab is at least as long as its text.
        for (auto* bar : w.findChildren<QTabBar*>()) {
            if (!bar->isVisible()) continue;
            for (int i = 0; i < bar->count(); ++i) {
                const QRect r = bar->tabRect(i);
                const int need = bar->fontMetrics().horizontalAdvance(bar->tabText(i));
                QVERIFY2(std::max(r.width(), r.height()) >= need, qPrintable(bar->tabText(i)));
                QVERIFY2(bar->rect().contains(r), qPrintable(bar->tabText(i) + " is scrolled out of its tab bar"));
            }
        }
        // No dock needs a horizontal scrollbar: show each in turn.
        for (auto* dock : w.findChildren<QDockWidget*>()) {
            if (dock->isHidden()) continue;
            dock->raise();
            QTest::qWait(20);
            if (auto* scroll = qobject_cast<QScrollArea*>(dock->widget()))
                QVERIFY2(!scroll->horizontalScrollBar()->isVisible(),
                         qPrintable(dock->windowTitle() + QString(" needs %1 px, has %2").arg(scroll->widget()->minimumSizeHint().width())
                                        .arg(scroll->viewport()->width())));
        }
        // Zoomed in, the grid scrolls and the anchor column stays in view.
        auto* a = w.blockAgreementView();
        a->setZoom(3);
        QTest::qWait(20);
        auto* t = a->table();
        QVERIFY(t->horizontalScrollBar()->maximum() > 0);
        t->horizontalScrollBar()->setValue(t->horizontalScrollBar()->maximum());
        QTest::qWait(20);
        QVERIFY(t->columnViewportPosition(0) < 0);  // the grid's own anchor column scrolled away
        auto* frozen = a->frozenAnchorView();
        QVERIFY(frozen->isVisible());
        QCOMPARE(frozen->columnWidth(0), t->columnWidth(0));
        QVERIFY(!frozen->isColumnHidden(0));
        for (int c = 1; c < 16; ++c) QVERIFY(frozen->isColumnHidden(c));
        QCOMPARE(frozen->geometry().left(), t->frameWidth());
        QVERIFY(frozen->width() >= t->verticalHeader()->width() + t->columnWidth(0));
        t->verticalScrollBar()->setValue(t->verticalScrollBar()->maximum());
        QCOMPARE(frozen->verticalScrollBar()->value(), t->verticalScrollBar()->value());
        a->setZoom(1);
        QTest::qWait(20);
        QCOMPARE(t->horizontalScrollBar()->maximum(), 0);
        QVERIFY(!frozen->isVisible());
        // Maximise a view and back; Reset layout restores the first-start docks.
        auto* acc = w.findChild<QDockWidget*>("acceptanceDock");
        auto* masks = w.findChild<QDockWidget*>("maskDock");
        w.toggleMaximisedView(acc);
        QVERIFY(w.isViewMaximised());
        QVERIFY(acc->isFloating());
        QCOMPARE(acc->size(), w.size());
        QVERIFY(masks->isHidden());
        w.toggleMaximisedView();
        QVERIFY(!w.isViewMaximised());
        QVERIFY(!acc->isFloating());
        QVERIFY(!masks->isHidden());
        w.toggleMaximisedView(w.centralWidget());  // the grids alone
        QVERIFY(acc->isHidden() && w.findChild<QDockWidget*>("modelsDock")->isHidden());
        w.toggleMaximisedView();
        masks->setFloating(true);
        w.findChild<QDockWidget*>("promptDock")->hide();
        w.resetLayout();
        QVERIFY(!masks->isFloating());
        QVERIFY(!w.findChild<QDockWidget*>("promptDock")->isHidden());
        QVERIFY(!w.findChild<QDockWidget*>("resultsAggregateDock")->isHidden());  // a file is open
        QVERIFY(w.tabifiedDockWidgets(acc).contains(masks));
        QTest::qWait(50);
        QCOMPARE(w.blockAgreementView()->table()->horizontalScrollBar()->maximum(), 0);
    }

    void doubleClickOnADockTitleMaximisesIt() {
        QSettings().remove("window");  // first-start layout
        MainWindow w(false);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTest::qWait(100);
        auto* masks = w.findChild<QDockWidget*>("maskDock");
        auto* log = w.findChild<QDockWidget*>("logDock");
        auto* models = w.findChild<QDockWidget*>("modelsDock");
        masks->raise();
        QTest::qWait(20);
        // The title bar: the strip above the dock's content.
        auto titleOf = [](QDockWidget* d) { return QPoint(d->width() / 2, d->widget()->geometry().top() / 2); };
        QVERIFY(masks->widget()->geometry().top() > 4);
        QTest::mouseDClick(masks, Qt::LeftButton, {}, titleOf(masks));
        QTest::qWait(20);
        QVERIFY(w.isViewMaximised());
        QCOMPARE(masks->size(), w.size());  // maximised: over the whole window
        QVERIFY(masks->isVisible());
        QVERIFY(models->isHidden() && log->isHidden());
        w.toggleMaximisedView();  // Ctrl+Shift+M restores
        QVERIFY(!w.isViewMaximised());
        QVERIFY(!masks->isFloating());
        QVERIFY(!models->isHidden() && !log->isHidden());
        // A double-click in the content is the view's own.
        QTest::mouseDClick(models, Qt::LeftButton, {}, models->widget()->geometry().center());
        QVERIFY(!w.isViewMaximised());
        QVERIFY(!models->isFloating());
        // The Maximise action does what the double-click did.
        QTest::mouseDClick(models, Qt::LeftButton, {}, titleOf(models));
        QVERIFY(w.isViewMaximised());
        QVERIFY(masks->isHidden());
        auto* action = w.findChild<QAction*>("maximiseViewAction");
        QVERIFY(action);
        action->trigger();
        QVERIFY(!w.isViewMaximised());
        QVERIFY(!models->isFloating());
        // A dock floated with its float button docks again on a double-click (Qt's own), and
        // nothing is maximised.
        masks->setFloating(true);
        QTest::qWait(20);
        QVERIFY(masks->isFloating());
        if (masks->widget()->geometry().top() > 4) {  // Qt draws the title (xcb); elsewhere the window manager does
            QTest::mouseDClick(masks, Qt::LeftButton, {}, titleOf(masks));
            QVERIFY(!masks->isFloating());
        }
        QVERIFY(!w.isViewMaximised());
        w.resetLayout();
    }

    void attentionNeedsTheRecordedModels() {
        {
            MainWindow w(false);
            QString err;
            QVERIFY(w.openResultsFileNow(path_, &err));
            // The demo models are here but not loaded: the view says so; loading them recomputes attention.
            QVERIFY2(w.attentionView()->infoText().contains("not loaded"), qPrintable(w.attentionView()->infoText()));
            auto* load = w.resultsPanel()->findChild<QPushButton*>("loadRecordedModels");
            QVERIFY(load && load->isEnabled());
            QSignalSpy attn(w.controller(), &AnalysisController::attentionReady);
            load->click();
            QVERIFY(waitForSignal(attn, 60000));
            QTRY_VERIFY2(w.attentionView()->hasAttention(),
                          qPrintable(w.attentionView()->errorText() + " | " + w.attentionView()->infoText() + " | " + w.logText()));
            QCOMPARE(attn.last().at(0).toULongLong(), w.lastResult()->requestId);
            QVERIFY(w.lastResult()->requestId & kRecordedRequestBit);
        }
        // Recorded elsewhere: the directories do not exist here.
        ResultsFile moved = file_;
        moved.target.summary.directory = "/nonexistent/models/target";
        const QString other = tmp_.filePath("moved.dsresults");
        writeResultsFile(other.toStdString(), moved);
        MainWindow w(false);
        QString err;
        QVERIFY(w.openResultsFileNow(other, &err));
        QCOMPARE(w.attentionView()->infoText(),
                 QString("recorded on another machine: model directory /nonexistent/models/target not found here"));
        QVERIFY(!w.attentionView()->hasAttention());
        QVERIFY(!w.resultsPanel()->findChild<QPushButton*>("loadRecordedModels")->isEnabled());
    }

    void aggregatePlotsEqualAggregateDrafter() {
        MainWindow w(false);
        QString err;
        QVERIFY(w.openResultsFileNow(path_, &err));
        auto* plots = w.resultsAggregatePlots();
        using P = ResultsAggregatePlots::Plot;
        for (int d = 0; d < 2; ++d) {
            const auto a = aggregateDrafter(file_, d);
            QVector<double> taus, rates, hist;
            for (auto i : promptsByTau(file_, d)) taus << file_.prompts[i].drafters[static_cast<std::size_t>(d)].run.tau;
            for (std::size_t j = 1; j < a.perPositionAcceptance.size(); ++j) rates << a.perPositionAcceptance[j];
            for (std::size_t n = 1; n < a.acceptanceHistogram.size(); ++n) hist << static_cast<double>(a.acceptanceHistogram[n]);
            QCOMPARE(plots->plottedValues(P::PromptTau, d), taus);
            QCOMPARE(plots->plottedValues(P::PositionAcceptance, d), rates);
            QCOMPARE(plots->plottedValues(P::LengthHistogram, d), hist);
            QCOMPARE(plots->plottedValues(P::TreeMacroTau, d), (QVector<double>{a.treeMacroTau[0]}));
            QCOMPARE(plots->chainReference(d), a.macroTau);
        }
    }

    void tauPlotNamesItsPointsAndAClickOpensThePrompt() {
        MainWindow w(false);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QString err;
        QVERIFY(w.openResultsFileNow(path_, &err));
        w.findChild<QDockWidget*>("resultsAggregateDock")->raise();
        QTest::qWait(50);
        auto* plots = w.resultsAggregatePlots();
        plots->tauPlot()->replot();
        for (int d = 0; d < 2; ++d) {
            // The three lowest taus are named beside their points, lowest first.
            QStringList lowest;
            for (auto i : promptsByTau(file_, d)) lowest << QString::fromStdString(file_.prompts[i].id);
            QCOMPARE(plots->namedPrompts(d), lowest.mid(0, ResultsAggregatePlots::kNamedPrompts));
        }
        // Every point is found at its pixel and names its prompt; the best prompt of drafter B:
        const int best = static_cast<int>(promptsByTau(file_, 1).back());
        const QPointF at = plots->promptPixel(best, 1);
        QVERIFY(at.x() >= 0);
        int drafter = -1;
        QCOMPARE(plots->promptAt(at, &drafter), best);
        QCOMPARE(drafter, 1);
        const QString text = plots->promptPointText(best, 1);
        QVERIFY2(text.startsWith(QString::fromStdString(file_.prompts[static_cast<std::size_t>(best)].id) + ": tau " +
                                 QString::number(file_.prompts[static_cast<std::size_t>(best)].drafters[1].run.tau, 'f', 3) +
                                 " (rank 3 of 3"),
                 qPrintable(text));
        QCOMPARE(plots->promptAt(at + QPointF(30, 30)), -1);  // empty space
        // A click on it shows that prompt with drafter B.
        QSignalSpy clicked(plots, &ResultsAggregatePlots::promptClicked);
        QTest::mouseClick(plots->tauPlot(), Qt::LeftButton, {}, at.toPoint());
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(w.resultsPanel()->currentPrompt(), best);
        QCOMPARE(w.resultsPanel()->currentDrafter(), 1);
        QCOMPARE(w.lastResult()->run.tau, file_.prompts[static_cast<std::size_t>(best)].drafters[1].run.tau);
    }

    void searchFiltersTheTableAndRecentFilesReopen() {
        QSettings().remove("recent/results");
        MainWindow w(false);
        QString err;
        QVERIFY(w.openResultsFileNow(path_, &err));
        auto* panel = w.resultsPanel();
        // Search by id (any case): one row; by a word of the prompt text: the prompts that hold it.
        const QString id1 = QString::fromStdString(file_.prompts[1].id);
        panel->setSearchText(id1.toUpper());
        QCOMPARE(panel->promptOrder(), (std::vector<std::size_t>{1}));
        std::vector<std::size_t> withWord;
        const std::string word = "fib";
        for (std::size_t i = 0; i < file_.prompts.size(); ++i) {
            std::string t = file_.prompts[i].id + "\n" + file_.prompts[i].prompt.text;
            std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
            if (t.find(word) != std::string::npos) withWord.push_back(i);
        }
        panel->setSearchText("FIB");
        auto order = panel->promptOrder();
        std::sort(order.begin(), order.end());
        QCOMPARE(order, withWord);
        panel->setSearchText("no prompt says this");
        QVERIFY(panel->promptOrder().empty());
        // Asking for a prompt the search hides shows every prompt again.
        panel->selectPrompt(2);
        QCOMPARE(panel->searchText(), QString());
        QCOMPARE(panel->currentPrompt(), 2);
        QCOMPARE(panel->promptOrder().size(), std::size_t(3));
        // File > Open Recent Results lists it; a file moved away shows as missing.
        QCOMPARE(w.recentResultsFiles(), QStringList{QFileInfo(path_).absoluteFilePath()});
        const QString gone = tmp_.filePath("gone.dsresults");
        QFile::copy(path_, gone);
        QVERIFY(w.openResultsFileNow(gone, &err));
        QFile::remove(gone);
        QCOMPARE(w.recentResultsFiles(), (QStringList{QFileInfo(gone).absoluteFilePath(), QFileInfo(path_).absoluteFilePath()}));
        QMenu* recent = w.recentResultsMenu();
        emit recent->aboutToShow();
        const auto actions = recent->actions();
        QVERIFY(actions.size() >= 2);
        QVERIFY2(actions[0]->text().contains("gone.dsresults (missing)") && !actions[0]->isEnabled(), qPrintable(actions[0]->text()));
        QVERIFY(actions[1]->text().contains("R.dsresults") && actions[1]->isEnabled());
        QSignalSpy read(w.findChild<ResultsReader*>(), &ResultsReader::finished);
        actions[1]->trigger();  // reads in the background, as File > Open Results does
        QVERIFY(waitForSignal(read, 60000));
        QVERIFY(w.windowTitle().contains("R.dsresults"));
        QSettings().remove("recent/results");
    }

    void noBudgetsMessageFitsTheNarrowestPlot() {
        ResultsFile f = file_;
        f.settings.ddtreeBudgets.clear();
        for (auto& p : f.prompts)
            for (auto& d : p.drafters) d.trees.clear();
        ResultsAggregatePlots plots;
        plots.setResults(f);
        auto* budget = plots.budgetPlot();
        budget->setFixedSize(budget->minimumSize());  // the narrowest the dock makes it
        plots.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plots));
        budget->replot();
        QCPItemText* text = nullptr;
        for (int i = 0; i < budget->itemCount(); ++i)
            if (auto* t = qobject_cast<QCPItemText*>(budget->item(i))) text = t;
        QVERIFY(text && text->text().startsWith("no DDTree budgets"));
        const int room = budget->axisRect()->rect().width();
        for (const QString& line : text->text().split('\n'))
            QVERIFY2(QFontMetrics(text->font()).horizontalAdvance(line) <= room,
                     qPrintable(QString("'%1' is wider than the %2 px axis rect").arg(line).arg(room)));
        QVERIFY(text->text().contains("--ddtree-budget N"));
    }

    void badFilesAreReportedAndTheWindowStaysUsable() {
        MainWindow w(false);
        QSignalSpy errors(&w, &MainWindow::errorReported);
        QString err;
        QVERIFY(w.openResultsFileNow(path_, &err));
        // Truncated, through the asynchronous path (File > Open, drop, command line).
        const QString truncated = truncatedCopy();
        const QString expected = readerError(truncated);
        QVERIFY(expected.contains("truncated.dsresults"));
        w.openResultsFile(truncated);
        QVERIFY(waitForSignal(errors, 20000));
        QCOMPARE(errors.last().at(1).toString(), expected);
        QVERIFY(w.logText().contains(expected));
        QCOMPARE(w.resultsPath(), path_);  // the previous file stays open
        // A safetensors checkpoint, not a results file.
        const QString ckpt = QString::fromStdString(demoDrafter()) + "/model.safetensors";
        if (QFileInfo::exists(ckpt)) {
            QVERIFY(!w.openResultsFileNow(ckpt, &err));
            QVERIFY2(err.contains("not a draftscope results file"), qPrintable(err));
            QCOMPARE(errors.last().at(1).toString(), err);
        }
        // A newer format version.
        ResultsFile newer = file_;
        newer.version = 3;
        const QString newerPath = tmp_.filePath("newer.dsresults");
        writeResultsFile(newerPath.toStdString(), newer);
        QVERIFY(!w.openResultsFileNow(newerPath, &err));
        QVERIFY2(err.contains("written by format version 3, this build reads 2"), qPrintable(err));
        // Still usable: dropping the good file opens it (read off the GUI thread).
        w.resultsPanel()->selectPrompt(1);
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(path_)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&w, &enter);  // Qt delivers a drop to the widget that took the enter
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&w, &drop);
        QTRY_VERIFY2_WITH_TIMEOUT(w.resultsPanel()->currentPrompt() == static_cast<int>(promptsByTau(file_, 0).front()),
                                  qPrintable(w.logText().right(600)), 20000);
        QCOMPARE(w.resultsPath(), path_);
    }

    void exportFiguresFromAResultsFile() {
        QTemporaryDir dir;
        QProcess p;
        startOffscreen(p, DRAFTSCOPE_GUI, {path_, "--results-prompt", "main", "--export-figures", dir.path()});
        QVERIFY(p.waitForFinished(120000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitCode() == 0, qPrintable(err));
        for (const auto& f : {"block_agreement", "output_strip", "acceptance_rate", "acceptance_histogram", "hidden_stats",
                              "ddtree_tree", "ddtree_budget_sweep", "drafter_attention", "results_tau",
                              "results_position_acceptance", "results_acceptance_histogram", "results_ddtree_budgets"})
            for (const auto& ext : {"png", "svg", "pdf"}) {
                const QString path = dir.filePath(QString(f) + "." + ext);
                QVERIFY2(QFileInfo(path).size() > 200, qPrintable(path + " missing or empty; stderr: " + err));
            }
        for (const auto& t : {"results_prompts", "results_aggregate", "block_agreement"})
            for (const auto& ext : {"csv", "json"}) QVERIFY2(QFileInfo(dir.filePath(QString(t) + "." + ext)).size() > 10, t);
        // The exported views are prompt "main"'s: one block-agreement row per verify step.
        std::size_t mainIndex = 0;
        for (std::size_t i = 0; i < file_.prompts.size(); ++i)
            if (file_.prompts[i].id == "main") mainIndex = i;
        QFile grid(dir.filePath("block_agreement.csv"));
        QVERIFY(grid.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(grid.readAll()).split("\r\n", Qt::SkipEmptyParts).size(),
                 static_cast<int>(file_.prompts[mainIndex].drafters[0].run.steps.size()) + 1);
        QFile table(dir.filePath("results_prompts.csv"));
        QVERIFY(table.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(table.readAll()).split("\r\n", Qt::SkipEmptyParts).size(), 4);  // header + 3 prompts
        // A truncated file: the reader's message on stderr, exit code 1.
        const QString truncated = truncatedCopy();
        p.start(DRAFTSCOPE_GUI, {truncated, "--export-figures", dir.path()});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains(readerError(truncated)));
        p.start(DRAFTSCOPE_GUI, {path_, "--results-prompt", "nope", "--export-figures", dir.path()});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
    }
};

QTEST_MAIN(TestResultsGui)
#include "tst_results_gui.moc"
