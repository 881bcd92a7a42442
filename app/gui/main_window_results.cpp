// MainWindow: results files (draftscope-cli eval --out) shown as recorded runs. Kept apart
// from main_window.cpp; the hooks there are setupResults(), addResultsActions(),
// noteLoadedForResults() and the drop handler. The Workbench shows the recorded bundles.

#include "gui/main_window.h"
#include "gui/dialog_dirs.h"

#include "attention_view.h"
#include "gui/model_panel.h"
#include "gui/prompt_panel.h"
#include "gui/results_panel.h"
#include "results_aggregate_plots.h"

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QSettings>
#include <QMenu>
#include <QStatusBar>

namespace draftscope {

namespace {
QString canonicalDir(const std::string& dir) {
    const QFileInfo fi(QString::fromStdString(dir));
    const QString c = fi.canonicalFilePath();
    return c.isEmpty() ? fi.absoluteFilePath() : c;
}
}  // namespace

void MainWindow::setupResults() {
    resultsPanel_ = new ResultsPanel(this);
    aggregate_ = new ResultsAggregatePlots(this);
    resultsReader_ = new ResultsReader(this);
    auto* rd = addDock(resultsPanel_, tr("Results"), "resultsDock", Qt::BottomDockWidgetArea);
    tabifyDockWidget(dock("logDock"), rd);
    auto* ad = addDock(aggregate_, tr("All prompts"), "resultsAggregateDock", Qt::RightDockWidgetArea, true);
    tabifyDockWidget(dock("ddtreeSweepDock"), ad);
    dock("outputDock")->raise();
    // Shown once a results file is open.
    rd->hide();
    ad->hide();
    if (viewMenu_) viewMenu_->addActions({rd->toggleViewAction(), ad->toggleViewAction()});

    connect(resultsReader_, &ResultsReader::finished, this, &MainWindow::showResultsFile);
    connect(resultsPanel_, &ResultsPanel::promptSelected, this, &MainWindow::showRecordedPrompt);
    // A point of the All-prompts tau plot opens its prompt, shown with that point's drafter.
    connect(aggregate_, &ResultsAggregatePlots::promptClicked, this, [this](int prompt, int drafter) {
        resultsPanel_->setCurrentDrafter(drafter);
        resultsPanel_->selectPrompt(prompt);
    });
    connect(resultsPanel_, &ResultsPanel::loadModelsRequested, this, [this] {
        if (!results_) return;
        const int d = resultsPanel_->currentDrafter();
        ModelRequest r = modelPanel_->request();  // keeps the chosen device and dtype
        r.targetDir = QString::fromStdString(results_->target.summary.directory);
        r.drafterDir = QString::fromStdString(results_->drafters[static_cast<std::size_t>(d)].summary.directory);
        loadModels(r);
    });
}

void MainWindow::noteLoadedForResults(const ModelsLoaded& m) {
    loadedTarget_ = canonicalDir(m.target.directory);
    loadedDrafter_ = canonicalDir(m.drafter.directory);
    if (results_ && !followsLive_ && resultsPanel_->currentPrompt() >= 0)
        showRecordedPrompt(resultsPanel_->currentPrompt(), resultsPanel_->currentDrafter());
}

void MainWindow::addResultsActions(QMenu* file) {
    auto* open = file->addAction(tr("Open &Results..."), this, [this] {
        const QString p = QFileDialog::getOpenFileName(this, tr("Open results file"), lastDialogDir("results"),
                                                       tr("draftscope results (*.dsresults);;All files (*)"));
        if (!p.isEmpty()) openResultsFile(p);
    });
    open->setShortcut(QKeySequence::Open);
    open->setObjectName("openResultsAction");
    open->setToolTip(tr("Open a results file written by draftscope-cli eval --out (no models or GPU needed)"));
    // The results files opened last, newest first (rebuilt each time it opens: a file moved
    // away since shows as missing).
    recentResultsMenu_ = file->addMenu(tr("Open Re&cent Results"));
    recentResultsMenu_->setObjectName("recentResultsMenu");
    connect(recentResultsMenu_, &QMenu::aboutToShow, this, &MainWindow::fillRecentResultsMenu);
    fillRecentResultsMenu();
}

QStringList MainWindow::recentResultsFiles() const { return QSettings().value("recent/results").toStringList(); }

void MainWindow::fillRecentResultsMenu() {
    recentResultsMenu_->clear();
    const QStringList files = recentResultsFiles();
    for (int i = 0; i < files.size(); ++i) {
        const QString& path = files[i];
        const bool there = QFileInfo(path).isFile();
        auto* a = recentResultsMenu_->addAction(tr("&%1 %2%3").arg(i + 1).arg(QFileInfo(path).fileName(),
                                                                          there ? QString() : tr(" (missing)")),
                                                this, [this, path] { openResultsFile(path); });
        a->setToolTip(path);
        a->setStatusTip(path);
        a->setEnabled(there);
    }
    if (files.isEmpty()) recentResultsMenu_->addAction(tr("(none yet)"))->setEnabled(false);
    recentResultsMenu_->addSeparator();
    auto* clear = recentResultsMenu_->addAction(tr("Clear the list"), this, [this] {
        QSettings().remove("recent/results");
        fillRecentResultsMenu();
    });
    clear->setEnabled(!files.isEmpty());
}

void MainWindow::rememberRecentResults(const QString& path) {
    const QString abs = QFileInfo(path).absoluteFilePath();
    QStringList files = recentResultsFiles();
    files.removeAll(abs);
    files.prepend(abs);
    while (files.size() > kRecentResults) files.removeLast();
    QSettings().setValue("recent/results", files);
    if (recentResultsMenu_) fillRecentResultsMenu();
}

void MainWindow::openResultsFile(const QString& path) {
    log(tr("reading results file %1").arg(path));
    statusBar()->showMessage(tr("Reading %1 ...").arg(QFileInfo(path).fileName()));
    resultsReader_->read(path);
}

bool MainWindow::openResultsFileNow(const QString& path, QString* error) {
    QString err;
    const ResultsFilePtr r = ResultsReader::readNow(path, &err);
    showResultsFile(path, r, err);
    if (!r && error) *error = err;
    return r != nullptr;
}

void MainWindow::showResultsFile(const QString& path, const ResultsFilePtr& r, const QString& error) {
    if (!r) {
        // The previous file (if any) stays open; the window stays usable.
        reportError("open results", error.isEmpty() ? tr("cannot read '%1'").arg(path) : error);
        return;
    }
    results_ = r;
    resultsPath_ = path;
    rememberDialogPath("results", path);  // the next Open Results dialog starts here
    rememberRecentResults(path);
    QStringList names;
    for (int d = 0; d < static_cast<int>(r->drafters.size()); ++d) names << recordedDrafterLabel(*r, d);
    log(tr("opened results file %1: %2 prompts, target %3, drafters %4 (%5, %6)")
            .arg(path).arg(r->prompts.size()).arg(QString::fromStdString(r->target.summary.directory), names.join(", "),
                                                   QString::fromStdString(r->producer),
                                                   QString::fromStdString(r->createdUtc)));
    if (!r->complete) log(tr("results file %1 is incomplete: the evaluation was interrupted").arg(path));
    aggregate_->setResults(*r);
    dock("resultsDock")->show();
    dock("resultsAggregateDock")->show();
    dock("resultsDock")->raise();
    resizeDocks({dock("resultsDock")}, {260}, Qt::Vertical);  // room for the table
    dock("resultsAggregateDock")->raise();
    resultsPanel_->setResults(r, path);  // selects the worst prompt: showRecordedPrompt follows
    if (resultsPanel_->currentPrompt() < 0) {
        workbench_->clear();
        workbench_->attentionView()->setPlaceholder(tr("the results file holds no prompts"));
    }
    updateResultsTitle();
}

void MainWindow::showRecordedPrompt(int prompt, int drafter) {
    if (!results_ || prompt < 0 || prompt >= static_cast<int>(results_->prompts.size())) return;
    if (drafter < 0 || drafter >= static_cast<int>(results_->drafters.size())) return;
    const auto& p = results_->prompts[static_cast<std::size_t>(prompt)];
    resultsPanel_->setLiveRunShown(QString());
    // The Prompt panel shows what this recorded run ran: its prompt and the file's settings.
    promptPanel_->showRecorded(p.prompt, results_->settings.run, results_->settings.ddtreeBudgets,
                               tr("prompt '%1' of %2").arg(QString::fromStdString(p.id), QFileInfo(resultsPath_).fileName()));
    resultsPanel_->setModelsAvailability(recordedModelsMissingReason(*results_, drafter));
    const quint64 id = kRecordedRequestBit | ++recordedId_;
    const QString file = QFileInfo(resultsPath_).fileName();
    if (!p.error.empty()) {
        followsLive_ = false;
        workbench_->clear();
        runState_.recordedShown(file, QString::fromStdString(p.id), {});
        applyRunState();
        workbench_->attentionView()->setPlaceholder(tr("prompt '%1' failed during the evaluation").arg(QString::fromStdString(p.id)));
        statusBar()->showMessage(tr("Recorded run %1: prompt '%2' failed: %3")
                                     .arg(file, QString::fromStdString(p.id), QString::fromStdString(p.error)));
        updateResultsTitle();
        return;
    }
    RunBundlePtr b;
    try {
        b = bundleFromResults(*results_, static_cast<std::size_t>(prompt), drafter, id);
        if (results_->drafters.size() >= 2) {
            // Two drafters recorded: the other one is drafter B of the side-by-side views.
            auto withB = std::make_shared<RunBundle>(*b);
            withB->comparison = bundleFromResults(*results_, static_cast<std::size_t>(prompt), drafter == 0 ? 1 : 0, id);
            b = withB;
        }
    } catch (const std::exception& e) {
        reportError("open results", QString::fromStdString(e.what()));
        return;
    }
    followsLive_ = false;  // live results are not shown from now on (until the next Run)
    workbench_->show({b, nullptr, shownRunLabel(*b), true, recordedAttentionUnavailable(drafter), {}, {}});
    runState_.recordedShown(file, QString::fromStdString(p.id), Workbench::runsLabel(*b));
    applyRunState();  // the progress bar no longer shows a live run
    QString trees;
    for (const auto& t : b->treeRuns) trees += tr(", DDTree %1: %2").arg(t.budget).arg(t.tau, 0, 'f', 3);
    statusBar()->showMessage(tr("Recorded run %1 (not live): prompt '%2', drafter %3: tau %4 over %5 verify steps%6")
                                 .arg(file, QString::fromStdString(p.id), recordedDrafterLabel(*results_, drafter))
                                 .arg(b->run.tau, 0, 'f', 3).arg(b->run.steps.size()).arg(trees));
    updateResultsTitle();
}

QString MainWindow::recordedAttentionUnavailable(int d) const {
    if (const QString missing = recordedModelsMissingReason(*results_, d); !missing.isEmpty()) return missing;
    if (loadedTarget_ != canonicalDir(results_->target.summary.directory) ||
        loadedDrafter_ != canonicalDir(results_->drafters[static_cast<std::size_t>(d)].summary.directory))
        return tr("recorded run: its models are on this machine but not loaded; click 'Load recorded models' in the "
                  "Results panel to recompute the drafter's attention");
    return {};
}

QString MainWindow::shownRunLabel(const RunBundle& b) const {
    if (!(b.requestId & kRecordedRequestBit)) return tr("Live analysis %1").arg(b.requestId);
    const int p = resultsPanel_->currentPrompt();
    const QString id = results_ && p >= 0 ? QString::fromStdString(results_->prompts[static_cast<std::size_t>(p)].id)
                                          : QString();
    return tr("Recorded, not live: %1 prompt '%2'").arg(QFileInfo(resultsPath_).fileName(), id);
}

void MainWindow::updateResultsTitle() {
    if (!results_) {
        setWindowTitle(tr("draftscope"));
        return;
    }
    const QString file = QFileInfo(resultsPath_).fileName();
    if (followsLive_) {
        setWindowTitle(tr("draftscope - live run (results file %1 open)").arg(file));
        return;
    }
    QStringList names;
    for (int d = 0; d < static_cast<int>(results_->drafters.size()); ++d) names << recordedDrafterLabel(*results_, d);
    const auto& t = results_->target.summary;
    setWindowTitle(tr("%1 - recorded run, not live - target %2 (%3), drafters %4 - draftscope")
                       .arg(file, QFileInfo(QString::fromStdString(t.directory)).fileName(),
                            QString::fromStdString(t.architecture), names.join(", ")));
}

}  // namespace draftscope
