#pragma once
// Model selection: target and drafter directories (with recent entries), device, dtype.

#include "gui/analysis_controller.h"

#include <QWidget>

class QComboBox;
class QPushButton;
class QLabel;

namespace draftscope {

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);
    ModelRequest request() const;
    void setTargetDir(const QString& dir);
    void setDrafterDir(const QString& dir);
    /// Shows what is loaded (or an error) under the form.
    void setStatus(const QString& text);
    /// Adds both directories to the recent lists in QSettings.
    void rememberRecent(const ModelRequest& r);

signals:
    void loadRequested(const draftscope::ModelRequest& request);

private:
    QComboBox* target_;
    QComboBox* drafter_;
    QComboBox* device_;
    QComboBox* dtype_;
    QPushButton* load_;
    QLabel* status_;
};

}  // namespace draftscope
