#include "gui/model_session.h"

#include "gui/loaded_models.h"
#include "gui/model_panel.h"

namespace draftscope {

ModelSession::ModelSession(AnalysisController* controller, ModelPanel* panel, QObject* parent)
    : QObject(parent), controller_(controller), panel_(panel) {}

bool ModelSession::load(const ModelRequest& r, QString* error) {
    if (r.targetDir.isEmpty() || r.drafterDir.isEmpty()) {
        if (error) *error = tr("choose both a target directory and a drafter directory");
        return false;
    }
    panel_->setRequest(r);
    pending_ = r;
    inFlight_ = true;
    panel_->setLoaded(r);  // the fields now name what is being loaded
    panel_->setStatus(tr("Loading..."));
    emit logLine(tr("loading target %1, drafter %2 (%3%4, %5)")
                     .arg(r.targetDir, r.drafterDir, r.device,
                          r.gpuMemory.isEmpty() ? QString() : tr(", GPU memory %1").arg(r.gpuMemory), r.dtype));
    if (!r.drafterBDir.isEmpty()) emit logLine(tr("loading drafter B %1 to compare with").arg(r.drafterBDir));
    controller_->loadModels(r);
    return true;
}

bool ModelSession::fieldsDiffer() const { return !sameModels(panel_->request(), inFlight_ ? pending_ : loaded_); }

void ModelSession::noteLoaded(const ModelsLoaded& m) {
    loaded_ = m.request;
    if (sameModels(m.request, pending_)) inFlight_ = false;
    panel_->setLoaded(inFlight_ ? pending_ : loaded_);
    panel_->setStatus(describeLoadedModels(m));
    panel_->rememberRecent(m.request);  // only directories that loaded
    for (const QString& line : loadLogLines(m)) emit logLine(line);
}

void ModelSession::noteLoadFailed() {
    inFlight_ = false;
    loaded_ = ModelRequest{};
    panel_->setLoaded(loaded_);
}

}  // namespace draftscope
