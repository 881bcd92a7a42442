#pragma once
// Owns the engine on one worker thread. The GUI sends requests (load models, run a prompt,
// fetch attention weights); each kind keeps only its newest pending request, so a newer
// request supersedes one not yet started, and a new analysis also cancels a running one
// (at its next verify step). Results, progress and errors come back as queued signals
// that carry the request id; each finished run of an analysis (chain, every DDTree budget)
// arrives at once as a partial result; cancel() stops a running analysis between verify steps.

#include "gui/run_bundle.h"

#include <QObject>
#include <QString>

#include <atomic>
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
};

class AnalysisWorker;

class AnalysisController : public QObject {
    Q_OBJECT
public:
    explicit AnalysisController(QObject* parent = nullptr);
    ~AnalysisController() override;  ///< cancels running work and joins the worker thread

    bool isBusy() const { return busy_.load(); }

public slots:
    /// Loads target + drafter (+ drafter B if request.drafterBDir is set), replacing the
    /// current ones. Supersedes a pending load. If the load fails, an analysis queued behind
    /// it is dropped (no models are loaded then).
    void loadModels(const draftscope::ModelRequest& request);
    /// Runs the DFlash loop, the hidden-state statistics and the DDTree loop for each of
    /// request.ddtreeBudgets. With a drafter B loaded it runs all of them for A, then for B
    /// on the same prompt (RunBundle::comparison). Supersedes a pending analysis; returns
    /// the request id carried by analysisFinished().
    quint64 analyse(const draftscope::AnalysisRequest& request);
    /// Recomputes the drafter's attention at `step` of `bundle`'s run (a finished analysis
    /// of the currently loaded models). Supersedes a pending attention request.
    void requestAttention(const draftscope::RunBundlePtr& bundle, int step);
    /// Stops the running analysis at the next verify step and drops every pending request.
    /// Loading and attention computations are not interruptible; they finish first.
    void cancel();

signals:
    /// `request` is the load that produced them (a newer load may already be pending).
    void modelsLoaded(const draftscope::ModelSummary& target, const draftscope::ModelSummary& drafter,
                      const draftscope::ModelRequest& request);
    /// Emitted right before modelsLoaded() when ModelRequest::drafterBDir was loaded too.
    void comparisonDrafterLoaded(const draftscope::ModelSummary& drafterB);
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
    /// `requestId` is that of the analysis whose run the attention belongs to.
    void attentionReady(quint64 requestId, const draftscope::DrafterAttention& attention);
    /// `operation` is "load", "analysis", "hidden states", "ddtree" or "attention"; `message`
    /// is the backend's error. A failed "hidden states" or "ddtree" still delivers the run
    /// (without the statistics, or without the tree runs from the failing budget on).
    void failed(const QString& operation, const QString& message);
    void cancelled(quint64 requestId);
    void busyChanged(bool busy);

private:
    friend class AnalysisWorker;
    void schedule();

    QThread* thread_ = nullptr;
    AnalysisWorker* worker_ = nullptr;
    std::mutex mutex_;
    std::optional<ModelRequest> pendingLoad_;
    std::optional<std::pair<quint64, AnalysisRequest>> pendingAnalysis_;
    std::optional<std::pair<RunBundlePtr, int>> pendingAttention_;
    bool analysisRunning_ = false;  ///< guarded by mutex_
    quint64 nextId_ = 1;
    std::atomic<bool> cancel_{false};
    std::atomic<bool> busy_{false};
};

}  // namespace draftscope

Q_DECLARE_METATYPE(draftscope::ModelRequest)
Q_DECLARE_METATYPE(draftscope::AnalysisRequest)
