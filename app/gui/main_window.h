#pragma once
// The draftscope workbench: model and prompt panels, the linked views as dock widgets, a
// log, menus, drag and drop of model directories, remembered layout.

#include "gui/analysis_controller.h"
#include "gui/recorded_results.h"

#include <QMainWindow>
#include <QPointer>

#include <functional>

class QComboBox;
class QPlainTextEdit;
class QDockWidget;
class QSplitter;
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
    StepSelection* selection() const { return selection_; }
    BlockAgreementView* blockAgreementView() const { return blockView_; }
    OutputStripView* outputStripView() const { return stripView_; }
    AcceptancePlots* acceptancePlots() const { return acceptance_; }
    MaskView* maskView() const { return maskView_; }
    AttentionView* attentionView() const { return attentionView_; }
    HiddenStatsView* hiddenStatsView() const { return statsView_; }
    AcceptanceTreeView* treeView() const { return treeView_; }
    BudgetSweepPlot* budgetSweepPlot() const { return sweep_; }
    // Drafter A vs B (shown while the last result has a comparison):
    /// Drafter B's block agreement grid (next to A's), with its own step selection.
    BlockAgreementView* blockAgreementViewB() const { return blockViewB_; }
    StepSelection* selectionB() const { return selectionB_; }
    ComparisonSummaryView* comparisonSummary() const { return summaryView_; }
    /// Which drafter the detail views (DDTree, masks, attention, hidden states) show: 0 = A, 1 = B.
    int detailDrafter() const;
    void setDetailDrafter(int which);
    /// Whether the last result compares two drafters.
    bool isComparing() const;
    QList<ExportableView*> exportableViews() const;
    const RunBundlePtr& lastResult() const { return last_; }
    QString logText() const;

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

    /// Loads models and runs the prompt panel's request, then the attention of step 0;
    /// blocks in a local event loop (the GUI stays live). For --demo and --export-figures.
    /// Returns false and sets *error if any stage failed.
    bool loadAndRun(const ModelRequest& models, QString* error);

    // Results files (draftscope-cli eval --out): recorded runs shown without models.
    ResultsPanel* resultsPanel() const { return resultsPanel_; }
    ResultsAggregatePlots* resultsAggregatePlots() const { return aggregate_; }
    /// The open results file (null if none) and its path.
    const ResultsFilePtr& results() const { return results_; }
    QString resultsPath() const { return resultsPath_; }
    /// Reads `path` on the calling thread and shows it; for --export-figures and tests.
    /// Returns false and sets *error (the reader's message, also reported) on failure.
    bool openResultsFileNow(const QString& path, QString* error);
    /// Shows prompt `prompt` (index into results()->prompts) of the open file with drafter
    /// `drafter` in every view, as a finished analysis.
    void showRecordedPrompt(int prompt, int drafter);

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
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    /// `scrollable` wraps the view in a scroll area so its minimum size does not dictate the
    /// dock area's (the mask view's controls are wide).
    QDockWidget* addDock(QWidget* w, const QString& title, const QString& name, Qt::DockWidgetArea area,
                         bool scrollable = false);
    void createMenus();
    void createLayoutActions();
    void applyDefaultDockSizes();
    /// Grows the Models dock (taking from the Prompt dock) until the models' summary under
    /// the form is shown whole, e.g. once drafter B's line is added; never shrinks it.
    void fitModelsDock();
    QWidget* currentView() const;
    void setupResults();
    void addResultsActions(QMenu* file);
    void showResultsFile(const QString& path, const ResultsFilePtr& results, const QString& error);
    /// Why attention cannot be recomputed for the shown run (empty: it can).
    QString attentionUnavailableReason() const;
    void updateResultsTitle();
    /// What the grid caption calls `b`: "Live analysis 3" or "Recorded, not live: R.dsresults prompt 'p3'".
    QString shownRunLabel(const RunBundle& b) const;
    /// "recorded #n" for recorded bundles, the number for live analyses.
    QString requestLabel(quint64 id) const;
    /// Shows `b` (ignored unless it belongs to the newest request); `complete` false: a
    /// partial result (more runs to come), which keeps the selected step and budget.
    void showResult(const RunBundlePtr& b, bool complete = true);
    /// "chain, DDTree 4, DDTree 8" (per drafter when comparing): the runs `b` holds.
    static QString runsLabel(const RunBundle& b);
    void clearResult();
    void onSelection(int step, int position);
    void log(const QString& line);
    void reportError(const QString& operation, const QString& message);
    std::vector<QString> piecesUpTo(std::int64_t length) const;
    // Drafter A vs B.
    void createComparisonViews();  ///< B's grid next to A's (central splitter), summary dock, A/B toolbar
    void showComparison(const RunBundlePtr& b, bool complete = true);
    void clearComparison();
    /// "2 layers (2 x full bidirectional), block 16, tapped layers [1, 2, 4], mask token
    /// 2047": a drafter's line of the Models panel's summary.
    static QString drafterSummaryLine(const ModelSummary& d);
    /// The bundle the detail views show (A = last_, or B = last_->comparison).
    RunBundlePtr detailBundle() const;
    /// Step of detailBundle()'s run for A's step `stepA` (the step covering its anchor).
    int detailStep(int stepA) const;
    /// Refills the DDTree, budget-independent detail views for the detail drafter.
    void showDetailViews();

    bool dialogs_;
    AnalysisController* controller_;
    StepSelection* selection_;
    ModelPanel* modelPanel_;
    PromptPanel* promptPanel_;
    BlockAgreementView* blockView_;
    OutputStripView* stripView_;
    AcceptancePlots* acceptance_;
    MaskView* maskView_;
    AttentionView* attentionView_;
    HiddenStatsView* statsView_;
    AcceptanceTreeView* treeView_;
    BudgetSweepPlot* sweep_;
    QSplitter* grids_ = nullptr;
    BlockAgreementView* blockViewB_ = nullptr;
    StepSelection* selectionB_ = nullptr;
    ComparisonSummaryView* summaryView_ = nullptr;
    QToolBar* compareBar_ = nullptr;
    QComboBox* detailCombo_ = nullptr;
    bool linkingSelections_ = false;
    ModelSummary drafterB_;  ///< drafter B of the load in progress (comparisonDrafterLoaded)
    QPlainTextEdit* log_;
    QMenu* viewMenu_ = nullptr;
    QByteArray defaultLayout_;  ///< saveState() of the first-start layout
    QByteArray maximised_;      ///< layout to restore while a view is maximised (empty: none)
    QPointer<QWidget> lastView_;
    RunBundlePtr last_;
    bool lastComplete_ = true;    ///< false while last_ is a partial result (more runs to come)
    ModelRequest pendingModels_;  ///< the last load asked for; remembered once it loads
    ModelRequest loadedModels_;   ///< what the engine holds (empty targetDir: nothing)
    bool loadInFlight_ = false;   ///< pendingModels_ is queued or loading
    quint64 currentRequest_ = 0;  ///< id of the newest analysis asked for
    int attentionStep_ = -1;      ///< step whose attention was last requested for last_
    ResultsPanel* resultsPanel_ = nullptr;
    ResultsAggregatePlots* aggregate_ = nullptr;
    ResultsReader* resultsReader_ = nullptr;
    ResultsFilePtr results_;
    QString resultsPath_;
    quint64 recordedId_ = 0;        ///< counter of recorded bundles (ids | kRecordedRequestBit)
    QString loadedTarget_, loadedDrafter_;  ///< canonical directories of the loaded models
};

}  // namespace draftscope
