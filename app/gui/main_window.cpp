#include "gui/main_window.h"
#include "gui/dialog_dirs.h"

#include "acceptance_plots.h"
#include "acceptance_tree_view.h"
#include "budget_sweep_plot.h"
#include "comparison_summary_view.h"
#include "drafter_comparison.h"
#include "draftscope/attention_layout.h"
#include "draftscope/results_json.h"
#include "draftscope/safetensors.h"
#include "attention_heads_overview.h"
#include "attention_view.h"
#include "block_agreement_view.h"
#include "gui/inspector_dialog.h"
#include "gui/model_panel.h"
#include "gui/prompt_panel.h"
#include "gui/results_panel.h"
#include "results_aggregate_plots.h"
#include "hidden_stats_view.h"
#include "mask_view.h"
#include "output_strip_view.h"
#include "step_selection.h"

#include <QAction>
#include <QGuiApplication>
#include <QScreen>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QLabel>
#include <QSplitter>
#include <QToolBar>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QEventLoop>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>

namespace draftscope {

MainWindow::MainWindow(bool showErrorDialogs, QWidget* parent)
    : QMainWindow(parent), dialogs_(showErrorDialogs), controller_(new AnalysisController(this)),
      selection_(new StepSelection(this)) {
    setObjectName("DraftscopeMainWindow");
    setWindowTitle(tr("draftscope"));
    setAcceptDrops(true);
    setDockNestingEnabled(true);

    modelPanel_ = new ModelPanel(this);
    promptPanel_ = new PromptPanel(this);
    blockView_ = new BlockAgreementView(selection_, this);
    stripView_ = new OutputStripView(selection_, this);
    acceptance_ = new AcceptancePlots(selection_, this);
    maskView_ = new MaskView(this);
    attentionView_ = new AttentionView(this);
    statsView_ = new HiddenStatsView(this);
    treeView_ = new AcceptanceTreeView(this);
    sweep_ = new BudgetSweepPlot(this);
    log_ = new QPlainTextEdit(this);
    log_->setObjectName("log");
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(5000);

    addDock(modelPanel_, tr("Models"), "modelsDock", Qt::LeftDockWidgetArea);
    addDock(promptPanel_, tr("Prompt"), "promptDock", Qt::LeftDockWidgetArea);
    addDock(stripView_, tr("Output"), "outputDock", Qt::BottomDockWidgetArea);
    auto* acc = addDock(acceptance_, tr("Acceptance"), "acceptanceDock", Qt::RightDockWidgetArea, true);
    auto* masks = addDock(maskView_, tr("Masks"), "maskDock", Qt::RightDockWidgetArea, true);
    auto* attn = addDock(attentionView_, tr("Attention"), "attentionDock", Qt::RightDockWidgetArea, true);
    auto* stats = addDock(statsView_, tr("Hidden states"), "statsDock", Qt::RightDockWidgetArea, true);
    auto* tree = addDock(treeView_, tr("DDTree"), "ddtreeDock", Qt::RightDockWidgetArea);
    auto* sweep = addDock(sweep_, tr("Budget sweep"), "ddtreeSweepDock", Qt::RightDockWidgetArea, true);
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
    acc->raise();
    tabifyDockWidget(findChild<QDockWidget*>("outputDock"), logDock);
    findChild<QDockWidget*>("outputDock")->raise();
    createComparisonViews();
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
    connect(controller_, &AnalysisController::busyChanged, promptPanel_, &PromptPanel::setBusy);
    connect(controller_, &AnalysisController::progress, this, [this](quint64 id, qint64 done, qint64 total) {
        if (id == currentRequest_) promptPanel_->setProgress(done, total);
    });
    connect(controller_, &AnalysisController::stageChanged, this, [this](quint64 id, const QString& stage) {
        if (id == currentRequest_) promptPanel_->setStage(stage);
    });
    connect(treeView_, &AcceptanceTreeView::treeStepChanged, this, [this](int budget, int step) {
        const TreeStep* st = treeView_->currentTreeStep();
        if (!last_ || !st) {
            maskView_->clearTreeStep();
            return;
        }
        std::vector<QString> pieces;
        for (auto id : st->tokens) pieces.push_back(last_->pieceOf(id));
        maskView_->setTreeStep(*st, budget, step, pieces);
    });
    connect(controller_, &AnalysisController::modelsLoaded, this,
            [this](const ModelSummary& t, const ModelSummary& d, const ModelRequest& loaded) {
                loadedModels_ = loaded;
                if (sameModels(loaded, pendingModels_)) loadInFlight_ = false;
                modelPanel_->setLoaded(loadInFlight_ ? pendingModels_ : loadedModels_);
                // Layer types in order, run-length encoded: "3 x linear_attention, 1 x full_attention".
                QStringList runs;
                for (std::size_t i = 0; i < t.layerTypes.size();) {
                    std::size_t j = i;
                    while (j < t.layerTypes.size() && t.layerTypes[j] == t.layerTypes[i]) ++j;
                    runs << QStringLiteral("%1 x %2").arg(j - i).arg(QString::fromStdString(t.layerTypes[i]));
                    i = j;
                }
                QString text = tr("Target: %1, %2 layers (%5), hidden %3, vocab %4\nDrafter: %6")
                                   .arg(QString::fromStdString(t.architecture)).arg(t.numLayers).arg(t.hiddenSize)
                                   .arg(t.vocabSize).arg(runs.join(", "), drafterSummaryLine(d));
                // Drafter B's line (comparisonDrafterLoaded() came right before this signal).
                if (!loaded.drafterBDir.isEmpty() && !drafterB_.directory.empty())
                    text += tr("\nDrafter B (compare): %1").arg(drafterSummaryLine(drafterB_));
                drafterB_ = ModelSummary{};
                modelPanel_->setStatus(text);
                QTimer::singleShot(0, this, [this] { fitModelsDock(); });  // once the label has its new size
                modelPanel_->rememberRecent(loaded);  // only directories that loaded
                log(tr("loaded target %1 and drafter %2").arg(QString::fromStdString(t.directory),
                                                              QString::fromStdString(d.directory)));
                for (const auto& w : d.warnings) log(tr("warning: drafter: %1").arg(QString::fromStdString(w)));
                for (const auto* m : {&t, &d}) {
                    const QString who = m == &t ? tr("target") : tr("drafter");
                    if (!m->unexpectedTensors.empty())
                        log(tr("warning: %1 checkpoint has %2 unexpected tensor(s), e.g. %3")
                                .arg(who).arg(m->unexpectedTensors.size())
                                .arg(QString::fromStdString(m->unexpectedTensors.front())));
                    if (!m->ignoredTensors.empty())
                        log(tr("%1 checkpoint: %2 tensor(s) outside the language model ignored (e.g. %3)")
                                .arg(who).arg(m->ignoredTensors.size())
                                .arg(QString::fromStdString(m->ignoredTensors.front())));
                }
                clearResult();
                maskView_->setTrainingExample(64, d.blockSize, {8, 29});
                maskView_->setDrafterLayout(d.layout);
            });
    connect(controller_, &AnalysisController::analysisStarted, this, [this](quint64 id) {
        log(tr("analysis %1 started").arg(id));
        if (id != currentRequest_) return;
        // Nothing of the previous (live or recorded) run stays on screen next to the new one.
        clearResult();
        promptPanel_->showRecorded({}, {}, {}, {});
        if (results_) {  // a live run opens on its own views, not on the file's
            findChild<QDockWidget*>("acceptanceDock")->raise();
            findChild<QDockWidget*>("outputDock")->raise();
        }
        if (results_)
            resultsPanel_->setLiveRunShown(tr("The views show live analysis %1, not a prompt of this file: select a "
                                              "row to show that prompt again.").arg(id));
        statusBar()->showMessage(tr("Analysis %1 running...").arg(id));
        updateResultsTitle();
    });
    // Each run (chain, every DDTree budget) is shown as soon as it is done.
    connect(controller_, &AnalysisController::partialResult, this, [this](const RunBundlePtr& b) { showResult(b, false); });
    connect(controller_, &AnalysisController::analysisFinished, this, [this](const RunBundlePtr& b) {
        if (b->requestId == currentRequest_) promptPanel_->setProgressText(tr("done: %1").arg(runsLabel(*b)));
        showResult(b, true);
    });
    connect(controller_, &AnalysisController::attentionReady, this, [this](quint64 id, const DrafterAttention& a) {
        if (!last_ || id != last_->requestId) return;  // belongs to an older run
        // A and B share the request id: keep only the answer for the drafter and step shown now.
        const RunBundlePtr shown = detailBundle();
        if (!shown || a.step != attentionStep_ || a.drafter != shown->run.settings.drafter) return;
        // Keys: context positions 0..start-1, the anchor at start, then MASK rows.
        const auto start = a.queryPositions.empty() ? 0 : a.queryPositions.front();
        std::vector<QString> pieces = piecesUpTo(start + 1);
        while (static_cast<std::int64_t>(pieces.size()) < a.numKeys) pieces.push_back(QStringLiteral("[MASK]"));
        attentionView_->setAttention(a, pieces);
    });
    connect(controller_, &AnalysisController::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == "load") {  // the engine holds no models after a failed load
            loadInFlight_ = false;
            loadedModels_ = ModelRequest{};
            modelPanel_->setLoaded(loadedModels_);
        }
        reportError(operation, message);
    });
    connect(controller_, &AnalysisController::cancelled, this, [this](quint64 id) {
        log(tr("analysis %1 cancelled").arg(id));
        if (id != currentRequest_) return;  // superseded by a newer Run
        // The runs that finished before the cancel stay on screen.
        const bool kept = last_ && last_->requestId == id;
        const QString what = kept ? tr("cancelled (kept: %1)").arg(runsLabel(*last_)) : tr("cancelled (nothing finished)");
        promptPanel_->setProgressText(what);
        if (kept) {  // the kept runs are final now: their attention can be computed
            lastComplete_ = true;
            attentionStep_ = -1;
            onSelection(selection_->step(), selection_->position());
        }
        statusBar()->showMessage(kept ? tr("Analysis %1 cancelled; showing the runs that finished: %2")
                                            .arg(id).arg(runsLabel(*last_))
                                      : tr("Analysis %1 cancelled before its chain run finished").arg(id));
    });
    connect(selection_, &StepSelection::changed, this, &MainWindow::onSelection);
    connect(statsView_, &HiddenStatsView::positionClicked, this, [this](int position) {
        if (!last_) return;
        // A prompt position belongs to no verify step: show it in the stats view only.
        statsView_->highlightPosition(position);
    });

    setupResults();  // after the handlers above (its modelsLoaded handler must run after theirs)
    acc->raise();
    createLayoutActions();
    defaultLayout_ = saveState();

    QSettings s;
    restoreGeometry(s.value("window/geometry").toByteArray());
    if (!restoreState(s.value("window/state").toByteArray()))
        QTimer::singleShot(0, this, [this] { applyDefaultDockSizes(); });  // first start
    statusBar()->showMessage(tr("Choose a target and a drafter, or start with draftscope --demo"));
}

