#pragma once
// The draftscope window, a shell: model and prompt panels, the Workbench's linked views as
// dock widgets, a log, menus, drag and drop of model directories, remembered layout. It
// wires the panels and the AnalysisController to the Workbench, which shows the runs.

#include "gui/analysis_controller.h"
#include "gui/recorded_results.h"
#include "gui/run_state.h"
#include "gui/workbench.h"

#include <QMainWindow>
#include <QSet>

#include <functional>
#include <map>
#include <vector>

class QPlainTextEdit;
class QDockWidget;
class QToolBar;

namespace draftscope {

class AcceptancePlots;
class AcceptanceTreeView;
class BudgetSweepPlot;
class ComparisonSummaryView;
class AttentionView;
class BlockAgreementView;
class ExportableView;
class HiddenStatsView;
class MaskView;
class ModelPanel;
class ModelSession;
class DockLayout;
class DiagnosePanel;
class TargetLoadsPanel;
class TrainingRunView;
class TrainingRunWatcher;
enum class FindingView;
struct FindingTarget;
class OutputStripView;
class PromptPanel;
class ResultsAggregatePlots;
class ResultsPanel;
class StepSelection;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    /// `showErrorDialogs` false (headless export, tests) logs errors without modal dialogs.
    explicit MainWindow(bool showErrorDialogs = true, QWidget* parent = nullptr);
    ~MainWindow() override;

    AnalysisController* controller() const { return controller_; }
    ModelPanel* modelPanel() const { return modelPanel_; }
    PromptPanel* promptPanel() const { return promptPanel_; }
    /// The views, their step selections and the run they show.
    Workbench* workbench() const { return workbench_; }
    // The Workbench's views (forwarded for scripts and tests):
    StepSelection* selection() const { return workbench_->selection(); }
    BlockAgreementView* blockAgreementView() const { return workbench_->blockView(); }
    OutputStripView* outputStripView() const { return workbench_->stripView(); }
    AcceptancePlots* acceptancePlots() const { return workbench_->acceptance(); }
    MaskView* maskView() const { return workbench_->maskView(); }
    AttentionView* attentionView() const { return workbench_->attentionView(); }
    HiddenStatsView* hiddenStatsView() const { return workbench_->statsView(); }
    AcceptanceTreeView* treeView() const { return workbench_->treeView(); }
    BudgetSweepPlot* budgetSweepPlot() const { return workbench_->sweep(); }
    // Drafter A vs B (shown while the last result has a comparison):
    /// Drafter B's block agreement grid (under A's), with its own step selection.
    BlockAgreementView* blockAgreementViewB() const { return workbench_->blockViewB(); }
    StepSelection* selectionB() const { return workbench_->selectionB(); }
    ComparisonSummaryView* comparisonSummary() const { return workbench_->summaryView(); }
    /// Which drafter the detail views (DDTree, masks, attention, hidden states) show: 0 = A, 1 = B.
    int detailDrafter() const { return workbench_->detailDrafter(); }
    void setDetailDrafter(int which) { workbench_->setDetailDrafter(which); }
    /// Whether the last result compares two drafters.
    bool isComparing() const { return workbench_->isComparing(); }
    /// The Workbench's exportable views, then the results file's (while one is open).
    QList<ExportableView*> exportableViews() const;
    const RunBundlePtr& lastResult() const { return workbench_->shown(); }
    QString logText() const;
    /// What the views show and how far it got (captions, progress line, status, Log follow it).
    const RunState& runState() const { return runState_; }

    /// View > Reset layout: every dock back where it was at first start, default sizes.
    void resetLayout();
    /// View > Maximise current view: `view` (a dock, or the central grid; null = the one
    /// with the focus, else the last one used) fills the window; called again, restores.
    /// A double-click on a docked view's title bar does the same for that view (Qt's
    /// default, floating the dock, stays on the title bar's float button).
    void toggleMaximisedView(QWidget* view = nullptr);
    bool isViewMaximised() const;

