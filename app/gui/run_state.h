#pragma once
// What the views show and how far it got: the one state that every caption, progress line,
// status message, DDTree placeholder and Log line about a run derives from. A plain class
// (no widgets; tst_run_state drives it as a state machine), fed by MainWindow from the
// controller's signals and the results file's selections.

#include <QString>
#include <QtGlobal>

#include <functional>
#include <vector>

namespace draftscope {

class RunState {
public:
    /// Milliseconds from some fixed point (monotonic): the Log lines' durations.
    using Clock = std::function<qint64()>;
    /// `clock` defaults to a monotonic timer (tests pass their own).
    explicit RunState(Clock clock = {});
    /// "0.4 s", "12 s", "2 min 5 s": a duration in the Log's words.
    static QString durationText(qint64 ms);

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
    /// `complete` when it is the whole analysis. Each run that appears gets a Log line with the
    /// time since the start ("analysis 3: DDTree 4 done after 1.2 s"); the end says the whole
    /// time ("analysis 3 finished in 4.2 s: chain, DDTree 4").
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
    Clock clock_;
    qint64 startedMs_ = 0;      ///< clock_() when the live analysis started
    QString elapsed() const { return durationText(clock_() - startedMs_); }
    int treesShown_ = 0;    ///< DDTree runs of the live analysis on screen
    bool stale_ = false;
};

}  // namespace draftscope
