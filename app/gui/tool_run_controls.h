#pragma once
// Run / Cancel / Export buttons, a progress bar and a status line for one Tools panel
// (Diagnose, Compare target loads) whose request runs on the AnalysisController's worker.

#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;

namespace draftscope {

class ExportableView;

class ToolRunControls : public QWidget {
    Q_OBJECT
public:
    explicit ToolRunControls(QWidget* parent = nullptr);
    /// Running: Run disabled, Cancel enabled (and the reverse).
    void setRunning(bool running);
    /// done of total steps; `stage` goes in the status line.
    void setProgress(qint64 done, qint64 total, const QString& stage);
    /// The status line (wraps; its tooltip repeats it).
    void setStatus(const QString& text);
    QString status() const;
    void setRunEnabled(bool enabled, const QString& why = {});
    void setExportEnabled(bool enabled);
    /// What Export... writes: `view`'s exportAll() into a directory the user picks (the
    /// status line then says how many files were written, or the error). Not owned.
    void setExportedView(ExportableView* view) { exported_ = view; }
    QPushButton* runButton() const { return run_; }
    QPushButton* cancelButton() const { return cancel_; }
    QPushButton* exportButton() const { return export_; }
    QProgressBar* progressBar() const { return progress_; }

signals:
    void runClicked();
    void cancelClicked();

private:
    QPushButton* run_;
    QPushButton* cancel_;
    QPushButton* export_;
    QProgressBar* progress_;
    QLabel* status_;
    bool running_ = false;
    bool runEnabled_ = false;
    ExportableView* exported_ = nullptr;
};

}  // namespace draftscope
