#include "gui/analysis_controller.h"

#include "draftscope/analysis.h"
#include "draftscope/errors.h"
#include "draftscope/settings_validation.h"
#include "draftscope/tokenizer.h"

#include <QThread>

#include <functional>
#include <memory>

namespace draftscope {

/// Lives on the worker thread; owns the Engine. process() drains the controller's pending
/// requests one at a time (load first, then analysis, then attention, then the tools).
class AnalysisWorker : public QObject {
    Q_OBJECT
public:
    explicit AnalysisWorker(AnalysisController* c) : c_(c) {}

public slots:
    void process() {
        for (;;) {
            std::optional<std::pair<quint64, ModelRequest>> load;
            std::optional<std::pair<quint64, AnalysisRequest>> analysis;
            std::optional<AnalysisController::AttentionRequest> attention;
            std::optional<std::pair<quint64, DiagnoseRequest>> diagnose;
            std::optional<std::pair<quint64, TargetLoadsRequest>> targetLoads;
            {
                std::lock_guard<std::mutex> lock(c_->mutex_);
                if (c_->pendingLoad_) load.swap(c_->pendingLoad_);
                else if (c_->pendingAnalysis_) analysis.swap(c_->pendingAnalysis_);
                else if (c_->pendingAttention_) attention.swap(c_->pendingAttention_);
                else if (c_->pendingDiagnose_) diagnose.swap(c_->pendingDiagnose_);
                else if (c_->pendingTargetLoads_) targetLoads.swap(c_->pendingTargetLoads_);
                else {
                    setBusy(false);
                    return;
                }
                c_->cancel_.store(false);
                c_->analysisRunning_ = analysis.has_value();
                c_->toolRunning_ = diagnose.has_value() || targetLoads.has_value();
            }
            setBusy(true);
            if (load) doLoad(load->first, load->second);
            else if (analysis) doAnalysis(analysis->first, analysis->second);
            else if (attention) doAttention(*attention);
            else if (diagnose) doDiagnose(diagnose->first, diagnose->second);
            else doTargetLoads(targetLoads->first, targetLoads->second);
            std::lock_guard<std::mutex> lock(c_->mutex_);
            c_->analysisRunning_ = false;
            c_->toolRunning_ = false;
        }
    }

private:
    void setBusy(bool b) {
        if (c_->busy_.exchange(b) != b) emit c_->busyChanged(b);
    }

    void doLoad(quint64 id, const ModelRequest& r) {
        try {
            LoadOptions opt;
            opt.device = r.device.toStdString();
            opt.dtype = r.dtype.toStdString();
            if (!r.gpuMemory.trimmed().isEmpty()) opt.deviceMemory = parseMemoryLimits(r.gpuMemory.trimmed().toStdString());
            engine_ = std::make_unique<Engine>();
            loadOptions_ = opt;
            ModelsLoaded loaded;
            loaded.requestId = id;
            loaded.request = r;
            loaded.target = engine_->loadTarget(r.targetDir.toStdString(), opt);
            loaded.drafter = engine_->loadDrafter(r.drafterDir.toStdString());
            if (!r.drafterBDir.isEmpty()) {
                try {
                    loaded.drafterB = engine_->loadDrafter(r.drafterBDir.toStdString());
                } catch (const std::exception& e) {
                    throw Error("drafter B: " + std::string(e.what()));
                }
            }
            c_->reply([c = c_, loaded] { emit c->modelsLoaded(loaded); });
        } catch (const std::exception& e) {
            engine_.reset();
            std::optional<quint64> dropped;
            {
                std::lock_guard<std::mutex> lock(c_->mutex_);
                if (c_->pendingAnalysis_) dropped = c_->pendingAnalysis_->first;
                c_->pendingAnalysis_.reset();  // it was meant for the models that failed to load
                c_->pendingDiagnose_.reset();
                c_->pendingTargetLoads_.reset();
            }
            fail(id, FailureKind::Load, QString::fromStdString(e.what()));
            // The Run queued behind this load did not run: say so (after the load's failure).
            if (dropped) fail(*dropped, FailureKind::Analysis, tr("not run: the models did not load"));
        }
    }

