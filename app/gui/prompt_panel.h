#pragma once
// Prompt editing and running: editor, chat/thinking toggles, generation settings, a
// searchable prompt-set list, Run / Cancel and progress.

#include "gui/analysis_controller.h"
#include "gui/prompt_set.h"

#include <QWidget>

class QCheckBox;
class QDoubleSpinBox;
class QLineEdit;
class QListView;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QStandardItemModel;

namespace draftscope {

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(QWidget* parent = nullptr);
    AnalysisRequest request() const;
    void setPromptText(const QString& text);
    QString promptText() const;
    void setPromptSet(const QVector<PromptEntry>& prompts);
    /// Loads a JSONL prompt set; throws draftscope::Error on a bad file.
    void loadPromptSet(const QString& path);
    void setMaxNewTokens(int n);
    void setChat(bool chat);
    void setBusy(bool busy);
    void setProgress(qint64 done, qint64 total);
    QStandardItemModel* promptSetModel() const { return setModel_; }
    QSortFilterProxyModel* promptSetFilter() const { return filter_; }

signals:
    void runRequested(const draftscope::AnalysisRequest& request);
    void cancelRequested();

private:
    QPlainTextEdit* editor_;
    QCheckBox* chat_;
    QCheckBox* thinking_;
    QSpinBox* maxNew_;
    QCheckBox* ignoreEos_;
    QDoubleSpinBox* temperature_;
    QSpinBox* seed_;
    QLineEdit* search_;
    QListView* list_;
    QStandardItemModel* setModel_;
    QSortFilterProxyModel* filter_;
    QPushButton* run_;
    QPushButton* cancel_;
    QProgressBar* progress_;
};

}  // namespace draftscope