MainWindow::~MainWindow() = default;

void MainWindow::applyDefaultDockSizes() {
    // The grid gets the middle: the left panels a fixed width, the right views about a third.
    resizeDocks({findChild<QDockWidget*>("modelsDock"), findChild<QDockWidget*>("acceptanceDock")},
                {290, std::max(440, width() * 7 / 20)}, Qt::Horizontal);
    resizeDocks({findChild<QDockWidget*>("outputDock")}, {std::max(150, height() / 6)}, Qt::Vertical);
    resizeDocks({findChild<QDockWidget*>("modelsDock")}, {std::min(300, height() / 3)}, Qt::Vertical);
}

void MainWindow::fitModelsDock() {
    auto* dock = findChild<QDockWidget*>("modelsDock");
    if (!dock || !dock->isVisible() || dock->isFloating() || !dock->widget()) return;
    QWidget* panel = dock->widget();
    const int need = panel->hasHeightForWidth() ? panel->heightForWidth(panel->width()) : panel->sizeHint().height();
    if (need > panel->height()) resizeDocks({dock}, {dock->height() - panel->height() + need}, Qt::Vertical);
}

void MainWindow::resetLayout() {
    maximised_.clear();
    restoreState(defaultLayout_);
    // The docks that only apply to a results file or a comparison follow what is shown.
    findChild<QDockWidget*>("resultsAggregateDock")->setVisible(results_ != nullptr);
    findChild<QDockWidget*>("resultsDock")->setVisible(results_ != nullptr);
    findChild<QDockWidget*>("comparisonDock")->setVisible(isComparing());
    findChild<QDockWidget*>("acceptanceDock")->raise();
    findChild<QDockWidget*>("outputDock")->raise();
    applyDefaultDockSizes();
}