    void fail(quint64 id, FailureKind kind, const QString& message) {
        c_->reply([c = c_, id, kind, message] { emit c->failed(id, kind, message); });
    }

    void doAnalysis(quint64 id, const AnalysisRequest& r) {
        if (!engine_ || engine_->drafterCount() == 0) {
            fail(id, FailureKind::Analysis, "load a target and a drafter first");
            return;
        }
        c_->replyIfLatest(id, [c = c_, id] { emit c->analysisStarted(id); });
        try {
            // Drafter B (index 1) runs after A on the same prompt when two drafters are loaded.
            const bool compare = engine_->drafterCount() > 1 && r.settings.drafter == 0;
            RunBundle a, b;
            bool bStarted = false;
            // Every finished run but the last reaches the window at once as partialResult().
            const std::size_t runs = (1 + r.ddtreeBudgets.size()) * (compare ? 2 : 1);
            std::size_t done = 0;
            const auto publish = [&] {
                if (++done < runs)
                    c_->replyIfLatest(id, [c = c_, s = snapshot(a, bStarted ? &b : nullptr)] { emit c->partialResult(s); });
            };
            analyseWith(id, r, r.settings.drafter, compare ? QStringLiteral("drafter A: ") : QString(), a, publish);
            if (compare) {
                bStarted = true;
                analyseWith(id, r, 1, QStringLiteral("drafter B: "), b, publish);
            }
            c_->replyIfLatest(id, [c = c_, s = snapshot(a, bStarted ? &b : nullptr)] { emit c->analysisFinished(s); });
        } catch (const Cancelled&) {
            c_->reply([c = c_, id] { emit c->cancelled(id); });
        } catch (const std::exception& e) {
            fail(id, FailureKind::Analysis, QString::fromStdString(e.what()));
        }
    }

    /// A's analysis so far with B's (if started) as its comparison, the display pieces of
    /// every token they mention filled in; a copy the GUI thread can keep.
    RunBundlePtr snapshot(const RunBundle& a, const RunBundle* b) const {
        auto out = std::make_shared<RunBundle>(a);
        std::shared_ptr<RunBundle> other = b ? std::make_shared<RunBundle>(*b) : nullptr;
        const Tokenizer* tok = engine_->tokenizer();
        auto pieceOf = [tok](std::int64_t id) {
            return tok ? QString::fromStdString(tok->tokenPiece(id)) : QString("#%1").arg(id);
        };
        auto note = [&](std::int64_t id) {
            if (!out->tokenPieces.count(id)) out->tokenPieces.emplace(id, pieceOf(id));
        };
        for (RunBundle* x : {out.get(), other.get()}) {
            if (!x) continue;
            x->pieces.clear();
            for (auto id : x->run.outputIds) x->pieces.push_back(pieceOf(id));
            for (auto id : collectTokenIds(x->run, x->treeRuns)) note(id);
        }
        if (other) {
            other->tokenPieces = out->tokenPieces;
            out->comparison = other;
        }
        return out;
    }

