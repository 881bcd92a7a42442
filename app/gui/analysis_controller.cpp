#include "gui/analysis_controller.h"

#include "draftscope/errors.h"
#include "draftscope/tokenizer.h"

#include <QThread>

#include <functional>

namespace draftscope {

/// Lives on the worker thread; owns the Engine. process() drains the controller's pending
/// requests one at a time (load first, then analysis, then attention).
class AnalysisWorker : public QObject {
    Q_OBJECT
public:
    explicit AnalysisWorker(AnalysisController* c) : c_(c) {}

public slots:
    void process() {
        for (;;) {
            std::optional<ModelRequest> load;
            std::optional<std::pair<quint64, AnalysisRequest>> analysis;
            std::optional<std::pair<RunBundlePtr, int>> attention;
            {
                std::lock_guard<std::mutex> lock(c_->mutex_);
                if (c_->pendingLoad_) load.swap(c_->pendingLoad_);
                else if (c_->pendingAnalysis_) analysis.swap(c_->pendingAnalysis_);
                else if (c_->pendingAttention_) attention.swap(c_->pendingAttention_);
                else {
                    setBusy(false);
                    return;
                }
                c_->cancel_.store(false);
                c_->analysisRunning_ = analysis.has_value();
            }
            setBusy(true);
            if (load) doLoad(*load);
            else if (analysis) doAnalysis(analysis->first, analysis->second);
            else doAttention(attention->first, attention->second);
            std::lock_guard<std::mutex> lock(c_->mutex_);
            c_->analysisRunning_ = false;
        }
    }

private:
    void setBusy(bool b) {
        if (c_->busy_.exchange(b) != b) emit c_->busyChanged(b);
    }

    void doLoad(const ModelRequest& r) {
        try {
            LoadOptions opt;
            opt.device = r.device.toStdString();
            opt.dtype = r.dtype.toStdString();
            engine_ = std::make_unique<Engine>();
            const auto target = engine_->loadTarget(r.targetDir.toStdString(), opt);
            const auto drafter = engine_->loadDrafter(r.drafterDir.toStdString());
            if (!r.drafterBDir.isEmpty()) {
                try {
                    const auto drafterB = engine_->loadDrafter(r.drafterBDir.toStdString());
                    emit c_->comparisonDrafterLoaded(drafterB);
                } catch (const std::exception& e) {
                    throw Error("drafter B: " + std::string(e.what()));
                }
            }
            emit c_->modelsLoaded(target, drafter, r);
        } catch (const std::exception& e) {
            engine_.reset();
            {
                std::lock_guard<std::mutex> lock(c_->mutex_);
                c_->pendingAnalysis_.reset();  // it was meant for the models that failed to load
            }
            emit c_->failed("load", QString::fromStdString(e.what()));
        }
    }

    void doAnalysis(quint64 id, const AnalysisRequest& r) {
        if (!engine_ || engine_->drafterCount() == 0) {
            emit c_->failed("analysis", "load a target and a drafter first");
            return;
        }
        emit c_->analysisStarted(id);
        try {
            // Drafter B (index 1) runs after A on the same prompt when two drafters are loaded.
            const bool compare = engine_->drafterCount() > 1 && r.settings.drafter == 0;
            RunBundle a, b;
            bool bStarted = false;
            // Every finished run but the last reaches the window at once as partialResult().
            const std::size_t runs = (1 + r.ddtreeBudgets.size()) * (compare ? 2 : 1);
            std::size_t done = 0;
            const auto publish = [&] {
                if (++done < runs) emit c_->partialResult(snapshot(a, bStarted ? &b : nullptr));
            };
            analyseWith(id, r, r.settings.drafter, compare ? QStringLiteral("drafter A: ") : QString(), a, publish);
            if (compare) {
                bStarted = true;
                analyseWith(id, r, 1, QStringLiteral("drafter B: "), b, publish);
            }
            emit c_->analysisFinished(snapshot(a, bStarted ? &b : nullptr));
        } catch (const Cancelled&) {
            emit c_->cancelled(id);
        } catch (const std::exception& e) {
            emit c_->failed("analysis", QString::fromStdString(e.what()));
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
            for (auto id : x->run.outputIds) note(id);
            for (const auto& st : x->run.steps) {
                note(st.anchor);
                for (auto id : st.drafted) note(id);
                for (auto id : st.targetTokens) note(id);
                for (const auto& top : st.draftTopIds)
                    for (auto id : top) note(id);
            }
            for (const auto& tr : x->treeRuns) {
                for (auto id : tr.outputIds) note(id);
                for (const auto& st : tr.steps) {
                    for (auto id : st.tokens) note(id);
                    for (auto id : st.targetChoice) note(id);
                    note(st.bonusToken);
                }
            }
        }
        if (other) {
            other->tokenPieces = out->tokenPieces;
            out->comparison = other;
        }
        return out;
    }

