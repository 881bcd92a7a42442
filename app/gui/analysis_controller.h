#pragma once
// Owns the engine on one worker thread. The GUI sends requests (load models, run a prompt,
// fetch attention weights); each kind keeps only its newest pending request, so a newer
// request supersedes one not yet started, and a new analysis also cancels a running one
// (at its next verify step). Results, progress and errors come back on the GUI thread as
// signals that carry the request id; a reply to a superseded request (an analysis older than
// the newest, an attention request older than the newest) is dropped here, so receivers
// only ever see answers to the newest request. Each finished run of an analysis (chain,
// every DDTree budget) arrives at once as a partial result; cancel() stops a running
// analysis between verify steps. (The same tagged-request idea as RenderDoc's ReplayManager.)

#include "draftscope/diagnosis.h"
#include "draftscope/target_comparison.h"
#include "gui/run_bundle.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

class QThread;

namespace draftscope {

/// Which models to load and how.
struct ModelRequest {
    QString targetDir;
    QString drafterDir;
    /// Optional second drafter (B) to compare with drafter A on every analysis; empty = none.
    QString drafterBDir;
    QString device = "cpu";
    QString dtype = "float32";
    /// Usable memory per device of `device`, as typed ("40GiB,40GiB"; parsed by
    /// parseMemoryLimits when the models load); empty = a GPU's free memory.
    QString gpuMemory;
};

/// One prompt to analyse with the loaded models.
struct AnalysisRequest {
    PromptSpec prompt;
    /// The id of the prompt-set entry the prompt is (e.g. a bundled sample prompt's name);
    /// empty for a typed prompt. Becomes RunBundle::promptLabel through promptLabelOf().
    QString promptId;
    RunSettings settings;
    /// DDTree budgets to run after the chain (DFlash) run, each once; empty = no tree runs.
    std::vector<int> ddtreeBudgets;
    /// Why the budget field cannot run ("" when it can): the message of the one
    /// parseTreeBudgets() + validateTreeBudgets(budgets, settings.temperature) pass that made
    /// ddtreeBudgets (then empty). A request with an error is refused, not run.
    QString ddtreeBudgetError;
};

/// Everything one load put into the engine, in one signal: receivers never depend on the
/// order of several signals.
struct ModelsLoaded {
    quint64 requestId = 0;  ///< loadModels()'s return value
    ModelRequest request;   ///< what was asked for (a newer load may already be pending)
    ModelSummary target;
    ModelSummary drafter;  ///< drafter A
    /// Drafter B, when request.drafterBDir was set (else nullopt).
    std::optional<ModelSummary> drafterB;
};

/// Tools > Diagnose: diagnoseDrafters() on the loaded drafter A (and B with it).
struct DiagnoseRequest {
    std::vector<DiagnosePrompt> prompts;
    DiagnoseSettings settings;
    bool includeB = true;  ///< also diagnose drafter B when one is loaded
};

/// A finished diagnosis of the loaded drafters.
struct DiagnoseResult {
    quint64 requestId = 0;
    DiagnosisReport report;
    /// Per report.drafters entry (rank order): 0 = drafter A, 1 = drafter B.
    std::vector<int> which;
};
using DiagnoseResultPtr = std::shared_ptr<const DiagnoseResult>;

/// Tools > Compare target loads: the loaded target (load A, as loaded) against the same
/// model loaded again as load B (another directory, e.g. its vision-language layout, and/or
/// another dtype or device), one forward each over `prompt` (compareTargetForwards()).
struct TargetLoadsRequest {
    PromptSpec prompt;
    QString targetBDir;  ///< empty = the loaded target's directory
    LoadOptions loadB;
};

/// A finished comparison of two loads of the target.
struct TargetLoadsResult {
    quint64 requestId = 0;
    ModelSummary targetA, targetB;
    LoadOptions loadA, loadB;
    TargetLoadComparison comparison;
};
using TargetLoadsResultPtr = std::shared_ptr<const TargetLoadsResult>;

/// What failed; failed() carries it with the request id and the backend's message.
enum class FailureKind {
    Load,          ///< loading the target or a drafter (the engine then holds no models)
    Analysis,      ///< the analysis itself (nothing of it is delivered after this)
    HiddenStates,  ///< the hidden-state statistics: the run stands without them
    DdTree,        ///< a DDTree budget: the run stands without the tree runs from that budget on
    Attention,     ///< recomputing the drafter's attention for one step
    Diagnose,      ///< Tools > Diagnose (the loaded models stay as they were)
    TargetLoads,   ///< Tools > Compare target loads (the loaded models stay as they were)
};

/// "load", "analysis", "hidden states", "ddtree", "attention", "diagnose" or "target loads":
/// what logs and dialogs call `kind`.
QString failureName(FailureKind kind);

class AnalysisWorker;

class AnalysisController : public QObject {
    Q_OBJECT
public:
    explicit AnalysisController(QObject* parent = nullptr);
    ~AnalysisController() override;  ///< cancels running work and joins the worker thread

