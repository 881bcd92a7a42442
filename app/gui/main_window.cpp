#include "gui/main_window.h"
#include "training_run_view.h"
#include "gui/diagnose_panel.h"
#include "gui/dialog_dirs.h"
#include "gui/dock_layout.h"

#include "acceptance_plots.h"
#include "acceptance_tree_view.h"
#include "attention_view.h"
#include "budget_sweep_plot.h"
#include "selector_view.h"
#include "comparison_summary_view.h"
#include "draftscope/analysis.h"
#include "draftscope/attention_layout.h"
#include "hidden_stats_view.h"
#include "mask_view.h"
#include "output_strip_view.h"
#include "draftscope/file_io.h"
#include "draftscope/results_json.h"
#include "draftscope/safetensors.h"
#include "gui/inspector_dialog.h"
#include "gui/model_session.h"
#include "gui/shortcuts_dialog.h"
#include "gui/model_panel.h"
#include "gui/prompt_panel.h"
#include "gui/results_panel.h"
#include "draftscope/version.h"
#include "results_aggregate_plots.h"
#include "step_selection.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QShowEvent>
#include <QStyle>
#include <QVBoxLayout>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QScreen>

#include <algorithm>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>

namespace draftscope {

namespace {
/// A vertical box layout that never reports height-for-width (see the side panels).
class NoHeightForWidthLayout : public QVBoxLayout {
public:
    using QVBoxLayout::QVBoxLayout;
    bool hasHeightForWidth() const override { return false; }
};

/// Keeps a scroll area at least as tall as its content's minimum (re-read whenever the
/// content's layout changes, e.g. a status line that wraps): the dock area then shrinks the
/// other docks first, and this one never scrolls.
class KeepWholeHeight : public QObject {
public:
    KeepWholeHeight(QScrollArea* scroll) : QObject(scroll), scroll_(scroll) {
        scroll->widget()->installEventFilter(this);
        update();
    }
    bool eventFilter(QObject*, QEvent* e) override {
        if (e->type() == QEvent::LayoutRequest) update();
        return false;
    }

private:
    void update() { scroll_->setMinimumHeight(scroll_->widget()->minimumSizeHint().height()); }
    QScrollArea* scroll_;
};
}  // namespace

MainWindow::MainWindow(bool showErrorDialogs, QWidget* parent)
    : QMainWindow(parent), dialogs_(showErrorDialogs), controller_(new AnalysisController(this)),
      workbench_(new Workbench(controller_, this)), layout_(new DockLayout(this)) {
    setObjectName("DraftscopeMainWindow");
    setWindowTitle(tr("draftscope"));
    setAcceptDrops(true);
    setDockNestingEnabled(true);

    modelPanel_ = new ModelPanel(this);
    promptPanel_ = new PromptPanel(this);
    models_ = new ModelSession(controller_, modelPanel_, this);
    connect(models_, &ModelSession::logLine, this, &MainWindow::log);
    log_ = new QPlainTextEdit(this);
    log_->setObjectName("log");
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(5000);
    createDocks();
    createComparisonDocks();
    createToolDocks();
    createMenus();
    // First start: the whole screen (up to 1920x1080).
    if (const QScreen* screen = QGuiApplication::primaryScreen()) {
        const QSize avail = screen->availableSize();
        resize(std::min(avail.width(), 1920), std::min(avail.height(), 1080));
    } else {
        resize(1600, 1000);
    }

    connect(modelPanel_, &ModelPanel::loadRequested, this, &MainWindow::loadModels);
    connect(promptPanel_, &PromptPanel::runRequested, this, [this] { runAnalysis(); });
    connect(promptPanel_, &PromptPanel::cancelRequested, controller_, &AnalysisController::cancel);
    connect(workbench_, &Workbench::logLine, this, &MainWindow::log);
    connect(workbench_, &Workbench::statusMessage, this, [this](const QString& m) { statusBar()->showMessage(m); });
    connectController();

    setupResults();
    setupTrainingRun();
    dock("acceptanceDock")->raise();
    createLayoutActions();
    layout_->captureDefault();

    QSettings s;
    restoredGeometry_ = restoreGeometry(s.value("window/geometry").toByteArray());
    if (!restoreState(s.value("window/state").toByteArray()))
        QTimer::singleShot(0, this, [this] { applyDefaultDockSizes(); });  // first start
    clampToScreen();  // after the dock sizes, which can widen the window
    hideDocksWithoutContent(/*remember=*/true);
    statusBar()->showMessage(tr("Choose a target and a drafter, or start with draftscope --demo"));
    applyRunState();
}

void MainWindow::clampToScreen() {
    const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
    if (!screen) return;
    const QRect avail = screen->availableGeometry();
    QRect g = geometry();
    if (isMaximized() || isFullScreen()) return;
    // The frame (title bar, borders) sits outside geometry(): leave room for it.
    const QMargins frame(frameGeometry().left() - g.left(), frameGeometry().top() - g.top(),
                         frameGeometry().right() - g.right(), frameGeometry().bottom() - g.bottom());
    const QRect room = avail.marginsRemoved(frame);
    // Never below the minimum size (docks at their smallest): on a screen smaller than that
    // the window starts at the screen's top left corner.
    g.setWidth(std::max(std::min(g.width(), room.width()), minimumSizeHint().width()));
    g.setHeight(std::max(std::min(g.height(), room.height()), minimumSizeHint().height()));
    g.moveLeft(std::max(room.left(), std::min(g.left(), room.right() - g.width() + 1)));
    g.moveTop(std::max(room.top(), std::min(g.top(), room.bottom() - g.height() + 1)));
    setGeometry(g);
}

void MainWindow::hideDocksWithoutContent(bool remember) {
    const bool models = !models_->loaded().targetDir.isEmpty();
    const struct {
        const char* name;
        bool hasContent;
    } conditional[] = {{"resultsDock", results_ != nullptr},
                       {"resultsAggregateDock", results_ != nullptr},
                       {"comparisonDock", isComparing()},
                       {"diagnoseDock", models},
                       {"targetLoadsDock", models},
                       {"trainingRunDock", trainingRun_ && trainingRun_->hasIndex()}};
    for (const auto& c : conditional) {
        QDockWidget* d = dock(c.name);
        if (!d) continue;
        if (remember && d->isVisibleTo(this)) reopenWithContent_.insert(c.name);
        if (!c.hasContent) d->hide();
    }
    if (compareBar_) compareBar_->setVisible(isComparing());
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::dock(const char* name) const { return findChild<QDockWidget*>(name); }

void MainWindow::createDocks() {
    Workbench* wb = workbench_;
    // The Prompt panel scrolls vertically, so the two side panels fit a 768-pixel-high laptop
    // screen together; neither is narrower than its fields.
    for (QWidget* panel : {static_cast<QWidget*>(modelPanel_), static_cast<QWidget*>(promptPanel_)}) {
        // QScrollArea takes a height-for-width layout's preferred height as its minimum (a
        // word-wrapped label makes the panel's layout one): the scrollbar would appear while the
        // panel still fits. Wrapped in a layout without height-for-width, the panel scrolls
        // only below its minimum height.
        auto* holder = new QWidget(this);
        auto* layout = new NoHeightForWidthLayout(holder);
        layout->setContentsMargins(0, 0, 0, 0);
        layout->addWidget(panel);
        const bool models = panel == modelPanel_;
        QDockWidget* side = addDock(holder, models ? tr("Models") : tr("Prompt"), models ? "modelsDock" : "promptDock",
                                    Qt::LeftDockWidgetArea, /*scrollable=*/true);
        auto* scroll = static_cast<QScrollArea*>(side->widget());
        scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        scroll->setMinimumWidth(panel->minimumSizeHint().width() + scroll->style()->pixelMetric(QStyle::PM_ScrollBarExtent));
        // The Models panel is short and holds the fields everything starts from: it stays
        // whole and the Prompt panel (its list can be long) scrolls when both do not fit.
        if (models) new KeepWholeHeight(scroll);
    }
    auto* output = addDock(wb->stripView(), tr("Output"), "outputDock", Qt::BottomDockWidgetArea);
    auto* acc = addDock(wb->acceptance(), tr("Acceptance"), "acceptanceDock", Qt::RightDockWidgetArea, true);
    auto* masks = addDock(wb->maskView(), tr("Masks"), "maskDock", Qt::RightDockWidgetArea, true);
    auto* attn = addDock(wb->attentionView(), tr("Attention"), "attentionDock", Qt::RightDockWidgetArea, true);
    auto* stats = addDock(wb->statsView(), tr("Hidden states"), "statsDock", Qt::RightDockWidgetArea, true);
    auto* tree = addDock(wb->treeView(), tr("DDTree"), "ddtreeDock", Qt::RightDockWidgetArea);
    auto* sweep = addDock(wb->sweep(), tr("Budget sweep"), "ddtreeSweepDock", Qt::RightDockWidgetArea, true);
    auto* selector = addDock(wb->selectorView(), tr("Selector"), "selectorDock", Qt::RightDockWidgetArea, true);
    auto* logDock = addDock(log_, tr("Log"), "logDock", Qt::BottomDockWidgetArea);
    // One tab group on the right, its tabs on the right edge (titles read vertically, never
    // cut), running the full height; the left panels too; Output and Log under the grid.
    // Every dock can be dragged out to sit side by side with the others.
    setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    setTabPosition(Qt::RightDockWidgetArea, QTabWidget::East);
    tabifyDockWidget(acc, masks);
    tabifyDockWidget(masks, attn);
    tabifyDockWidget(attn, stats);
    tabifyDockWidget(stats, tree);
    tabifyDockWidget(tree, sweep);
    tabifyDockWidget(sweep, selector);
    acc->raise();
    tabifyDockWidget(output, logDock);
    output->raise();
    // Centre: A's grid, and B's grid under it while comparing.
    setCentralWidget(wb->grids());
}

void MainWindow::createComparisonDocks() {
    auto* summaryDock = addDock(workbench_->summaryView(), tr("A vs B"), "comparisonDock", Qt::RightDockWidgetArea);
    tabifyDockWidget(dock("selectorDock"), summaryDock);
    summaryDock->hide();
    dock("acceptanceDock")->raise();
    compareBar_ = addToolBar(tr("Compare"));
    compareBar_->setObjectName("compareToolBar");
    compareBar_->addWidget(new QLabel(tr(" Detail views (DDTree, masks, attention, hidden states) show: "), compareBar_));
    compareBar_->addWidget(workbench_->detailDrafterBox());
    compareBar_->hide();
    connect(workbench_, &Workbench::comparingChanged, this, [this, summaryDock](bool comparing) {
        summaryDock->setVisible(comparing);
        compareBar_->setVisible(comparing);
    });
}

void MainWindow::connectController() {
    connect(controller_, &AnalysisController::busyChanged, promptPanel_, &PromptPanel::setBusy);
    // The controller delivers only the newest analysis's replies; the views follow it unless
    // they show a recorded prompt.
    connect(controller_, &AnalysisController::progress, this, [this](quint64, qint64 done, qint64 total) {
        if (followsLive_) promptPanel_->setProgress(done, total);
    });
    connect(controller_, &AnalysisController::stageChanged, this, [this](quint64, const QString& stage) {
        if (followsLive_) promptPanel_->setStage(stage);
    });
    connect(controller_, &AnalysisController::modelsLoaded, this, &MainWindow::onModelsLoaded);
    connect(controller_, &AnalysisController::analysisStarted, this, [this](quint64 id) {
        if (!followsLive_) {
            log(tr("analysis %1 started (the views show a recorded prompt)").arg(id));
            return;
        }
        log(runState_.analysisStarted(id, requestedBudgets_[id]));
        // Nothing of the previous (live or recorded) run stays on screen next to the new one.
        workbench_->clear();
        promptPanel_->showRecorded({}, {}, {}, {});
        if (results_) {  // a live run opens on its own views, not on the file's
            dock("acceptanceDock")->raise();
            dock("outputDock")->raise();
            resultsPanel_->setLiveRunShown(tr("The views show live analysis %1, not a prompt of this file: select a "
                                              "row to show that prompt again.").arg(id));
        }
        applyRunState();
        updateResultsTitle();
    });
    // Each run (chain, every DDTree budget) is shown as soon as it is done.
    connect(controller_, &AnalysisController::partialResult, this, [this](const RunBundlePtr& b) { showLive(b, false); });
    connect(controller_, &AnalysisController::analysisFinished, this, [this](const RunBundlePtr& b) {
        if (followsLive_) {
            // The last verify step commits past the last progress report: the bar ends at the
            // tokens generated (fewer than max new when a stop token ended the run).
            const auto generated = static_cast<qint64>(b->run.outputIds.size() - b->run.promptIds.size());
            promptPanel_->setProgress(generated, std::max<qint64>(b->run.settings.maxNewTokens, generated));
        }
        showLive(b, true);
        updateResultsTitle();
        // The Diagnose dock prices its probes at this run's time per verify step.
        if (diagnosePanel_ && !b->run.steps.empty() && b->run.timing.decodeMs > 0)
            diagnosePanel_->setSecondsPerCall(b->run.timing.decodeMs / 1000.0 / static_cast<double>(b->run.steps.size()));
    });
    connect(controller_, &AnalysisController::failed, this, [this](quint64 id, FailureKind kind, const QString& message) {
        if (kind == FailureKind::Load) {
            lastLoadFailed_ = true;
            models_->noteLoadFailed();  // the engine holds no models now
            updateToolModels();
            if (const auto line = runState_.loadFailed(); !line.isEmpty()) log(line);  // what is on screen is stale now
            applyRunState();
        } else if (kind == FailureKind::Analysis) {
            if (followsLive_ && controller_->isLatestAnalysis(id))
                if (const auto line = runState_.analysisFailed(id, message); !line.isEmpty()) log(line);
            if (lastLoadFailed_ && models_->loaded().targetDir.isEmpty()) {
                // A Run queued behind the load that failed: that load's dialog already said why.
                log(tr("analysis %1 not run: the models did not load").arg(id));
                applyRunState();
                return;
            }
            applyRunState();
        }
        reportError(failureName(kind), message);
    });
    connect(controller_, &AnalysisController::cancelled, this, [this](quint64 id) {
        if (!followsLive_ || !controller_->isLatestAnalysis(id)) {  // superseded by a newer Run
            log(tr("analysis %1 cancelled").arg(id));
            return;
        }
        log(runState_.cancelled(id));
        // The runs that finished before the cancel stay on screen; they are final now, so
        // their attention can be computed.
        const RunBundlePtr& shown = workbench_->shown();
        if (shown && shown->requestId == id) workbench_->markComplete();
        applyRunState();
    });
}

void MainWindow::applyRunState() {
    workbench_->setRunNote(runState_.captionNote(), runState_.treeEmptyText());
    // While running, the controller's stage ("DDTree budget 8 (1 of 2)") is the line.
    if (runState_.phase() != RunState::Phase::Running) promptPanel_->setProgressText(runState_.progressLine());
    if (!runState_.progressIsLive())
        promptPanel_->resetProgress(runState_.phase() == RunState::Phase::Recorded ? tr("recorded run (not live)")
                                                                                   : tr("no run yet"));
    // A finished or recorded run's line is the workbench's (its tau per run); the state's
    // line says what that one cannot: running, cancelled, failed, stale.
    const auto phase = runState_.phase();
    const bool workbenchSays = (phase == RunState::Phase::Finished || phase == RunState::Phase::Recorded) && !runState_.stale();
    if (const auto s = runState_.statusLine(); !s.isEmpty() && !workbenchSays) statusBar()->showMessage(s);
}

void MainWindow::showLive(const RunBundlePtr& b, bool complete) {
    if (!followsLive_) return;  // a recorded prompt was chosen after this analysis was asked for
    workbench_->show({b, nullptr, shownRunLabel(*b), complete, {}, {}, {}});
    if (const auto line = runState_.runShown(b->requestId, Workbench::runsLabel(*b), complete); !line.isEmpty()) log(line);
    applyRunState();
}

void MainWindow::onModelsLoaded(const ModelsLoaded& m) {
    lastLoadFailed_ = false;
    models_->noteLoaded(m);
    workbench_->clear();
    if (followsLive_) {
        runState_.modelsLoaded();
        applyRunState();
    }
    workbench_->setDrafterLayout(m.drafter);
    noteLoadedForResults(m);  // a recorded prompt on screen is shown again (its attention may be computable now)
    updateToolModels();
    // Tool docks open at the last close come back once there are models for them.
    for (const char* name : {"diagnoseDock", "targetLoadsDock"})
        if (reopenWithContent_.remove(name)) dock(name)->show();
}

void MainWindow::applyDefaultDockSizes() {
    // The grid gets the middle: the left panels a fixed width, the right views about a third.
    resizeDocks({dock("modelsDock"), dock("acceptanceDock")},
                {290, std::max(440, width() * 7 / 20)}, Qt::Horizontal);
    resizeDocks({dock("outputDock")}, {std::max(150, height() / 6)}, Qt::Vertical);
    resizeDocks({dock("modelsDock")}, {std::min(300, height() / 3)}, Qt::Vertical);
}

void MainWindow::resetLayout() {
    layout_->restoreDefault();
    // The docks that only apply to a results file, a comparison, loaded models or a training
    // run follow what is shown (the first-start layout has them hidden).
    dock("resultsAggregateDock")->setVisible(results_ != nullptr);
    dock("resultsDock")->setVisible(results_ != nullptr);
    dock("comparisonDock")->setVisible(isComparing());
    dock("trainingRunDock")->setVisible(trainingRun_->hasIndex());
    reopenWithContent_.clear();
    hideDocksWithoutContent(false);
    dock("acceptanceDock")->raise();
    dock("outputDock")->raise();
    applyDefaultDockSizes();
}

void MainWindow::toggleMaximisedView(QWidget* view) { layout_->toggleMaximised(view); }

bool MainWindow::isViewMaximised() const { return layout_->isMaximised(); }

bool MainWindow::eventFilter(QObject* watched, QEvent* e) {
    // QDockWidget floats (or re-docks) itself on a double-click on its title bar; here that
    // toggles maximising the view. A dock the user floated with its float button keeps Qt's
    // double-click, which docks it again; the maximised dock (floating over the window)
    // restores the layout.
    auto* dock = qobject_cast<QDockWidget*>(watched);
    if (dock && e->type() == QEvent::MouseButtonDblClick) {
        const auto* me = static_cast<QMouseEvent*>(e);
        // The title bar is the part of the dock its content does not cover.
        const bool onTitle = dock->widget() && !dock->widget()->geometry().contains(me->position().toPoint()) &&
                             dock->rect().contains(me->position().toPoint());
        if (me->button() == Qt::LeftButton && onTitle && (!dock->isFloating() || isViewMaximised())) {
            toggleMaximisedView(dock);
            return true;
        }
    }
    return QMainWindow::eventFilter(watched, e);
}

void MainWindow::createLayoutActions() {
    viewMenu_->addSeparator();
    auto* reset = viewMenu_->addAction(tr("&Reset layout"), this, &MainWindow::resetLayout);
    reset->setObjectName("resetLayoutAction");
    reset->setToolTip(tr("Put every view back where it was at first start"));
    auto* maximise = viewMenu_->addAction(tr("&Maximise current view"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M),
                                          this, [this] { toggleMaximisedView(); });
    maximise->setObjectName("maximiseViewAction");
    maximise->setToolTip(tr("The view with the keyboard focus (or the grid) fills the window; again to restore. "
                            "Double-clicking a view's title bar does the same for that view."));
}

QDockWidget* MainWindow::addDock(QWidget* w, const QString& title, const QString& name, Qt::DockWidgetArea area,
                                 bool scrollable) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->installEventFilter(this);  // title bar double-click maximises (eventFilter)
    if (scrollable) {
        auto* scroll = new QScrollArea(dock);
        scroll->setWidgetResizable(true);
        scroll->setFrameShape(QFrame::NoFrame);
        scroll->setWidget(w);
        dock->setWidget(scroll);
    } else {
        dock->setWidget(w);
    }
    addDockWidget(area, dock);
    return dock;
}

void MainWindow::createMenus() {
    auto* file = menuBar()->addMenu(tr("&File"));
    addResultsActions(file);
    addTrainingRunActions(file);
    file->addSeparator();
    file->addAction(tr("Open &target directory..."), this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("Target model directory"), lastDialogDir("models"));
        rememberDialogPath("models", d.isEmpty() ? d : QFileInfo(d).absolutePath());
        if (!d.isEmpty()) modelPanel_->setTargetDir(d);
    });
    file->addAction(tr("Open &drafter directory..."), this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("DFlash drafter directory"), lastDialogDir("models"));
        rememberDialogPath("models", d.isEmpty() ? d : QFileInfo(d).absolutePath());
        if (!d.isEmpty()) modelPanel_->setDrafterDir(d);
    });
    file->addAction(tr("Load &prompt set..."), this, [this] {
        const QString p = QFileDialog::getOpenFileName(this, tr("Prompt set"), lastDialogDir("prompts"),
                                                       tr("JSON lines (*.jsonl *.json)"));
        if (p.isEmpty()) return;
        rememberDialogPath("prompts", p);
        try {
            promptPanel_->loadPromptSet(p);
            log(tr("loaded prompt set %1").arg(p));
        } catch (const std::exception& e) {
            reportError("prompt set", QString::fromStdString(e.what()));
        }
    });
    file->addSeparator();
    auto* exportAll = file->addAction(tr("&Export all figures and tables..."), this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("Export into directory"), lastDialogDir("export"));
        if (d.isEmpty()) return;
        rememberDialogPath("export", d);
        QString err;
        const auto written = exportAllFigures(d, &err);
        if (!err.isEmpty()) reportError("export", err);
        else log(tr("exported %1 files to %2").arg(written.size()).arg(d));
    });
    exportAll->setObjectName("exportAllAction");
    exportAll->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    exportAll->setToolTip(tr("Every figure (PNG, SVG, PDF) and table (CSV, JSON) of the views that show something, "
                             "into one directory"));
    file->addAction(tr("Export run as &JSON..."), this, [this] {
        const RunBundlePtr shown = workbench_->shown();
        if (!shown) return;
        const QString p = QFileDialog::getSaveFileName(this, tr("Run JSON"), lastDialogFile("export", "run.json"),
                                                       tr("JSON (*.json)"));
        if (p.isEmpty()) return;
        rememberDialogPath("export", p);
        // The same document as draftscope-cli run --json.
        const nlohmann::json j = {{"tool", "draftscope"},
                                  {"target", toJson(shown->target)},
                                  {"drafter", toJson(shown->drafter)},
                                  {"runs", nlohmann::json::array({toJson(shown->run)})}};
        try {
            writeFileAtomically(p.toStdString(), j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
            log(tr("wrote %1").arg(p));
        } catch (const std::exception& e) {
            reportError("export", QString::fromStdString(e.what()));
        }
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    auto* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(tr("&Load models"), this, [this] { loadModels(modelPanel_->request()); });
    run->addAction(tr("&Run prompt"), QKeySequence(Qt::CTRL | Qt::Key_R), this, &MainWindow::runAnalysis);
    run->addAction(tr("&Cancel"), QKeySequence(Qt::Key_Escape), controller_, &AnalysisController::cancel);
    viewMenu_ = menuBar()->addMenu(tr("&View"));
    for (auto* dock : findChildren<QDockWidget*>()) viewMenu_->addAction(dock->toggleViewAction());
    auto* tools = menuBar()->addMenu(tr("&Tools"));
    auto* inspectAction = tools->addAction(tr("&Inspect checkpoint..."), this, [this] {
        auto* dialog = new InspectorDialog(this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->setObjectName("inspectorDialog");
        QList<QPair<QString, QString>> loaded;
        if (const ModelRequest& m = models_->loaded(); !m.targetDir.isEmpty()) {
            loaded << qMakePair(tr("target"), m.targetDir)
                   << qMakePair(m.drafterBDir.isEmpty() ? tr("drafter") : tr("drafter A"), m.drafterDir);
            if (!m.drafterBDir.isEmpty()) loaded << qMakePair(tr("drafter B"), m.drafterBDir);
        }
        dialog->setLoadedCheckpoints(loaded);
        dialog->show();
    });
    inspectAction->setObjectName("inspectCheckpointAction");
    addToolActions(tools);
    auto* help = menuBar()->addMenu(tr("&Help"));
    auto* keys = help->addAction(tr("&Keyboard shortcuts"), this, [this] {
        auto* d = new ShortcutsDialog(menuBar(), this);
        d->setAttribute(Qt::WA_DeleteOnClose);
        d->show();
    });
    keys->setObjectName("shortcutsAction");
    keys->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&About draftscope"), this, [this] {
        QMessageBox::about(this, tr("About draftscope"),
                           tr("draftscope %1: see what a speculative-decoding drafter drafts, where the target "
                              "disagrees, and why. Semantics follow the official DFlash loop.")
                               .arg(DRAFTSCOPE_VERSION));
    });
}

void MainWindow::loadModels(const ModelRequest& r) {
    if (QString err; !models_->load(r, &err)) reportError("load", err);
}

void MainWindow::runAnalysis() {
    const auto r = promptPanel_->request();
    if (r.prompt.text.empty()) {
        reportError("analysis", tr("the prompt is empty: type a prompt or pick one from the prompt set"));
        return;
    }
    if (!r.ddtreeBudgetError.isEmpty()) {
        reportError("analysis", r.ddtreeBudgetError);
        return;
    }
    // What runs is what the Models fields say: models other than the loaded (or loading)
    // ones are loaded first; the analysis waits behind the load in the controller's queue.
    if (models_->fieldsDiffer()) {
        const ModelRequest fields = modelPanel_->request();
        if (fields.targetDir.isEmpty() || fields.drafterDir.isEmpty()) {
            reportError("analysis", tr("choose a target and a drafter in the Models panel (or open a results file)"));
            return;
        }
        log(tr("the Models fields differ from the loaded models: loading them before running"));
        loadModels(fields);
        statusBar()->showMessage(tr("Loading the models named in the Models panel, then running the prompt..."));
    }
    requestedBudgets_[controller_->analyse(r)] = r.ddtreeBudgets;
    followsLive_ = true;
}
QList<ExportableView*> MainWindow::exportableViews() const {
    QList<ExportableView*> more;
    if (results_) more << aggregate_ << resultsPanel_;  // a results file is open
    if (trainingRun_ && trainingRun_->hasIndex()) more << trainingRun_;  // a training run is open
    return workbench_->exportableViews(more);
}

QStringList MainWindow::exportAllFigures(const QString& dir, QString* error) {
    QDir().mkpath(dir);
    // Every figure names its prompt and the drafter it shows (A or B when two are compared).
    for (auto* v : exportableViews()) v->setFigureTitle({});
    workbench_->setFigureTitles();
    QStringList all;
    for (auto* v : exportableViews()) {
        QString err;
        all += v->exportAll(dir, &err);
        if (!err.isEmpty()) {
            if (error) *error = err;
            return all;
        }
    }
    return all;
}

QString MainWindow::logText() const { return log_->toPlainText(); }

void MainWindow::log(const QString& line) {
    log_->appendPlainText(QDateTime::currentDateTime().toString("HH:mm:ss  ") + line);
}

void MainWindow::reportError(const QString& operation, const QString& message) {
    log(tr("error (%1): %2").arg(operation, message));
    emit errorReported(operation, message);
    if (operation == "load") modelPanel_->setStatus(tr("Load failed: %1").arg(message));
    statusBar()->showMessage(tr("Error: %1").arg(message.section('\n', 0, 0)), 8000);
    // A DDTree failure (e.g. a tree outgrowing the context) leaves the chain run standing: no modal dialog.
    if (dialogs_ && operation != "ddtree") QMessageBox::critical(this, tr("draftscope: %1 failed").arg(operation), message);
}

void MainWindow::openDirectory(const QString& dir) {
    QFile f(QDir(dir).filePath("config.json"));
    if (!f.open(QIODevice::ReadOnly)) {
        reportError("open", tr("'%1' has no readable config.json, so it is not a model directory").arg(dir));
        return;
    }
    const auto o = QJsonDocument::fromJson(f.readAll()).object();
    const bool isDrafter = o.contains("dflash_config") ||
                           o.value("architectures").toArray().contains(QJsonValue("DFlashDraftModel"));
    if (isDrafter) modelPanel_->setDrafterDir(dir);
    else modelPanel_->setTargetDir(dir);
    log(tr("%1 set to %2").arg(isDrafter ? tr("drafter") : tr("target"), dir));
    const auto r = modelPanel_->request();
    if (!r.targetDir.isEmpty() && !r.drafterDir.isEmpty()) loadModels(r);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
    if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
    for (const auto& url : e->mimeData()->urls()) {
        const QString path = url.toLocalFile();
        if (QFileInfo(path).isDir()) openDirectory(path);
        else if (path.endsWith(".dsresults", Qt::CaseInsensitive)) openResultsFile(path);
        else if (path.endsWith(".jsonl")) {
            try {
                promptPanel_->loadPromptSet(path);
            } catch (const std::exception& ex) {
                reportError("prompt set", QString::fromStdString(ex.what()));
            }
        } else {
            reportError("open", tr("drop a model directory, a .jsonl prompt set or a .dsresults results file, not '%1'").arg(path));
        }
    }
}

void MainWindow::showEvent(QShowEvent* e) {
    QMainWindow::showEvent(e);
    // A geometry saved on a bigger (or another) screen: fit it once the window has its frame
    // (a first start keeps the size it was given).
    if (!e->spontaneous() && !shownOnce_ && restoredGeometry_) {
        shownOnce_ = true;
        QTimer::singleShot(0, this, [this] { clampToScreen(); });
    }
}

void MainWindow::closeEvent(QCloseEvent* e) {
    QSettings s;
    s.setValue("window/geometry", saveGeometry());
    s.setValue("window/state", saveState());
    controller_->cancel();
    QMainWindow::closeEvent(e);
}

}  // namespace draftscope