QWidget* MainWindow::currentView() const {
    for (QWidget* w = QApplication::focusWidget(); w; w = w->parentWidget()) {
        if (auto* dock = qobject_cast<QDockWidget*>(w)) return dock;
        if (w == centralWidget()) return w;
    }
    return lastView_ ? lastView_.data() : centralWidget();
}

void MainWindow::toggleMaximisedView(QWidget* view) {
    if (!maximised_.isEmpty()) {  // back to the layout before
        restoreState(maximised_);
        maximised_.clear();
        return;
    }
    if (!view) view = currentView();
    maximised_ = saveState();
    auto* keep = qobject_cast<QDockWidget*>(view);
    // The view keeps the window to itself: every other dock hides (a dock: the grid too, by
    // floating the dock over the whole window).
    for (auto* dock : findChildren<QDockWidget*>())
        if (dock != keep && dock->isVisible()) dock->hide();
    if (keep) {
        keep->show();
        keep->setFloating(true);
        keep->setGeometry(QRect(mapToGlobal(QPoint(0, 0)), size()));
        keep->raise();
    }
}

bool MainWindow::isViewMaximised() const { return !maximised_.isEmpty(); }

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
    // Remember the last view the user worked in (focus), for "Maximise current view".
    connect(qApp, &QApplication::focusChanged, this, [this](QWidget*, QWidget* now) {
        for (QWidget* w = now; w; w = w->parentWidget()) {
            if (qobject_cast<QDockWidget*>(w) || w == centralWidget()) {
                lastView_ = w;
                return;
            }
        }
    });
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
    file->addAction(tr("&Export all figures and tables..."), this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("Export into directory"), lastDialogDir("export"));
        if (d.isEmpty()) return;
        rememberDialogPath("export", d);
        QString err;
        const auto written = exportAllFigures(d, &err);
        if (!err.isEmpty()) reportError("export", err);
        else log(tr("exported %1 files to %2").arg(written.size()).arg(d));
    });
    file->addAction(tr("Export run as &JSON..."), this, [this] {
        if (!last_) return;
        const QString p = QFileDialog::getSaveFileName(this, tr("Run JSON"), lastDialogFile("export", "run.json"),
                                                       tr("JSON (*.json)"));
        if (p.isEmpty()) return;
        rememberDialogPath("export", p);
        // The same document as draftscope-cli run --json.
        const nlohmann::json j = {{"tool", "draftscope"},
                                  {"target", toJson(last_->target)},
                                  {"drafter", toJson(last_->drafter)},
                                  {"runs", nlohmann::json::array({toJson(last_->run)})}};
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
        if (!loadedModels_.targetDir.isEmpty()) {
            loaded << qMakePair(tr("target"), loadedModels_.targetDir)
                   << qMakePair(loadedModels_.drafterBDir.isEmpty() ? tr("drafter") : tr("drafter A"), loadedModels_.drafterDir);
            if (!loadedModels_.drafterBDir.isEmpty()) loaded << qMakePair(tr("drafter B"), loadedModels_.drafterBDir);
        }
        dialog->setLoadedCheckpoints(loaded);
        dialog->show();
    });
    inspectAction->setObjectName("inspectCheckpointAction");
    auto* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About draftscope"), this, [this] {
        QMessageBox::about(this, tr("About draftscope"),
                           tr("draftscope 0.1.0: see what a speculative-decoding drafter drafts, where the target "
                              "disagrees, and why. Semantics follow the official DFlash loop."));
    });
}

