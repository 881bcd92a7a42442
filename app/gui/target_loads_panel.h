#pragma once
// The Target loads dock (Tools > Compare target loads): the loaded target (load A) against
// another load of the same model (load B: its other layout's directory, another dtype or
// device) on the Prompt panel's prompt, on the AnalysisController's worker; shows
// TargetLoadsView (per-layer cosine plot, table, verdict).

#include "exportable_view.h"
#include "gui/analysis_controller.h"

#include <QWidget>

#include <functional>

class QComboBox;
class QLabel;
class QLineEdit;

namespace draftscope {

class TargetLoadsView;
class ToolRunControls;

class TargetLoadsPanel : public QWidget, public ExportableView {
    Q_OBJECT
public:
    /// `controller` runs the comparison (not owned).
    explicit TargetLoadsPanel(AnalysisController* controller, QWidget* parent = nullptr);

    /// The loaded models (empty targetDir: none): load A is the loaded target as loaded;
    /// load B's directory field starts at the same directory.
    void setLoadedModels(const ModelRequest& loaded);
    /// Where the prompt comes from (the Prompt panel's editor).
    void setPromptSource(std::function<PromptSpec()> source);

    TargetLoadsRequest request() const;
    /// Runs request(); returns its id, 0 if no target is loaded or the prompt is empty (the
    /// status line says why).
    quint64 run();

    QLineEdit* targetBEdit() const { return dirB_; }
    QComboBox* dtypeBBox() const { return dtypeB_; }
    QComboBox* deviceBBox() const { return deviceB_; }
    ToolRunControls* controls() const { return controls_; }
    TargetLoadsView* view() const { return view_; }
    const TargetLoadsResultPtr& result() const { return result_; }

    QString exportName() const override;
    QStringList exportAll(const QString& dir, QString* error) override;

signals:
    void logLine(const QString& line);

private:
    AnalysisController* controller_;
    std::function<PromptSpec()> prompt_;
    QLabel* loadA_;
    QLineEdit* dirB_;
    QComboBox* dtypeB_;
    QComboBox* deviceB_;
    ToolRunControls* controls_;
    TargetLoadsView* view_;
    ModelRequest loaded_;
    TargetLoadsResultPtr result_;
    quint64 current_ = 0;
};

}  // namespace draftscope
