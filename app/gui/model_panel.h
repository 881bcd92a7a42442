#pragma once
// Model selection: target and drafter directories (with recent entries), an optional second
// drafter (B) to compare with, device (or devices the target is split across), their
// memory limits, dtype.

#include "gui/analysis_controller.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QPushButton;
class QLabel;
class QLineEdit;

namespace draftscope {

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);
    ModelRequest request() const;
    void setTargetDir(const QString& dir);
    void setDrafterDir(const QString& dir);
    /// Sets drafter B's directory and turns comparing on (off for an empty `dir`).
    void setDrafterBDir(const QString& dir);
    /// Fills every field from `r` (directories, drafter B and comparing, device, GPU memory,
    /// dtype), e.g. for a load asked for from the command line.
    void setRequest(const ModelRequest& r);
    /// Whether "Compare with drafter B" is on (request().drafterBDir is then B's field).
    bool isComparing() const;
    /// Shows what is loaded (or an error) under the form.
    void setStatus(const QString& text);
    QString status() const;
    /// Adds the directories to the recent lists in QSettings (drafter B has its own list).
    void rememberRecent(const ModelRequest& r);
    /// What the engine has loaded (or is loading); an empty targetDir = nothing. While the
    /// fields differ from it, a line under the form says so (Run reloads, or Load).
    void setLoaded(const ModelRequest& loaded);
    /// Whether request() names other models (directories, B, device, GPU memory, dtype) than
    /// setLoaded().
    bool differsFromLoaded() const;

    /// What is wrong with the Device, GPU memory and Dtype fields, checked as the engine
    /// checks a load (validate(LoadOptions), parseMemoryLimits): "Device: expected ..., found
    /// 'cuda:x'"; empty when they are valid. Shown under the fields as they are typed.
    QString settingsError() const;

signals:
    void loadRequested(const draftscope::ModelRequest& request);

private:
    void updateChangedState();
    void updateSettingsError();
    QLabel* settingsError_ = nullptr;
    QComboBox* target_;
    QComboBox* drafter_;
    QCheckBox* compare_;
    QComboBox* drafterB_;
    QWidget* drafterBRow_;
    QComboBox* device_;
    QLineEdit* gpuMemory_;
    QComboBox* dtype_;
    QPushButton* load_;
    QLabel* status_;
    QLabel* changed_;  ///< "fields differ from the loaded models" (hidden while they match)
    ModelRequest loaded_;
};

/// True when `a` and `b` name the same target, drafter, drafter B (directories compared
/// after resolving symlinks and trailing slashes), device, GPU memory limits (lists compared
/// entry by entry, spaces around entries ignored) and dtype.
bool sameModels(const ModelRequest& a, const ModelRequest& b);

}  // namespace draftscope