void MainWindow::loadModels(const ModelRequest& r) {
    if (r.targetDir.isEmpty() || r.drafterDir.isEmpty()) {
        reportError("load", tr("choose both a target directory and a drafter directory"));
        return;
    }
    modelPanel_->setTargetDir(r.targetDir);
    modelPanel_->setDrafterDir(r.drafterDir);
    modelPanel_->setDrafterBDir(r.drafterBDir);
    pendingModels_ = r;
    loadInFlight_ = true;
    modelPanel_->setLoaded(r);  // the fields now name what is being loaded
    modelPanel_->setStatus(tr("Loading..."));
    log(tr("loading target %1, drafter %2 (%3, %4)").arg(r.targetDir, r.drafterDir, r.device, r.dtype));
    if (!r.drafterBDir.isEmpty()) log(tr("loading drafter B %1 to compare with").arg(r.drafterBDir));
    controller_->loadModels(r);
}

void MainWindow::runAnalysis() {
    const auto r = promptPanel_->request();
    if (r.prompt.text.empty()) {
        reportError("analysis", tr("the prompt is empty: type a prompt or pick one from the prompt set"));
        return;
    }
    if (const QString err = promptPanel_->ddtreeBudgetError(); !err.isEmpty()) {
        reportError("analysis", err);
        return;
    }
    if (!r.ddtreeBudgets.empty() && r.settings.temperature > 0) {
        reportError("analysis", tr("DDTree runs are greedy: set the temperature to 0, or clear the DDTree budgets"));
        return;
    }
    // What runs is what the Models fields say: models other than the loaded (or loading)
    // ones are loaded first; the analysis waits behind the load in the controller's queue.
    const ModelRequest fields = modelPanel_->request();
    if (!sameModels(fields, loadInFlight_ ? pendingModels_ : loadedModels_)) {
        if (fields.targetDir.isEmpty() || fields.drafterDir.isEmpty()) {
            reportError("analysis", tr("choose a target and a drafter in the Models panel (or open a results file)"));
            return;
        }
        log(tr("the Models fields differ from the loaded models: loading them before running"));
        loadModels(fields);
        statusBar()->showMessage(tr("Loading the models named in the Models panel, then running the prompt..."));
    }
    currentRequest_ = controller_->analyse(r);
}

