#include "gui/run_state.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QStringList>

#include <memory>

namespace draftscope {

namespace {
QString tr(const char* s) { return QCoreApplication::translate("RunState", s); }
}  // namespace

RunState::RunState(Clock clock) : clock_(std::move(clock)) {
    if (!clock_) {
        auto timer = std::make_shared<QElapsedTimer>();
        timer->start();
        clock_ = [timer] { return timer->elapsed(); };
    }
}

QString RunState::durationText(qint64 ms) {
    if (ms < 0) ms = 0;
    if (ms < 10000) return tr("%1 s").arg(static_cast<double>(ms) / 1000.0, 0, 'f', 1);
    const qint64 s = (ms + 500) / 1000;
    if (s < 90) return tr("%1 s").arg(s);
    return tr("%1 min %2 s").arg(s / 60).arg(s % 60);
}

QString RunState::budgetsText() const {
    QStringList b;
    for (int x : budgets_) b << QString::number(x);
    return b.join(", ");
}

QString RunState::analysisStarted(quint64 id, const std::vector<int>& budgets) {
    phase_ = Phase::Running;
    id_ = id;
    budgets_ = budgets;
    runs_.clear();
    failure_.clear();
    recorded_.clear();
    treesShown_ = 0;
    stale_ = false;
    startedMs_ = clock_();
    return tr("analysis %1 started").arg(id);
}

QString RunState::runShown(quint64 id, const QString& runs, bool complete) {
    if (id != id_ || (phase_ != Phase::Running && phase_ != Phase::Finished)) return {};
    if (phase_ == Phase::Finished) {  // shown again (e.g. its attention arrived): nothing new
        runs_ = runs;
        return {};
    }
    // The runs new since the last event ("chain", then "DDTree 4", ...).
    QStringList added = runs.split(QStringLiteral(", "), Qt::SkipEmptyParts);
    for (const QString& old : runs_.split(QStringLiteral(", "), Qt::SkipEmptyParts)) added.removeOne(old);
    runs_ = runs;
    treesShown_ = static_cast<int>(runs.count(QStringLiteral("DDTree")));
    if (!complete)
        return added.isEmpty() ? QString() : tr("analysis %1: %2 done after %3").arg(id).arg(added.join(", "), elapsed());
    phase_ = Phase::Finished;
    return tr("analysis %1 finished in %2: %3").arg(id).arg(elapsed(), runs);
}

QString RunState::cancelled(quint64 id) {
    if (id != id_ || phase_ != Phase::Running) return tr("analysis %1 cancelled").arg(id);
    phase_ = Phase::Cancelled;
    return runs_.isEmpty() ? tr("analysis %1 cancelled after %2, before its chain run finished; nothing kept").arg(id).arg(elapsed())
                           : tr("analysis %1 cancelled after %2; kept on screen: %3").arg(id).arg(elapsed(), runs_);
}

QString RunState::analysisFailed(quint64 id, const QString& message) {
    if (id != id_ || phase_ != Phase::Running) return {};
    phase_ = Phase::Failed;
    failure_ = message;
    return runs_.isEmpty() ? QString() : tr("analysis %1 failed after %2; kept on screen: %3").arg(id).arg(elapsed(), runs_);
}

QString RunState::recordedShown(const QString& file, const QString& prompt, const QString& runs) {
    phase_ = Phase::Recorded;
    id_ = 0;
    recorded_ = tr("%1 prompt '%2'").arg(file, prompt);
    runs_ = runs;
    budgets_.clear();
    treesShown_ = static_cast<int>(runs.count(QStringLiteral("DDTree")));
    stale_ = false;
    return {};
}

QString RunState::modelsLoaded() {
    cleared();
    return {};
}

QString RunState::loadFailed() {
    if (phase_ == Phase::Empty || phase_ == Phase::Recorded) return {};  // a recorded run needs no models
    stale_ = true;
    return tr("the run on screen (analysis %1) is stale: the models that produced it are no longer loaded").arg(id_);
}

void RunState::cleared() {
    phase_ = Phase::Empty;
    id_ = 0;
    runs_.clear();
    failure_.clear();
    recorded_.clear();
    budgets_.clear();
    treesShown_ = 0;
    stale_ = false;
}

QString RunState::captionNote() const {
    QString note;
    switch (phase_) {
        case Phase::Running: {
            QStringList left;
            for (std::size_t i = static_cast<std::size_t>(treesShown_); i < budgets_.size(); ++i)
                left << QString::number(budgets_[i]);
            note = left.isEmpty() ? QString() : tr(" (running: DDTree %1 to come)").arg(left.join(", "));
            break;
        }
        case Phase::Cancelled: note = tr(" (cancelled: kept %1)").arg(runs_); break;
        case Phase::Failed: note = tr(" (failed after: %1)").arg(runs_); break;
        default: break;
    }
    if (stale_) note += tr(" - stale: its models are no longer loaded");
    return note;
}

QString RunState::progressLine() const {
    switch (phase_) {
        case Phase::Empty: return {};
        case Phase::Running: return runs_.isEmpty() ? tr("running: chain (DFlash)") : tr("running; done: %1").arg(runs_);
        case Phase::Finished: return tr("done: %1").arg(runs_);
        case Phase::Cancelled: return runs_.isEmpty() ? tr("cancelled (nothing finished)") : tr("cancelled (kept: %1)").arg(runs_);
        case Phase::Failed: return tr("failed: %1").arg(failure_.section('\n', 0, 0));
        case Phase::Recorded: return tr("recorded, not live: %1").arg(recorded_);
    }
    return {};
}

QString RunState::statusLine() const {
    QString s;
    switch (phase_) {
        case Phase::Empty: return {};
        case Phase::Running: s = tr("Analysis %1 running...").arg(id_); break;
        case Phase::Finished: s = tr("Analysis %1 finished: %2").arg(id_).arg(runs_); break;
        case Phase::Cancelled:
            s = runs_.isEmpty() ? tr("Analysis %1 cancelled before its chain run finished").arg(id_)
                                : tr("Analysis %1 cancelled; showing the runs that finished: %2").arg(id_).arg(runs_);
            break;
        case Phase::Failed: s = tr("Analysis %1 failed").arg(id_); break;
        case Phase::Recorded: s = tr("Recorded, not live: %1").arg(recorded_); break;
    }
    if (stale_) s += tr(" (stale: the models that produced it are no longer loaded)");
    return s;
}

QString RunState::treeEmptyText() const {
    switch (phase_) {
        case Phase::Running:
            return budgets_.empty() ? tr("No DDTree runs in this analysis: enter DDTree budgets in the Prompt panel and run.")
                                    : tr("DDTree budgets %1 run after the chain run; they are shown as each finishes.").arg(budgetsText());
        case Phase::Cancelled:
            return budgets_.empty() ? tr("No DDTree runs in this analysis: enter DDTree budgets in the Prompt panel and run.")
                                    : tr("The analysis was cancelled before its DDTree runs (budgets %1) finished.").arg(budgetsText());
        case Phase::Failed:
            return budgets_.empty() ? tr("No DDTree runs in this analysis.")
                                    : tr("The analysis failed before its DDTree runs (budgets %1) finished: %2")
                                          .arg(budgetsText(), failure_.section('\n', 0, 0));
        case Phase::Recorded: return tr("The results file holds no DDTree runs for this prompt (eval ran without --ddtree-budget).");
        case Phase::Finished:
            return budgets_.empty() ? tr("No DDTree runs: enter DDTree budgets in the Prompt panel and run (hybrid targets "
                                         "cannot run them).")
                                    : QString();
        case Phase::Empty: break;
    }
    return tr("No DDTree runs: enter DDTree budgets in the Prompt panel and run.");
}

}  // namespace draftscope
