#pragma once
// What the views show and how far it got: the one state that every caption, progress line,
// status message, DDTree placeholder and Log line about a run derives from. A plain class
// (no widgets; tst_run_state drives it as a state machine), fed by MainWindow from the
// controller's signals and the results file's selections.

#include <QString>
#include <QtGlobal>

#include <vector>

namespace draftscope {

class RunState {
public:
    enum class Phase {
        Empty,      ///< nothing on screen: a fresh window, or models just loaded
        Running,    ///< a live analysis in progress; the views show the runs done so far
        Finished,   ///< a live analysis finished: every run shown
        Cancelled,  ///< a live analysis cancelled: the views show the runs that finished before (maybe none)
        Failed,     ///< a live analysis failed: the views show what finished before (maybe nothing)
        Recorded,   ///< a prompt of a results file (no live run on screen)
    };

    // Events. Each returns the Log line it deserves ("" for none).
    /// A live analysis started; `budgets` are the DDTree budgets it will run after the chain.
    QString analysisStarted(quint64 id, const std::vector<int>& budgets);
    /// Part of live analysis `id` is on screen: `runs` names what it holds ("chain, DDTree 4");
    /// `complete` when it is the whole analysis.
    QString runShown(quint64 id, const QString& runs, bool complete);
    /// Live analysis `id` was cancelled; what it had shown stays (if anything).
    QString cancelled(quint64 id);
    /// Live analysis `id` failed with `message`.
    QString analysisFailed(quint64 id, const QString& message);
    /// A results file's prompt is on screen.
    QString recordedShown(const QString& file, const QString& prompt, const QString& runs);
    /// New models loaded: the views were cleared.
    QString modelsLoaded();
    /// A load failed: the engine holds no models, so whatever is on screen is stale.
    QString loadFailed();
    /// The views were emptied.
    void cleared();

    Phase phase() const { return phase_; }
    /// The analysis id the state is about (0: none).
    quint64 id() const { return id_; }
    /// What is on screen was produced by models that are no longer loaded.
    bool stale() const { return stale_; }
    /// What the views show ("chain, DDTree 4"); empty when nothing.
    const QString& runs() const { return runs_; }

    /// Appended to the block grid's caption: "" (finished, or recorded: the label says so),
    /// " (running: DDTree 8, 16 to come)", " (cancelled: kept chain, DDTree 4)",
    /// " (failed after: chain)", each with " - stale: its models are no longer loaded" when
    /// stale.
    QString captionNote() const;
    /// The Prompt panel's line above the progress bar.
    QString progressLine() const;
    /// The status bar after the last event.
    QString statusLine() const;
    /// The DDTree view's text when the shown run has no tree runs.
    QString treeEmptyText() const;
    /// Whether the progress bar shows a live run (false: it is reset, e.g. for a recorded
    /// prompt or a fresh window).
    bool progressIsLive() const { return phase_ == Phase::Running || phase_ == Phase::Finished || phase_ == Phase::Cancelled; }

private:
    QString budgetsText() const;
    Phase phase_ = Phase::Empty;
    quint64 id_ = 0;
    QString runs_;          ///< on screen
    QString failure_;       ///< Failed: the message
    QString recorded_;      ///< Recorded: "R.dsresults prompt 'p3'"
    std::vector<int> budgets_;  ///< of the live analysis
    int treesShown_ = 0;    ///< DDTree runs of the live analysis on screen
    bool stale_ = false;
};

}  // namespace draftscope