void MainWindow::clearResult() {
    last_.reset();
    lastComplete_ = true;
    blockView_->setCaption(QString());
    attentionStep_ = -1;
    selection_->clear();
    blockView_->model()->clear();
    stripView_->clear();
    acceptance_->clear();
    maskView_->clearInferenceContext();
    attentionView_->clear();
    statsView_->clear();
    treeView_->clear();
    sweep_->clear();
    maskView_->clearTreeStep();
    clearComparison();
}

QString MainWindow::runsLabel(const RunBundle& b) {
    auto one = [](const RunBundle& x) {
        QStringList runs{tr("chain")};
        for (const auto& t : x.treeRuns) runs << tr("DDTree %1").arg(t.budget);
        return runs.join(", ");
    };
    return b.comparison ? tr("A: %1; B: %2").arg(one(b), one(*b.comparison)) : one(b);
}

void MainWindow::showResult(const RunBundlePtr& b, bool complete) {
    if (b->requestId != currentRequest_) return;  // an older analysis finished after a newer request
    // A later part of the run on screen keeps the selected step and DDTree budget.
    const bool sameRun = last_ && last_->requestId == b->requestId;
    const int keepStep = sameRun ? selection_->step() : -1, keepPosition = selection_->position();
    const int keepBudget = sameRun ? treeView_->currentBudget() : -1;
    last_ = b;
    lastComplete_ = complete;
    attentionStep_ = -1;
    const auto& pieces = b->pieces;
    blockView_->model()->setRun(b->run, [b](std::int64_t id) { return b->pieceOf(id); });
    blockView_->setCaption(tr("%1: %2, tau %3, %4 steps%5")
                               .arg(shownRunLabel(*b),
                                    QFileInfo(QString::fromStdString(b->drafter.directory)).fileName())
                               .arg(b->run.tau, 0, 'f', 3).arg(b->run.steps.size())
                               .arg(complete ? QString() : tr(" (DDTree runs still running)")));
    stripView_->setRun(b->run, pieces);
    acceptance_->setRun(b->run);
    statsView_->setStats(b->hiddenStats, piecesUpTo(static_cast<std::int64_t>(b->hiddenStats.ids.size())));
    if (complete)
        log(tr("analysis %1: %2 prompt tokens, %3 generated, %4 steps, tau %5 (%6 ms)")
            .arg(requestLabel(b->requestId)).arg(b->run.promptIds.size()).arg(b->run.outputIds.size() - b->run.promptIds.size())
            .arg(b->run.steps.size()).arg(b->run.tau, 0, 'f', 3).arg(b->run.timing.totalMs, 0, 'f', 0));
    QString trees;
    for (const auto& t : b->treeRuns) {
        if (complete)
            log(tr("analysis %1: DDTree budget %2: %3 steps, tau %4 (%5 ms)")
                .arg(requestLabel(b->requestId)).arg(t.budget).arg(t.steps.size()).arg(t.tau, 0, 'f', 3).arg(t.timing.totalMs, 0, 'f', 0));
        trees += tr(", DDTree %1: %2").arg(t.budget).arg(t.tau, 0, 'f', 3);
    }
    treeView_->setRuns(b->treeRuns, [b](std::int64_t id) { return b->pieceOf(id); });
    sweep_->setRuns(b->run, b->treeRuns);
    statusBar()->showMessage(tr("tau %1 over %2 verify steps%3").arg(b->run.tau, 0, 'f', 3).arg(b->run.steps.size()).arg(trees));
    showComparison(b, complete);
    if (!complete)
        statusBar()->showMessage(tr("Analysis %1 running; finished so far: %2 (chain tau %3)")
                                     .arg(requestLabel(b->requestId), runsLabel(*b)).arg(b->run.tau, 0, 'f', 3));
    if (keepBudget > 0) treeView_->setCurrentBudget(keepBudget);
    selection_->clear();
    if (keepStep >= 0 && keepStep < static_cast<int>(b->run.steps.size())) selection_->select(keepStep, keepPosition);
    else if (!b->run.steps.empty()) selection_->select(0, 1);
}

std::vector<QString> MainWindow::piecesUpTo(std::int64_t length) const {
    std::vector<QString> out;
    if (!last_) return out;
    for (std::int64_t i = 0; i < length && i < static_cast<std::int64_t>(last_->pieces.size()); ++i)
        out.push_back(last_->pieces[static_cast<std::size_t>(i)]);
    return out;
}