    /// Fills `b` with the chain run, hidden-state statistics and DDTree runs of drafter
    /// `drafter` (analysePrompt), calling `finishedRun` after the chain run (with its
    /// statistics) and after each DDTree budget; `stagePrefix` goes before every stage name.
    /// A failing statistics or DDTree run is reported by failed() and the rest stands.
    /// Throws Cancelled and the chain run's errors.
    void analyseWith(quint64 id, const AnalysisRequest& r, int drafter, const QString& stagePrefix, RunBundle& b,
                     const std::function<void()>& finishedRun) {
        PromptAnalysisRequest request;
        request.prompt = r.prompt;
        request.settings = r.settings;
        request.settings.drafter = drafter;
        request.treeBudgets = r.ddtreeBudgets;
        // The whole committed sequence: prompt + generated (where drafting happens).
        request.hiddenStats = HiddenStatsScope::Output;
        request.histogramBins = 60;
        b.requestId = id;
        b.prompt = r.prompt;
        b.promptLabel = promptLabelOf(r.prompt, r.promptId);
        b.target = engine_->targetSummary();
        b.drafter = engine_->drafterSummary(drafter);
        AnalysisCallbacks callbacks;
        const auto stage = [this, id](const QString& name) {
            c_->replyIfLatest(id, [c = c_, id, name] { emit c->stageChanged(id, name); });
        };
        callbacks.stageStarted = [&](const AnalysisStage& st) {
            stage(stagePrefix + (st.kind == AnalysisStage::Kind::Chain
                                     ? QStringLiteral("chain (DFlash)")
                                     : QStringLiteral("DDTree budget %1 (%2 of %3)")
                                           .arg(st.budget).arg(st.index + 1).arg(st.count)));
        };
        callbacks.progress = [this, id](std::int64_t done, std::int64_t total) {
            c_->replyIfLatest(id, [c = c_, id, done, total] { emit c->progress(id, done, total); });
        };
        callbacks.partFinished = [&](const AnalysisStage& st, const PromptAnalysis& a) {
            if (st.kind == AnalysisStage::Kind::Tree) {
                b.treeRuns.push_back(a.trees.back());
            } else {
                b.run = a.run;
                b.hiddenStats = a.hiddenStats;
                if (!a.hiddenStatsError.empty())
                    fail(id, FailureKind::HiddenStates, stagePrefix + QString::fromStdString(a.hiddenStatsError));
            }
            finishedRun();
        };
        const auto analysis = analysePrompt(*engine_, request, callbacks, &c_->cancel_);
        if (!analysis.treeError.empty())  // e.g. a prompt whose tree outgrows the context
            fail(id, FailureKind::DdTree, stagePrefix + QStringLiteral("budget %1: %2").arg(analysis.failedTreeBudget)
                                                  .arg(QString::fromStdString(analysis.treeError)));
    }

    void doAttention(const AnalysisController::AttentionRequest& request) {
        const RunBundlePtr& bundle = request.bundle;
        const int step = request.step;
        try {
            if (!engine_ || engine_->drafterCount() == 0) throw Error("no models are loaded");
            const auto& drafter = engine_->drafterSummary(bundle->run.settings.drafter);
            if (drafter.directory != bundle->drafter.directory || engine_->targetSummary().directory != bundle->target.directory)
                throw Error("the models were reloaded since this run; run the prompt again to see its attention");
            auto attention = engine_->drafterAttention(bundle->run, step, bundle->run.settings.drafter);
            c_->reply([c = c_, tag = request.tag, id = bundle->requestId, attention = std::move(attention)] {
                if (tag == c->attentionTag_) emit c->attentionReady(id, attention);  // else superseded
            });
        } catch (const std::exception& e) {
            fail(bundle->requestId, FailureKind::Attention, QString::fromStdString(e.what()));
        }
    }

    void toolProgress(quint64 id, std::int64_t done, std::int64_t total, const QString& stage) {
        c_->reply([c = c_, id, done, total, stage] { emit c->toolProgress(id, done, total, stage); });
    }