    /// Fills `b` with the chain run, hidden-state statistics and DDTree runs of drafter
    /// `drafter`, calling `finishedRun` after the chain run (with its statistics) and after
    /// each DDTree budget; `stagePrefix` goes before every stage name. Throws Cancelled and
    /// the run's errors.
    void analyseWith(quint64 id, const AnalysisRequest& r, int drafter, const QString& stagePrefix, RunBundle& b,
                     const std::function<void()>& finishedRun) {
        RunSettings settings = r.settings;
        settings.drafter = drafter;
        b.requestId = id;
        b.prompt = r.prompt;
        b.promptLabel = promptLabelOf(r.prompt, r.promptId);
        b.target = engine_->targetSummary();
        b.drafter = engine_->drafterSummary(drafter);
        const auto progress = [this, id](std::int64_t done, std::int64_t total) { emit c_->progress(id, done, total); };
        emit c_->stageChanged(id, stagePrefix + QStringLiteral("chain (DFlash)"));
        b.run = engine_->run(r.prompt, settings, progress, &c_->cancel_);
        PromptSpec ids;  // the whole committed sequence: prompt + generated (where drafting happens)
        ids.kind = PromptSpec::Kind::Ids;
        ids.ids = b.run.outputIds;
        try {  // the run stands even if the statistics fail (e.g. non-finite activations)
            b.hiddenStats = engine_->hiddenStateStats(ids, drafter, 60, std::int64_t(b.run.promptIds.size()));
        } catch (const std::exception& e) {
            emit c_->failed("hidden states", stagePrefix + QString::fromStdString(e.what()));
        }
        finishedRun();
        // DDTree runs on the same prompt; Cancelled propagates (the whole analysis stops).
        for (std::size_t i = 0; i < r.ddtreeBudgets.size(); ++i) {
            const int budget = r.ddtreeBudgets[i];
            emit c_->stageChanged(id, stagePrefix + QStringLiteral("DDTree budget %1 (%2 of %3)").arg(budget).arg(i + 1)
                                          .arg(r.ddtreeBudgets.size()));
            try {
                b.treeRuns.push_back(engine_->runTree(r.prompt, settings, budget, progress, &c_->cancel_));
            } catch (const Cancelled&) {
                throw;
            } catch (const std::exception& e) {  // e.g. a hybrid target, or temperature > 0
                emit c_->failed("ddtree", stagePrefix + QStringLiteral("budget %1: %2").arg(budget)
                                              .arg(QString::fromStdString(e.what())));
                break;
            }
            finishedRun();
        }
    }

    void doAttention(const RunBundlePtr& bundle, int step) {
        try {
            if (!engine_ || engine_->drafterCount() == 0) throw Error("no models are loaded");
            const auto& drafter = engine_->drafterSummary(bundle->run.settings.drafter);
            if (drafter.directory != bundle->drafter.directory || engine_->targetSummary().directory != bundle->target.directory)
                throw Error("the models were reloaded since this run; run the prompt again to see its attention");
            emit c_->attentionReady(bundle->requestId,
                                    engine_->drafterAttention(bundle->run, step, bundle->run.settings.drafter));
        } catch (const std::exception& e) {
            emit c_->failed("attention", QString::fromStdString(e.what()));
        }
    }

    AnalysisController* c_;
    std::unique_ptr<Engine> engine_;
};

AnalysisController::AnalysisController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<RunBundlePtr>();
    qRegisterMetaType<ModelSummary>();
    qRegisterMetaType<DrafterAttention>();
    qRegisterMetaType<ModelRequest>();
    qRegisterMetaType<AnalysisRequest>();
    thread_ = new QThread(this);
    thread_->setObjectName("draftscope-engine");
    worker_ = new AnalysisWorker(this);
    worker_->moveToThread(thread_);
    connect(thread_, &QThread::finished, worker_, &QObject::deleteLater);
    thread_->start();
}

AnalysisController::~AnalysisController() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pendingLoad_.reset();
        pendingAnalysis_.reset();
        pendingAttention_.reset();
    }
    cancel_.store(true);
    thread_->quit();
    thread_->wait();
}

void AnalysisController::schedule() {
    QMetaObject::invokeMethod(worker_, "process", Qt::QueuedConnection);
}

void AnalysisController::loadModels(const ModelRequest& request) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pendingLoad_ = request;
        pendingAnalysis_.reset();  // an analysis queued for the old models is stale
        pendingAttention_.reset();
    }
    schedule();
}

quint64 AnalysisController::analyse(const AnalysisRequest& request) {
    quint64 id;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        id = nextId_++;
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
        pendingAttention_ = std::make_pair(bundle, step);
    }
    schedule();
}

void AnalysisController::cancel() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pendingLoad_.reset();
        pendingAnalysis_.reset();
        pendingAttention_.reset();
    }
    cancel_.store(true);
}

}  // namespace draftscope

#include "analysis_controller.moc"
