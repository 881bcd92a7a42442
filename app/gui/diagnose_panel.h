#pragma once
// The Diagnose dock (Tools > Diagnose drafter(s)): diagnoseDrafters() on the loaded drafter
// A (and B) on the AnalysisController's worker, its findings sorted by severity, the
// convention probes' plot, links from a finding to the view that shows it, and export.

#include "diagnosis_findings_model.h"
#include "exportable_view.h"
#include "gui/analysis_controller.h"
#include "gui/prompt_set.h"

#include <QVector>
#include <QWidget>

#include <functional>
#include <map>

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace draftscope {

class ProbeTauPlot;
class ToolRunControls;

class DiagnosePanel : public QWidget, public ExportableView {
    Q_OBJECT
public:
    /// `controller` runs the diagnosis (not owned).
    explicit DiagnosePanel(AnalysisController* controller, QWidget* parent = nullptr);

    /// The loaded models (empty targetDir: none): Run is enabled when a drafter is loaded,
    /// "with drafter B" when B is. A shown result stays (it names its drafters).
    void setLoadedModels(const ModelRequest& loaded);
    /// Where the "prompt set" choice reads its prompts (the Prompt panel's list).
    void setPromptSetSource(std::function<QVector<PromptEntry>()> source);

    /// The request Run sends: the chosen prompts, max new tokens and probe families.
    DiagnoseRequest request() const;
    /// Runs request() (also what the Run button does); returns the request id, 0 if nothing
    /// is loaded or no prompt or no probe family is chosen (the status line says why).
    quint64 run();

    // Options (for scripts and tests).
    QComboBox* promptsBox() const { return prompts_; }
    QSpinBox* maxNewBox() const { return maxNew_; }
    /// The checkbox of probe family `family` (a name of diagnoseProbeFamilies()), or null.
    QCheckBox* probeBox(const QString& family) const;
    QCheckBox* includeBBox() const { return includeB_; }
    ToolRunControls* controls() const { return controls_; }

    /// The findings of the shown report and the convention probes' plot.
    DiagnosisFindingsModel* findings() const { return findings_; }
    QTableView* findingsView() const { return table_; }
    ProbeTauPlot* probePlot() const { return plot_; }
    /// The shown diagnosis (null: none yet).
    const DiagnoseResultPtr& result() const { return result_; }
    /// Emits showFinding() for findings row `row` (what a double-click and Show do); false
    /// if no view shows that finding or the findings are stale.
    bool showFindingAt(int row);
    /// The selected finding in full: severity, id, drafter, message, evidence ("" if none).
    QString detailText() const;
    /// The shown findings are of drafters no longer loaded (or a new diagnosis replaced them).
    bool findingsStale() const { return stale_; }
    QString staleText() const;
    /// The cost line shown before Run: about how many drafter calls the request makes.
    QString costText() const;
    /// Seconds per drafter call to turn the estimate into time (the last analysis's
    /// decode time per verify step); 0: unknown.
    void setSecondsPerCall(double seconds);

    QString exportName() const override { return QStringLiteral("diagnose"); }
    /// The probe plot (diagnose_convention_probes.{png,svg,pdf,csv,json}), the findings
    /// (diagnose_findings.{csv,json}) and the whole report as draftscope-cli diagnose --json
    /// writes it (diagnose_report.json).
    QStringList exportAll(const QString& dir, QString* error) override;

signals:
    /// Open `view` for drafter `drafter` (0 = A, 1 = B).
    /// Show the view of a finding of drafter `drafter` (0 = A, 1 = B), with what to select in it.
    void showFinding(const draftscope::FindingTarget& target, int drafter);
    void logLine(const QString& line);

private:
    void showResult(const DiagnoseResultPtr& result);
    void updateCost();
    void updateDetail();
    void markStale(const QString& why);
    static QString formatSeconds(double seconds);
    /// "A: name" / "B: name" per report.drafters entry.
    QStringList drafterNames(const DiagnoseResult& result) const;
    void updateShowButton();

    AnalysisController* controller_;
    std::function<QVector<PromptEntry>()> promptSet_;
    QComboBox* prompts_;
    QSpinBox* maxNew_;
    std::map<QString, QCheckBox*> probes_;
    QCheckBox* includeB_;
    QLabel* models_;
    ToolRunControls* controls_;
    DiagnosisFindingsModel* findings_;
    QTableView* table_;
    QPushButton* show_;
    ProbeTauPlot* plot_;
    ModelRequest loaded_;
    DiagnoseResultPtr result_;
    quint64 current_ = 0;  ///< the request whose replies are shown
    QLabel* cost_;
    QLabel* stale_label_;
    QLabel* detail_;
    bool stale_ = false;
    double secondsPerCall_ = 0;
    std::int64_t estimatedCalls_ = 0;
    qint64 startedMs_ = -1;  ///< wall clock of the running diagnosis's first progress (ms since epoch)
};

}  // namespace draftscope