void MainWindow::onSelection(int step, int position) {
    Q_UNUSED(position);
    if (!last_ || step < 0 || step >= static_cast<int>(last_->run.steps.size())) return;
    // The detail views show drafter A's step, or drafter B's step covering the same position.
    const RunBundlePtr d = detailBundle();
    step = detailStep(step);
    if (step < 0) return;
    const auto& st = d->run.steps[static_cast<std::size_t>(step)];
    maskView_->setInferenceContext(st.start, d->run.blockSize, piecesUpTo(st.start + d->run.blockSize));
    treeView_->showPosition(st.start);  // the tree step that verified this chain step's anchor
    if (!lastComplete_) {  // the worker is busy with the rest of the analysis: ask once it is done
        attentionView_->setPlaceholder(tr("The drafter's attention is computed when the analysis has finished."));
    } else if (step != attentionStep_) {  // the attention depends on the step only, not the position
        attentionStep_ = step;
        if (const QString why = attentionUnavailableReason(); !why.isEmpty()) attentionView_->setPlaceholder(why);
        else controller_->requestAttention(d, step);
    }
}

QList<ExportableView*> MainWindow::exportableViews() const {
    QList<ExportableView*> views = {blockView_, stripView_, acceptance_, maskView_, attentionView_,
                                    attentionView_->headsOverview(), statsView_, treeView_, sweep_};
    if (results_) views << aggregate_ << resultsPanel_;  // a results file is open
    if (isComparing()) views << blockViewB_ << summaryView_;  // block_agreement_b, ab_summary
    return views;
}