    bool isBusy() const { return busy_.load(); }

    /// Whether `id` is the newest analysis asked for (its replies are delivered; those of
    /// older ones are dropped, but cancelled() and failed() reach receivers for every id).
    bool isLatestAnalysis(quint64 id) const { return id == latestAnalysis_; }

public slots:
    /// Loads target + drafter (+ drafter B if request.drafterBDir is set), replacing the
    /// current ones. Supersedes a pending load. If the load fails, an analysis queued behind
    /// it is dropped (no models are loaded then). Returns the id modelsLoaded() and a Load
    /// failure carry (a counter of its own, apart from the analysis ids).
    quint64 loadModels(const draftscope::ModelRequest& request);
    /// Runs the DFlash loop, the hidden-state statistics and the DDTree loop for each of
    /// request.ddtreeBudgets. With a drafter B loaded it runs all of them for A, then for B
    /// on the same prompt (RunBundle::comparison). Supersedes a pending analysis; returns
    /// the request id carried by analysisFinished().
    quint64 analyse(const draftscope::AnalysisRequest& request);
    /// Recomputes the drafter's attention at `step` of `bundle`'s run (a finished analysis
    /// of the currently loaded models). Supersedes a pending attention request; the answer
    /// to an older one is dropped.
    void requestAttention(const draftscope::RunBundlePtr& bundle, int step);
    /// Stops the running analysis (or tool) at the next verify step and drops every pending
    /// request. Loading and attention computations are not interruptible; they finish first.
    void cancel();
    /// Diagnoses the loaded drafter A (and B, if loaded and request.includeB) with
    /// diagnoseDrafters() on the engine's target, after the pending loads, analyses and
    /// attention requests. The diagnosed drafters are loaded again for it and unloaded
    /// afterwards (Engine::truncateDrafters): the loaded models stay as they were. Supersedes
    /// a pending diagnosis; returns the id toolProgress(), diagnosisFinished(),
    /// toolCancelled() and a Diagnose failure carry (the tools' own counter).
    quint64 diagnose(const draftscope::DiagnoseRequest& request);
    /// Compares the loaded target with load B of the same model (TargetLoadsRequest); load B
    /// is held only during the call. Supersedes a pending comparison; returns the id
    /// toolProgress(), targetLoadsCompared(), toolCancelled() and a TargetLoads failure carry.
    quint64 compareTargetLoads(const draftscope::TargetLoadsRequest& request);
    /// Stops a running diagnosis or target comparison at its next check and drops the
    /// pending ones; analyses and loads are not touched.
    void cancelTool();

signals:
    /// Every model one load put into the engine (target, drafter A, drafter B if asked for).
    void modelsLoaded(const draftscope::ModelsLoaded& loaded);
    void analysisStarted(quint64 requestId);
    void progress(quint64 requestId, qint64 done, qint64 total);
    /// The analysis moved to another run: "chain (DFlash)" or "DDTree budget N (i of n)",
    /// prefixed "drafter A: " / "drafter B: " when comparing; the progress() that follows
    /// counts that run's tokens.
    void stageChanged(quint64 requestId, const QString& stage);
    /// The analysis so far, as soon as one of its runs finished: after the chain run (with
    /// its hidden-state statistics) and after each DDTree budget, A's then B's (`bundle`
    /// then holds A complete and B so far as its comparison). Not emitted for the last run:
    /// analysisFinished() carries the complete bundle. A cancelled analysis keeps the
    /// runs its partial results carried.
    void partialResult(const draftscope::RunBundlePtr& bundle);
    void analysisFinished(const draftscope::RunBundlePtr& bundle);
    /// `requestId` is that of the analysis whose run the attention belongs to. Only the
    /// answer to the newest requestAttention() arrives.
    void attentionReady(quint64 requestId, const draftscope::DrafterAttention& attention);
    /// `requestId`: the load's id for FailureKind::Load, else the analysis's (for Attention:
    /// the analysis whose run it was); `message` is the backend's error. A failed
    /// HiddenStates or DdTree still delivers the run (without the statistics, or without the
    /// tree runs from the failing budget on). Emitted for every request, superseded or not.
    void failed(quint64 requestId, draftscope::FailureKind kind, const QString& message);
    /// Emitted for every cancelled analysis, superseded or not.
    void cancelled(quint64 requestId);
    void busyChanged(bool busy);
    /// A tool's progress: diagnose counts its steps (diagnoseDrafters), the target comparison its
    /// steps (forward A, load B, forward B); `stage` names what runs.
    void toolProgress(quint64 requestId, qint64 done, qint64 total, const QString& stage);
    void diagnosisFinished(const draftscope::DiagnoseResultPtr& result);
    void targetLoadsCompared(const draftscope::TargetLoadsResultPtr& result);
    /// Emitted for every cancelled tool request (diagnose or target comparison).
    void toolCancelled(quint64 requestId);

private:
    friend class AnalysisWorker;
    void schedule();
    /// Makes `request` the pending one of its tool kind under a new tool id; schedules it.
    template <class Request>
    quint64 queueTool(std::optional<std::pair<quint64, Request>>& pending, const Request& request);
    /// Runs `emitReply` on the GUI thread unless analysis `id` is no longer the newest by then.
    void replyIfLatest(quint64 id, std::function<void()> emitReply);
    /// Runs `emitReply` on the GUI thread (replies every receiver sees: loads, failures, cancels).
    void reply(std::function<void()> emitReply);

