// MainWindow: the Training run dock (docs/TRACK.md, "In the GUI"): a run index written by
// draftscope-cli track, followed while `track --watch` adds checkpoints; a clicked checkpoint
// opens as drafter A or B with the run's target and prompt set. Hooks in main_window.cpp:
// setupTrainingRun() and addTrainingRunActions().

#include "gui/main_window.h"

#include "gui/dialog_dirs.h"
#include "gui/model_panel.h"
#include "gui/model_session.h"
#include "gui/prompt_panel.h"
#include "gui/training_run_watcher.h"
#include "training_run_view.h"

#include "draftscope/errors.h"

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QStatusBar>
#include <QTimer>

namespace draftscope {

void MainWindow::setupTrainingRun() {
    trainingRun_ = new TrainingRunView(this);
    trackWatcher_ = new TrainingRunWatcher(this);
    auto* d = addDock(trainingRun_, tr("Training run"), "trainingRunDock", Qt::BottomDockWidgetArea);
    tabifyDockWidget(dock("logDock"), d);
    d->hide();  // shown once a run is open
    if (viewMenu_) viewMenu_->addAction(d->toggleViewAction());
    connect(trackWatcher_, &TrainingRunWatcher::indexChanged, this, [this](const std::shared_ptr<const TrackIndex>& x) {
        if (!x) return;
        std::size_t done = 0;
        for (const auto& c : x->checkpoints) done += c.status == "done";
        trainingRun_->setIndex(*x, trackWatcher_->indexPath());
        log(tr("training run %1: %2 checkpoint(s), %3 evaluated, %4 finding(s)")
                .arg(QString::fromStdString(x->runDir))
                .arg(x->checkpoints.size())
                .arg(done)
                .arg(x->findings.size()));
    });
    connect(trackWatcher_, &TrainingRunWatcher::readFailed, this,
            [this](const QString& m) { log(tr("training run: the index could not be read again (%1)").arg(m)); });
    connect(trainingRun_, &TrainingRunView::checkpointActivated, this, &MainWindow::openTrackedCheckpoint);
}

void MainWindow::addTrainingRunActions(QMenu* file) {
    auto* open = file->addAction(tr("Open T&raining run..."), this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("Training run (draftscope-cli track output or run directory)"),
                                                            lastDialogDir("track"));
        if (d.isEmpty()) return;
        rememberDialogPath("track", d);
        QString error;
        if (!openTrainingRun(d, &error)) reportError("open training run", error);
    });
    open->setObjectName("openTrainingRunAction");
    open->setToolTip(tr("Show a training run evaluated by draftscope-cli track: tau over steps, regressions, the "
                        "train-vs-inference gap; it updates while track --watch runs"));
}

bool MainWindow::openTrainingRun(const QString& dir, QString* error) {
    QString err;
    if (!trackWatcher_->open(dir, &err)) {
        if (error) *error = err;
        return false;
    }
    if (isViewMaximised()) toggleMaximisedView();
    // Raised (and, with no models loaded, maximised: the run is all there is to look at) once
    // the window is shown; before that a tabified dock cannot be brought to the front.
    auto bringForward = [this] {
        QDockWidget* d = dock("trainingRunDock");
        d->show();
        d->raise();
        if (models_->loaded().drafterDir.isEmpty() && !isViewMaximised()) toggleMaximisedView(d);
    };
    if (isVisible()) bringForward();
    else QTimer::singleShot(0, this, bringForward);
    dock("trainingRunDock")->show();
    statusBar()->showMessage(tr("Training run %1").arg(trackWatcher_->indexPath()), 8000);
    return true;
}

void MainWindow::openTrackedCheckpoint(const QString& drafterPath, bool asB, const QString& targetDir,
                                       const QString& promptSetPath) {
    ModelRequest r = modelPanel_->request();  // keeps the chosen device and dtype
    r.targetDir = targetDir;                  // the target the run was evaluated with
    if (asB && !r.drafterDir.isEmpty()) r.drafterBDir = drafterPath;
    else r.drafterDir = drafterPath;
    try {
        promptPanel_->loadPromptSet(promptSetPath);
    } catch (const Error& e) {
        log(tr("training run: the prompt set %1 did not load (%2); keeping the current prompts")
                .arg(promptSetPath, QString::fromStdString(e.what())));
    }
    log(tr("opening checkpoint %1 as drafter %2").arg(drafterPath, asB && r.drafterBDir == drafterPath ? "B" : "A"));
    if (isViewMaximised()) toggleMaximisedView();  // the views that will show the checkpoint
    modelPanel_->setRequest(r);
    loadModels(r);
}

}  // namespace draftscope