    /// Writes every view's figures (and tables) to `dir`; returns the paths, sets *error.
    QStringList exportAllFigures(const QString& dir, QString* error);

    // Tools (main_window_tools.cpp):
    /// The Diagnose dock (Tools > Diagnose drafter(s)...) and the Target loads dock (Tools >
    /// Compare target loads...).
    DiagnosePanel* diagnosePanel() const { return diagnosePanel_; }
    TargetLoadsPanel* targetLoadsPanel() const { return targetLoadsPanel_; }
    /// Shows and raises the Diagnose dock (the menu action; enabled while models are loaded).
    void openDiagnose();
    void openTargetLoads();
    /// Brings up the view that shows a finding: the Masks tab, the Hidden states tab or the
    /// block grid (B's when `drafter` is 1 and the run on screen compares; the detail views
    /// then follow B too).
    void showFindingView(const draftscope::FindingTarget& target, int drafter);

    // Results files (draftscope-cli eval --out): recorded runs shown without models.
    ResultsPanel* resultsPanel() const { return resultsPanel_; }
    ResultsAggregatePlots* resultsAggregatePlots() const { return aggregate_; }
    /// The open results file (null if none) and its path.
    const ResultsFilePtr& results() const { return results_; }
    QString resultsPath() const { return resultsPath_; }
    /// Reads `path` on the calling thread and shows it; for --export-figures and tests.
    /// Returns false and sets *error (the reader's message, also reported) on failure.
    bool openResultsFileNow(const QString& path, QString* error);
    /// File > Open Recent Results: the results files opened last, newest first (absolute
    /// paths; at most kRecentResults).
    QStringList recentResultsFiles() const;
    static constexpr int kRecentResults = 8;
    QMenu* recentResultsMenu() const { return recentResultsMenu_; }
    /// Shows prompt `prompt` (index into results()->prompts) of the open file with drafter
    /// `drafter` in every view, as a finished analysis.
    void showRecordedPrompt(int prompt, int drafter);

