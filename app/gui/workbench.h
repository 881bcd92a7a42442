#pragma once
// The Workbench owns the linked views of one run and their step selections, and shows a
// bundle (live or recorded) in all of them through the BundleView interface. It knows
// nothing of docks, menus or files: MainWindow places its views and tells it what to show.

#include "gui/analysis_controller.h"
#include "gui/bundle_view.h"

#include <QList>
#include <QObject>

#include <memory>
#include <vector>

class QComboBox;
class QSplitter;
class QWidget;

namespace draftscope {

class AcceptancePlots;
class AcceptanceTreeView;
class AttentionView;
class BlockAgreementView;
class BudgetSweepPlot;
class ComparisonSummaryView;
class ExportableView;
class HiddenStatsView;
class MaskView;
class OutputStripView;
class SelectorView;
class StepSelection;

class Workbench : public QObject {
    Q_OBJECT
public:
    /// Creates the views (parented to `parent`); `controller` computes the drafter attention
    /// of the selected step and is not owned.
    Workbench(AnalysisController* controller, QWidget* parent);
    ~Workbench() override;

    // The views (MainWindow puts them in docks) and the step selections.
    StepSelection* selection() const { return selection_; }
    StepSelection* selectionB() const { return selectionB_; }
    BlockAgreementView* blockView() const { return blockView_; }
    BlockAgreementView* blockViewB() const { return blockViewB_; }
    OutputStripView* stripView() const { return stripView_; }
    AcceptancePlots* acceptance() const { return acceptance_; }
    MaskView* maskView() const { return maskView_; }
    AttentionView* attentionView() const { return attentionView_; }
    HiddenStatsView* statsView() const { return statsView_; }
    AcceptanceTreeView* treeView() const { return treeView_; }
    BudgetSweepPlot* sweep() const { return sweep_; }
    ComparisonSummaryView* summaryView() const { return summaryView_; }
    SelectorView* selectorView() const { return selectorView_; }
    /// A's grid above B's (B's shown while comparing): the window's central widget.
    QSplitter* grids() const { return grids_; }
    /// "Detail views show: drafter A / drafter B" (for the window's Compare toolbar).
    QComboBox* detailDrafterBox() const { return detailCombo_; }

    /// Registers a view of the whole run: it gets every shown run and every clear.
    void addView(std::unique_ptr<BundleView> view);
    /// Registers a detail view (it shows ShownRun::detail): also refilled when the detail
    /// drafter changes.
    void addDetailView(std::unique_ptr<BundleView> view);

    /// Shows `run` in every view. A later part of the run on screen (same request id) keeps
    /// the selected step and DDTree budget; otherwise the first step is selected.
    void show(ShownRun run);
    /// Empties every view.
    void clear();
    /// The partial run on screen is final now (its analysis was cancelled): its attention
    /// can be computed.
    void markComplete();
    /// What the run state says of the run on screen (RunState::captionNote, appended to the
    /// grid's caption) and what the DDTree view says while it has no tree runs.
    void setRunNote(const QString& note, const QString& treeEmptyText);

    /// The bundle on screen (null: none).
    const RunBundlePtr& shown() const { return shown_.bundle; }
    bool isComplete() const { return shown_.complete; }
    /// Whether the bundle on screen compares two drafters.
    bool isComparing() const { return shown_.b() != nullptr; }
    /// Which drafter the detail views show: 0 = A, 1 = B.
    int detailDrafter() const;
    void setDetailDrafter(int which);
    /// The bundle the detail views show (A, or B when comparing and B is chosen).
    RunBundlePtr detailBundle() const;

    /// The exportable views: the run's, then `more` (the window's), then (while comparing)
    /// B's grid and the A vs B summary.
    QList<ExportableView*> exportableViews(const QList<ExportableView*>& more = {}) const;
    /// Every exported figure names its prompt and drafter (A or B when two are compared).
    void setFigureTitles();
    /// The mask view's training example follows `drafter` (block size, layer layout).
    void setDrafterLayout(const ModelSummary& drafter);

    /// "chain, DDTree 4, DDTree 8" (per drafter when comparing): the runs `b` holds.
    static QString runsLabel(const RunBundle& b);

signals:
    /// A line for the log (finished runs).
    void logLine(const QString& line);
    /// A summary of the shown run for the status bar.
    void statusMessage(const QString& message);
    /// The shown run compares two drafters (true) or not (the A vs B dock and toolbar follow).
    void comparingChanged(bool comparing);

private:
    void registerViews();
    void linkSelections(StepSelection* from, StepSelection* to, bool fromA);
    void showDetailViews();
    void onSelection(int step, int position);
    void onAttention(quint64 requestId, const DrafterAttention& attention);
    /// Step of detailBundle()'s run for A's step `stepA` (the step covering its anchor).
    int detailStep(int stepA) const;
    /// Why the detail drafter's attention cannot be computed now (empty: it can).
    QString attentionUnavailableReason() const;
    /// The display pieces of the shown output, positions 0..length-1.
    std::vector<QString> piecesUpTo(std::int64_t length) const;
    void logRuns(const ShownRun& run);

    AnalysisController* controller_;
    StepSelection* selection_;
    StepSelection* selectionB_;
    BlockAgreementView* blockView_;
    BlockAgreementView* blockViewB_;
    OutputStripView* stripView_;
    AcceptancePlots* acceptance_;
    MaskView* maskView_;
    AttentionView* attentionView_;
    HiddenStatsView* statsView_;
    AcceptanceTreeView* treeView_;
    BudgetSweepPlot* sweep_;
    ComparisonSummaryView* summaryView_;
    SelectorView* selectorView_;
    QSplitter* grids_;
    QComboBox* detailCombo_;
    std::vector<std::unique_ptr<BundleView>> views_;
    std::vector<std::unique_ptr<BundleView>> detailViews_;
    ShownRun shown_;
    bool linkingSelections_ = false;
    int attentionStep_ = -1;  ///< step whose attention was last requested for the shown run
    QString captionA_;        ///< A's grid caption without the run note
    QString runNote_;         ///< RunState::captionNote of the shown run
};

}  // namespace draftscope
