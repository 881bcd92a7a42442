#pragma once
// Checkpoint inspector window: a checkpoint's tensors with statistics, its config fields,
// the architecture check, and a per-tensor diff against a second checkpoint. The work runs
// on a background thread; the window stays responsive and every table exports CSV/JSON.

#include "draftscope/inspector.h"

#include <QDialog>
#include <QFutureWatcher>

class QLabel;
class QPushButton;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QPlainTextEdit;

namespace draftscope {

/// Non-modal window over inspectCheckpoint / diffCheckpoints (backend/include/draftscope/inspector.h).
class InspectorDialog : public QDialog {
    Q_OBJECT
public:
    explicit InspectorDialog(QWidget* parent = nullptr);

    /// Starts inspecting `path` (a model directory or a .pt file) in the background.
    void inspect(const QString& path);
    /// Starts the diff of the inspected checkpoint against `other` in the background.
    void diffAgainst(const QString& other);

    /// Table models, for tests and export: tensors (name, shape, dtype, numel, mean, std,
    /// rms, max|x|, non-finite), config (key, value), diff (tensor, rms A, rms B, max|A-B|,
    /// |A-B|/|B|, cosine).
    const QStandardItemModel* tensorTable() const { return tensors_; }
    const QStandardItemModel* configTable() const { return config_; }
    const QStandardItemModel* diffTable() const { return diff_; }
    /// The architecture-check and notes text shown on the "Check" tab.
    QString checkText() const;
    /// True while a background job runs.
    bool busy() const;

signals:
    /// Emitted when an inspection or diff finishes (ok) or fails (message names the file).
    void finished(bool ok, const QString& message);

private:
    void showInspection(const CheckpointInspection& r);
    void showDiff(const CheckpointDiff& d);
    void fail(const QString& message);
    void exportCurrentTable();

    QString path_;
    QLabel* summary_;
    QTabWidget* tabs_;
    QTableView *tensorView_, *configView_, *diffView_;
    QPlainTextEdit* check_;
    QStandardItemModel *tensors_, *config_, *diff_;
    QPushButton *openButton_, *diffButton_, *exportButton_;
    QFutureWatcher<void> watcher_;
};

}  // namespace draftscope