    // Training runs (draftscope-cli track; main_window_track.cpp).
    TrainingRunView* trainingRunView() const { return trainingRun_; }
    /// Shows the run index of `dir` (a track output directory or a run directory holding
    /// draftscope-track/) in the Training run dock and follows it. False and *error if none.
    bool openTrainingRun(const QString& dir, QString* error = nullptr);
    /// Loads checkpoint `drafterPath` as drafter A (or B, when A is set and `asB`), with the
    /// run's target and its prompt set in the Prompt panel.
    void openTrackedCheckpoint(const QString& drafterPath, bool asB, const QString& targetDir, const QString& promptSetPath);

public slots:
    /// Reads a results file off the GUI thread, then shows it (errors: message box + log).
    void openResultsFile(const QString& path);
    void loadModels(const draftscope::ModelRequest& r);
    void runAnalysis();
    void openDirectory(const QString& dir);

signals:
    /// Every reported error (also logged, and shown in a message box with dialogs on).
    void errorReported(const QString& operation, const QString& message);

protected:
    /// Double-click on a dock's title bar: toggleMaximisedView(dock) instead of floating it.
    bool eventFilter(QObject* watched, QEvent* e) override;
    void closeEvent(QCloseEvent* e) override;
    void showEvent(QShowEvent* e) override;
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    /// `scrollable` wraps the view in a scroll area so its minimum size does not dictate the
    /// dock area's (the mask view's controls are wide).
    QDockWidget* addDock(QWidget* w, const QString& title, const QString& name, Qt::DockWidgetArea area,
                         bool scrollable = false);
    QDockWidget* dock(const char* name) const;
    void createDocks();
    void connectController();
    void createMenus();
    void createLayoutActions();
    void applyDefaultDockSizes();
    /// Fits the restored window into the available screen area (a session saved on a larger
    /// screen would put the status bar off-screen).
    void clampToScreen();
    /// Hides the docks whose content is absent (results, A vs B, the tools without models, the
    /// training run) and the Compare toolbar when not comparing; with `remember`, notes which
    /// were open so they come back with their content.
    void hideDocksWithoutContent(bool remember);
    /// The A vs B dock and the Compare toolbar (both shown while the run on screen compares).
    void createComparisonDocks();
    /// The Diagnose and Target loads docks (hidden until their Tools action opens them).
    void createToolDocks();
    void addToolActions(QMenu* tools);
    /// Enables the Tools actions and tells the tool panels what is loaded.
    void updateToolModels();
    /// The one handler of AnalysisController::modelsLoaded: Models panel, log, views.
    void onModelsLoaded(const ModelsLoaded& loaded);
    /// Shows a result of the newest live analysis, unless the views show a recorded prompt.
    void showLive(const RunBundlePtr& b, bool complete);
    /// Every caption, the progress line and bar, the DDTree placeholder and the status bar
    /// from runState_ (the one source of truth of what is on screen).
    void applyRunState();
    void log(const QString& line);
    void reportError(const QString& operation, const QString& message);
    // Results files (main_window_results.cpp).
    void setupResults();
    void addResultsActions(QMenu* file);
    void fillRecentResultsMenu();
    void rememberRecentResults(const QString& path);
    void showResultsFile(const QString& path, const ResultsFilePtr& results, const QString& error);
    /// Remembers the loaded directories and shows the recorded prompt on screen again.
    void noteLoadedForResults(const ModelsLoaded& loaded);
    /// Why recorded drafter `drafter`'s attention cannot be recomputed now (empty: it can).
    QString recordedAttentionUnavailable(int drafter) const;
    void updateResultsTitle();
    void setupTrainingRun();
    void addTrainingRunActions(QMenu* file);
    /// What the grid caption calls `b`: "Live analysis 3" or "Recorded, not live: R.dsresults prompt 'p3'".
    QString shownRunLabel(const RunBundle& b) const;

    bool dialogs_;
    AnalysisController* controller_;
    Workbench* workbench_;
    DockLayout* layout_;
    ModelPanel* modelPanel_;
    PromptPanel* promptPanel_;
    QToolBar* compareBar_ = nullptr;
    QPlainTextEdit* log_;
    QMenu* viewMenu_ = nullptr;
    QMenu* recentResultsMenu_ = nullptr;
    ModelSession* models_;  ///< what is loaded and what is loading
    /// The views follow the newest live analysis (false while they show a recorded prompt).
    bool followsLive_ = true;
    ResultsPanel* resultsPanel_ = nullptr;
    ResultsAggregatePlots* aggregate_ = nullptr;
    ResultsReader* resultsReader_ = nullptr;
    ResultsFilePtr results_;
    QString resultsPath_;
    quint64 recordedId_ = 0;        ///< counter of recorded bundles (ids | kRecordedRequestBit)
    QString loadedTarget_, loadedDrafter_;  ///< canonical directories of the loaded models
    DiagnosePanel* diagnosePanel_ = nullptr;
    TargetLoadsPanel* targetLoadsPanel_ = nullptr;
    QAction* diagnoseAction_ = nullptr;
    QAction* targetLoadsAction_ = nullptr;
    TrainingRunView* trainingRun_ = nullptr;
    TrainingRunWatcher* trackWatcher_ = nullptr;
    RunState runState_;
    QSet<QString> reopenWithContent_;  ///< conditional docks open at the last close
    std::map<quint64, std::vector<int>> requestedBudgets_;  ///< DDTree budgets per live analysis asked for
    bool restoredGeometry_ = false;  ///< the window geometry came from the last session
    bool shownOnce_ = false;         ///< the first show has fitted the window to its screen
    bool lastLoadFailed_ = false;  ///< the last model load failed (a queued run then fails without a dialog)
};

}  // namespace draftscope