    QThread* thread_ = nullptr;
    AnalysisWorker* worker_ = nullptr;
    std::mutex mutex_;
    std::optional<std::pair<quint64, ModelRequest>> pendingLoad_;
    std::optional<std::pair<quint64, AnalysisRequest>> pendingAnalysis_;
    struct AttentionRequest {
        quint64 tag;  ///< counter of attention requests: only the newest one's answer is delivered
        RunBundlePtr bundle;
        int step;
    };
    std::optional<AttentionRequest> pendingAttention_;
    bool analysisRunning_ = false;  ///< guarded by mutex_
    std::optional<std::pair<quint64, DiagnoseRequest>> pendingDiagnose_;
    std::optional<std::pair<quint64, TargetLoadsRequest>> pendingTargetLoads_;
    bool toolRunning_ = false;  ///< guarded by mutex_
    quint64 nextToolId_ = 1;
    quint64 nextId_ = 1;
    quint64 nextLoadId_ = 1;
    quint64 attentionTag_ = 0;   ///< newest attention request (GUI thread)
    quint64 latestAnalysis_ = 0;  ///< newest analysis id handed out (GUI thread)
    std::atomic<bool> cancel_{false};
    std::atomic<bool> busy_{false};
};

}  // namespace draftscope

Q_DECLARE_METATYPE(draftscope::ModelRequest)
Q_DECLARE_METATYPE(draftscope::AnalysisRequest)
Q_DECLARE_METATYPE(draftscope::ModelsLoaded)
Q_DECLARE_METATYPE(draftscope::FailureKind)
Q_DECLARE_METATYPE(draftscope::DiagnoseResultPtr)
Q_DECLARE_METATYPE(draftscope::TargetLoadsResultPtr)
