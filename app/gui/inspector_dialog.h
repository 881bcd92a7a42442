#pragma once
// Checkpoint inspector window: a checkpoint's tensors with statistics, its config fields,
// the architecture check, and a per-tensor diff against a second checkpoint. The work runs
// on a background thread; the window stays responsive and every table exports CSV/JSON.

#include "draftscope/inspector.h"

#include <QDialog>
#include <QFutureWatcher>

class QComboBox;
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
    /// Offers the checkpoints the window has loaded (label e.g. "target", path) in a
    /// "Loaded:" selector with Inspect and Diff buttons; an empty list hides the row.
    void setLoadedCheckpoints(const QList<QPair<QString, QString>>& checkpoints);
    /// Paths offered by setLoadedCheckpoints(), in order.
    QStringList loadedCheckpoints() const;

    /// Table models, for tests and export: tensors (name, shape, dtype, numel, mean, std,
    /// rms, max|x|, non-finite; numel an integer), config (key, value), diff (tensor,
    /// shape A, shape B, rms A, rms B, max|A-B|, |A-B|/|B|, cosine; sorted by |A-B|/|B|,
    /// largest change first).
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
    QWidget* loadedRow_;
    QComboBox* loaded_;
    QPushButton* diffLoaded_;
    QFutureWatcher<void> watcher_;
};

}  // namespace draftscope