    /// diagnoseDrafters() on the loaded drafters' paths. It loads them again (appended to the
    /// engine); whatever happens, the engine is truncated back to the drafters it held.
    void doDiagnose(quint64 id, const DiagnoseRequest& r) {
        try {
            if (!engine_ || engine_->drafterCount() == 0) throw Error("load a target and a drafter first");
            const int loaded = engine_->drafterCount();
            std::vector<std::string> paths = {engine_->drafterSummary(0).directory};
            if (r.includeB && loaded > 1) paths.push_back(engine_->drafterSummary(1).directory);
            struct Restore {
                Engine& e;
                int count;
                ~Restore() { e.truncateDrafters(count); }
            } restore{*engine_, loaded};
            const QString stage = paths.size() > 1 ? QStringLiteral("diagnosing drafters A and B")
                                                   : QStringLiteral("diagnosing drafter A");
            toolProgress(id, 0, static_cast<qint64>(paths.size() * r.prompts.size()), stage);
            auto result = std::make_shared<DiagnoseResult>();
            result->requestId = id;
            result->report = diagnoseDrafters(
                *engine_, paths, r.prompts, r.settings,
                [&](std::int64_t done, std::int64_t total) { toolProgress(id, done, total, stage); }, &c_->cancel_);
            // Which loaded drafter each ranked entry is (paths may repeat: first unused match).
            std::vector<bool> used(paths.size(), false);
            for (const auto& d : result->report.drafters) {
                int which = 0;
                for (std::size_t k = 0; k < paths.size(); ++k)
                    if (!used[k] && paths[k] == d.path) {
                        used[k] = true;
                        which = static_cast<int>(k);
                        break;
                    }
                result->which.push_back(which);
            }
            c_->reply([c = c_, res = DiagnoseResultPtr(result)] { emit c->diagnosisFinished(res); });
        } catch (const Cancelled&) {
            c_->reply([c = c_, id] { emit c->toolCancelled(id); });
        } catch (const std::exception& e) {
            fail(id, FailureKind::Diagnose, QString::fromStdString(e.what()));
        }
    }

    /// Forward of the loaded target (load A), then load B in an engine of its own (freed at
    /// the end) and its forward over the same prompt; compareTargetForwards() of the two.
    void doTargetLoads(quint64 id, const TargetLoadsRequest& r) {
        try {
            if (!engine_ || !engine_->hasTarget()) throw Error("load a target first");
            auto result = std::make_shared<TargetLoadsResult>();
            result->requestId = id;
            result->targetA = engine_->targetSummary();
            result->loadA = loadOptions_;
            result->loadB = r.loadB;
            const std::string dirB = r.targetBDir.isEmpty() ? result->targetA.directory : r.targetBDir.toStdString();
            const auto check = [this] {
                if (c_->cancel_.load()) throw Cancelled();
            };
            toolProgress(id, 0, 3, QStringLiteral("forward of load A (the loaded target)"));
            const ForwardResult a = engine_->forward(r.prompt);
            check();
            toolProgress(id, 1, 3, QStringLiteral("loading load B: %1 (%2, %3)")
                                       .arg(QString::fromStdString(dirB), QString::fromStdString(r.loadB.device),
                                            QString::fromStdString(r.loadB.dtype)));
            ForwardResult b;
            {
                Engine other;
                result->targetB = other.loadTarget(dirB, r.loadB);
                check();
                toolProgress(id, 2, 3, QStringLiteral("forward of load B"));
                b = other.forward(r.prompt);
            }
            result->comparison = compareTargetForwards(a, b);
            toolProgress(id, 3, 3, QStringLiteral("done"));
            c_->reply([c = c_, res = TargetLoadsResultPtr(result)] { emit c->targetLoadsCompared(res); });
        } catch (const Cancelled&) {
            c_->reply([c = c_, id] { emit c->toolCancelled(id); });
        } catch (const std::exception& e) {
            fail(id, FailureKind::TargetLoads, QString::fromStdString(e.what()));
        }
    }