QStringList MainWindow::exportAllFigures(const QString& dir, QString* error) {
    QDir().mkpath(dir);
    // Every figure names its prompt and the drafter it shows (A or B when two are compared).
    for (auto* v : exportableViews()) v->setFigureTitle({});
    if (last_) {
        const bool ab = isComparing();
        const QString a = figureTitleOf(*last_, ab ? "A" : "");
        const QString both = ab ? a + ", B: " + drafterNameOf(*last_->comparison) : a;  // views that overlay A and B
        for (ExportableView* v : std::initializer_list<ExportableView*>{stripView_, acceptance_, sweep_}) v->setFigureTitle(both);
        blockView_->setFigureTitle(a);
        const QString d = figureTitleOf(*detailBundle(), ab ? (detailDrafter() == 1 ? "B" : "A") : "");
        for (ExportableView* v : std::initializer_list<ExportableView*>{maskView_, attentionView_, attentionView_->headsOverview(),
                                                                        statsView_, treeView_})
            v->setFigureTitle(d);
        if (ab) blockViewB_->setFigureTitle(figureTitleOf(*last_->comparison, "B"));
    }
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

bool MainWindow::loadAndRun(const ModelRequest& models, QString* error) {
    QEventLoop loop;
    QString failure;
    bool loaded = false, analysed = false, attention = false;
    auto c1 = connect(controller_, &AnalysisController::modelsLoaded, &loop, [&] { loaded = true; loop.quit(); });
    auto c2 = connect(controller_, &AnalysisController::failed, &loop, [&](const QString& op, const QString& m) {
        if (op == "hidden states" || op == "ddtree") return;  // logged; the run itself stands
        failure = op + ": " + m;
        loop.quit();
    });
    auto c3 = connect(controller_, &AnalysisController::analysisFinished, &loop, [&] { analysed = true; loop.quit(); });
    auto c4 = connect(controller_, &AnalysisController::attentionReady, &loop, [&] { attention = true; loop.quit(); });
    auto c5 = connect(controller_, &AnalysisController::cancelled, &loop, [&] {
        failure = tr("the analysis was cancelled");
        loop.quit();
    });
    auto wait = [&](bool& flag) {
        while (!flag && failure.isEmpty()) loop.exec();
        return failure.isEmpty();
    };
    loadModels(models);
    bool ok = wait(loaded);
    if (ok) {
        runAnalysis();
        ok = wait(analysed) && wait(attention);  // showResult selects step 0, which requests attention
    }
    for (auto c : {c1, c2, c3, c4, c5}) disconnect(c);
    if (!ok && error) *error = failure;
    return ok;
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
    // A DDTree failure (e.g. a hybrid target) leaves the chain run standing: no modal dialog.
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

void MainWindow::closeEvent(QCloseEvent* e) {
    QSettings s;
    s.setValue("window/geometry", saveGeometry());
    s.setValue("window/state", saveState());
    controller_->cancel();
    QMainWindow::closeEvent(e);
}

// ---- Drafter A vs B ---------------------------------------------------------------------

void MainWindow::createComparisonViews() {
    // Centre: A's grid, and B's grid to its right while comparing.
    selectionB_ = new StepSelection(this);
    blockViewB_ = new BlockAgreementView(selectionB_, this);
    blockViewB_->setObjectName("BlockAgreementViewB");
    blockViewB_->setExportName("block_agreement_b");
    blockViewB_->hide();
    // B's grid under A's: each keeps the full width, so all block positions stay readable.
    grids_ = new QSplitter(Qt::Vertical, this);
    grids_->setObjectName("gridSplitter");
    grids_->addWidget(blockView_);
    grids_->addWidget(blockViewB_);
    setCentralWidget(grids_);
    // The two grids select the step that covers the same absolute position.
    auto link = [this](StepSelection* from, StepSelection* to, bool fromA) {
        connect(from, &StepSelection::changed, this, [this, to, fromA](int step, int position) {
            if (linkingSelections_ || !isComparing()) return;
            const RunResult& src = fromA ? last_->run : last_->comparison->run;
            const RunResult& dst = fromA ? last_->comparison->run : last_->run;
            if (step < 0 || step >= static_cast<int>(src.steps.size())) return;
            const auto pos = src.steps[static_cast<std::size_t>(step)].start + std::max(position, 0);
            const int other = chainStepCovering(dst, pos);
            if (other < 0) return;
            linkingSelections_ = true;
            to->select(other, static_cast<int>(std::clamp<std::int64_t>(pos - dst.steps[static_cast<std::size_t>(other)].start,
                                                                        0, dst.blockSize - 1)));
            linkingSelections_ = false;
        });
    };
    link(selection_, selectionB_, true);
    link(selectionB_, selection_, false);

    summaryView_ = new ComparisonSummaryView(this);
    auto* summaryDock = addDock(summaryView_, tr("A vs B"), "comparisonDock", Qt::RightDockWidgetArea);
    tabifyDockWidget(findChild<QDockWidget*>("ddtreeSweepDock"), summaryDock);
    summaryDock->hide();
    findChild<QDockWidget*>("acceptanceDock")->raise();

    compareBar_ = addToolBar(tr("Compare"));
    compareBar_->setObjectName("compareToolBar");
    compareBar_->addWidget(new QLabel(tr(" Detail views (DDTree, masks, attention, hidden states) show: "), compareBar_));
    detailCombo_ = new QComboBox(compareBar_);
    detailCombo_->setObjectName("detailDrafter");
    detailCombo_->addItems({tr("drafter A"), tr("drafter B")});
    detailCombo_->setToolTip(tr("Which drafter's DDTree runs, inference mask, attention and hidden-state statistics the "
                                "detail views show; the grid, output, acceptance plots and budget sweep show both"));
    compareBar_->addWidget(detailCombo_);
    compareBar_->hide();
    connect(detailCombo_, &QComboBox::currentIndexChanged, this, [this] { showDetailViews(); });

    // Drafter B's configuration goes under A's in the Models panel (the modelsLoaded handler).
    connect(controller_, &AnalysisController::comparisonDrafterLoaded, this, [this](const ModelSummary& d) {
        drafterB_ = d;
        log(tr("loaded drafter B %1").arg(QString::fromStdString(d.directory)));
        for (const auto& w : d.warnings) log(tr("warning: drafter B: %1").arg(QString::fromStdString(w)));
    });
}

QString MainWindow::drafterSummaryLine(const ModelSummary& d) {
    QString ids;
    for (auto id : d.targetLayerIds) ids += (ids.isEmpty() ? "" : ", ") + QString::number(id);
    return tr("%1 layers (%2), block %3, tapped layers [%4]%5, mask token %6")
        .arg(d.numLayers).arg(QString::fromStdString(describeLayout(d.layout))).arg(d.blockSize).arg(ids)
        .arg(d.targetLayerIdsDerived ? tr(" (derived)") : QString()).arg(d.maskTokenId);
}

bool MainWindow::isComparing() const { return last_ && last_->comparison; }

int MainWindow::detailDrafter() const { return detailCombo_ ? detailCombo_->currentIndex() : 0; }

void MainWindow::setDetailDrafter(int which) { detailCombo_->setCurrentIndex(which == 1 ? 1 : 0); }

RunBundlePtr MainWindow::detailBundle() const {
    return isComparing() && detailDrafter() == 1 ? last_->comparison : last_;
}

int MainWindow::detailStep(int stepA) const {
    const RunBundlePtr d = detailBundle();
    if (!d || d == last_) return stepA;
    if (selectionB_->step() >= 0 && selectionB_->step() < static_cast<int>(d->run.steps.size())) return selectionB_->step();
    if (stepA < 0 || stepA >= static_cast<int>(last_->run.steps.size())) return -1;
    return chainStepCovering(d->run, last_->run.steps[static_cast<std::size_t>(stepA)].start);
}

void MainWindow::showComparison(const RunBundlePtr& b, bool complete) {
    const RunBundlePtr c = b ? b->comparison : nullptr;
    if (!c) {
        clearComparison();
        return;
    }
    const auto [nameA, nameB] = drafterNames(QString::fromStdString(b->drafter.directory),
                                             QString::fromStdString(c->drafter.directory));
    auto pieceOf = [b](std::int64_t id) { return b->pieceOf(id); };
    selection_->clear();  // showResult() selects the first step once both runs are shown
    blockView_->setCaption(tr("%1 - Drafter A: %2   tau %3, %4 steps").arg(shownRunLabel(*b), nameA).arg(b->run.tau, 0, 'f', 3).arg(b->run.steps.size()));
    blockView_->model()->setComparison(c->run, tr("B (%1)").arg(nameB));
    blockViewB_->model()->setRun(c->run, pieceOf);
    blockViewB_->model()->setComparison(b->run, tr("A (%1)").arg(nameA));
    blockViewB_->setCaption(tr("Drafter B: %1   tau %2, %3 steps").arg(nameB).arg(c->run.tau, 0, 'f', 3).arg(c->run.steps.size()));
    blockViewB_->show();
    stripView_->setComparison(c->run, nameA, nameB);
    acceptance_->setComparison(c->run, nameA, nameB);
    sweep_->setComparison(c->run, c->treeRuns, nameA, nameB);
    summaryView_->setComparison({nameA, b->drafter, b->run, b->treeRuns}, {nameB, c->drafter, c->run, c->treeRuns});
    findChild<QDockWidget*>("comparisonDock")->show();
    compareBar_->show();
    selectionB_->clear();
    if (complete)
        log(tr("analysis %1: drafter B %2: %3 steps, tau %4 (%5 ms); outputs %6")
            .arg(b->requestId).arg(nameB).arg(c->run.steps.size()).arg(c->run.tau, 0, 'f', 3)
            .arg(c->run.timing.totalMs, 0, 'f', 0)
            .arg(c->run.outputIds == b->run.outputIds ? tr("identical") : tr("differ (sampling)")));
    for (const auto& t : c->treeRuns)
        if (complete)
            log(tr("analysis %1: drafter B: DDTree budget %2: %3 steps, tau %4").arg(b->requestId).arg(t.budget)
                .arg(t.steps.size()).arg(t.tau, 0, 'f', 3));
    statusBar()->showMessage(tr("A (%1): tau %2 over %3 steps   |   B (%4): tau %5 over %6 steps")
                                 .arg(nameA).arg(b->run.tau, 0, 'f', 3).arg(b->run.steps.size())
                                 .arg(nameB).arg(c->run.tau, 0, 'f', 3).arg(c->run.steps.size()));
    showDetailViews();
}

void MainWindow::clearComparison() {
    if (!blockViewB_) return;
    blockViewB_->model()->clear();
    blockViewB_->setCaption(QString());
    blockViewB_->hide();
    selectionB_->clear();
    summaryView_->clear();
    findChild<QDockWidget*>("comparisonDock")->hide();
    compareBar_->hide();
    statsView_->setCaption(QString());
    const QSignalBlocker block(detailCombo_);
    detailCombo_->setCurrentIndex(0);
}

void MainWindow::showDetailViews() {
    if (!last_) return;
    const RunBundlePtr d = detailBundle();
    const QString who = isComparing() ? (d == last_ ? tr("drafter A") : tr("drafter B")) : QString();
    treeView_->setRuns(d->treeRuns, [d](std::int64_t id) { return d->pieceOf(id); });
    statsView_->setStats(d->hiddenStats, piecesUpTo(static_cast<std::int64_t>(d->hiddenStats.ids.size())));
    if (isComparing()) {
        QString ids[2];
        for (int i = 0; i < 2; ++i)
            for (auto id : (i == 0 ? last_ : last_->comparison)->drafter.targetLayerIds)
                ids[i] += (ids[i].isEmpty() ? "" : ", ") + QString::number(id);
        statsView_->setCaption(
            tr("Showing %1's series. The tapped layers are the target's own hidden states: identical for A and B "
               "wherever both tap the layer (A taps [%2], B taps [%3]); only the \"drafter context\" series "
               "(fc + hidden_norm) belongs to the drafter. Switch drafters in the Compare toolbar.")
                .arg(who, ids[0], ids[1]));
    }
    maskView_->setTrainingExample(64, d->drafter.blockSize, {8, 29});
    maskView_->setDrafterLayout(d->drafter.layout);
    attentionView_->clear();
    attentionStep_ = -1;
    onSelection(selection_->step(), selection_->position());
}

}  // namespace draftscope
