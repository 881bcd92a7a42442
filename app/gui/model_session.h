#pragma once
// Which models the engine holds and which are on their way: asks the AnalysisController to
// load, keeps the Models panel in step (fields, "Loading...", status, recent lists, the
// "fields differ" line) and tells Run whether the fields name other models.

#include "gui/analysis_controller.h"

#include <QObject>

namespace draftscope {

class ModelPanel;

class ModelSession : public QObject {
    Q_OBJECT
public:
    /// Neither is owned.
    ModelSession(AnalysisController* controller, ModelPanel* panel, QObject* parent = nullptr);

    /// Fills the Models fields with `r`, shows it as loading and asks the controller to load
    /// it. Returns false (and asks nothing) when `r` lacks the target or the drafter
    /// directory; *error then says so.
    bool load(const ModelRequest& r, QString* error);
    /// Whether the Models fields name other models than those loaded (or being loaded).
    bool fieldsDiffer() const;
    /// A finished load: the Models panel's state, status text and recent lists, the log.
    void noteLoaded(const ModelsLoaded& loaded);
    /// A failed load: the engine holds no models now.
    void noteLoadFailed();
    /// What the engine holds (an empty targetDir: nothing).
    const ModelRequest& loaded() const { return loaded_; }

signals:
    void logLine(const QString& line);

private:
    AnalysisController* controller_;
    ModelPanel* panel_;
    ModelRequest pending_;   ///< the last load asked for; remembered once it loads
    ModelRequest loaded_;    ///< what the engine holds (empty targetDir: nothing)
    bool inFlight_ = false;  ///< pending_ is queued or loading
};

}  // namespace draftscope