    AnalysisController* c_;
    std::unique_ptr<Engine> engine_;
    LoadOptions loadOptions_;  ///< how the engine's target was loaded
};

QString failureName(FailureKind kind) {
    switch (kind) {
    case FailureKind::Load: return QStringLiteral("load");
    case FailureKind::Analysis: return QStringLiteral("analysis");
    case FailureKind::HiddenStates: return QStringLiteral("hidden states");
    case FailureKind::DdTree: return QStringLiteral("ddtree");
    case FailureKind::Attention: return QStringLiteral("attention");
    case FailureKind::Diagnose: return QStringLiteral("diagnose");
    case FailureKind::TargetLoads: return QStringLiteral("target loads");
    }
    return QStringLiteral("unknown");
}

AnalysisController::AnalysisController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<RunBundlePtr>();
    qRegisterMetaType<ModelSummary>();
    qRegisterMetaType<DrafterAttention>();
    qRegisterMetaType<ModelRequest>();
    qRegisterMetaType<AnalysisRequest>();
    qRegisterMetaType<ModelsLoaded>();
    qRegisterMetaType<FailureKind>();
    qRegisterMetaType<DiagnoseResultPtr>();
    qRegisterMetaType<TargetLoadsResultPtr>();
    thread_ = new QThread(this);
    thread_->setObjectName("draftscope-engine");
    worker_ = new AnalysisWorker(this);
    worker_->moveToThread(thread_);
    connect(thread_, &QThread::finished, worker_, &QObject::deleteLater);
    thread_->start();
}

AnalysisController::~AnalysisController() {
    cancel();
    thread_->quit();
    thread_->wait();
}

void AnalysisController::schedule() {
    QMetaObject::invokeMethod(worker_, "process", Qt::QueuedConnection);
}

void AnalysisController::reply(std::function<void()> emitReply) {
    QMetaObject::invokeMethod(this, std::move(emitReply), Qt::QueuedConnection);
}

void AnalysisController::replyIfLatest(quint64 id, std::function<void()> emitReply) {
    reply([this, id, f = std::move(emitReply)] {
        if (isLatestAnalysis(id)) f();  // else a newer analysis superseded it
    });
}

quint64 AnalysisController::loadModels(const ModelRequest& request) {
    quint64 id;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        id = nextLoadId_++;
        pendingLoad_ = std::make_pair(id, request);
        pendingAnalysis_.reset();  // an analysis queued for the old models is stale
        pendingAttention_.reset();
        pendingDiagnose_.reset();
        pendingTargetLoads_.reset();
    }
    schedule();
    return id;
}

quint64 AnalysisController::analyse(const AnalysisRequest& request) {
    quint64 id;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        id = nextId_++;
        latestAnalysis_ = id;
        pendingAnalysis_ = std::make_pair(id, request);
        if (analysisRunning_) cancel_.store(true);  // the newer request replaces the running one
    }
    schedule();
    return id;
}

void AnalysisController::requestAttention(const RunBundlePtr& bundle, int step) {
    if (!bundle) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pendingAttention_ = AttentionRequest{++attentionTag_, bundle, step};
    }
    schedule();
}

void AnalysisController::cancel() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pendingLoad_.reset();
        pendingAnalysis_.reset();
        pendingAttention_.reset();
        pendingDiagnose_.reset();
        pendingTargetLoads_.reset();
    }
    cancel_.store(true);
}

template <class Request>
quint64 AnalysisController::queueTool(std::optional<std::pair<quint64, Request>>& pending, const Request& request) {
    quint64 id;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        id = nextToolId_++;
        pending = std::make_pair(id, request);
    }
    schedule();
    return id;
}

quint64 AnalysisController::diagnose(const DiagnoseRequest& request) { return queueTool(pendingDiagnose_, request); }

quint64 AnalysisController::compareTargetLoads(const TargetLoadsRequest& request) {
    return queueTool(pendingTargetLoads_, request);
}

void AnalysisController::cancelTool() {
    std::lock_guard<std::mutex> lock(mutex_);
    pendingDiagnose_.reset();
    pendingTargetLoads_.reset();
    if (toolRunning_) cancel_.store(true);
}

}  // namespace draftscope

#include "analysis_controller.moc"
