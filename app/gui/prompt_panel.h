#pragma once
// Prompt editing and running: editor, chat/thinking toggles, generation settings, a
// searchable prompt-set list, Run / Cancel and progress.

#include "gui/analysis_controller.h"
#include "gui/prompt_set.h"

#include <QWidget>

class QComboBox;

class QCheckBox;
class QLabel;
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

/// The budget field's text through parseTreeBudgets (draftscope/analysis.h: entries separated
/// by commas and/or spaces, each in 1..kMaxTreeBudget and given once, sorted; empty or "0" =
/// no tree runs). Returns false and sets *error to its message for a bad list.
bool parseDdtreeBudgets(const QString& text, std::vector<int>* budgets, QString* error);

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(QWidget* parent = nullptr);
    /// The editor's prompt and the settings. promptId is the id of the prompt-set entry whose
    /// text the editor holds unchanged (picked from the list, or the --demo sample), else empty.
    /// A budget field that cannot run (bad text, or budgets with a temperature above 0) gives
    /// no budgets and its message in ddtreeBudgetError (one parse, the backend's rules).
    AnalysisRequest request() const;
    void setPromptText(const QString& text);
    QString promptText() const;
    void setPromptSet(const QVector<PromptEntry>& prompts);
    /// The prompt set in the list (all entries, whatever the search field filters).
    QVector<PromptEntry> promptSet() const;
    /// Loads a JSONL prompt set; throws draftscope::Error on a bad file.
    void loadPromptSet(const QString& path);
    void setMaxNewTokens(int n);
    /// Selects the verification loop revision of the next runs.
    void setLoopRevision(LoopRevision loop);
    void setChat(bool chat);
    /// Sets the DDTree budget field (e.g. from --ddtree-budget); an empty list clears it.
    void setDdtreeBudgets(const std::vector<int>& budgets);
    QString ddtreeBudgetText() const;
    /// "" if the budget field parses, else the message shown under it.
    QString ddtreeBudgetError() const;
    void setBusy(bool busy);
    void setProgress(qint64 done, qint64 total);
    /// An empty bar reading `text` (no live run to count: a fresh window, a recorded prompt).
    void resetProgress(const QString& text);
    /// The bar's text as shown ("12 / 96 tokens", "no run yet").
    QString progressBarText() const;
    /// Names the run the progress bar counts, e.g. "drafter B: DDTree budget 8 (2 of 4)",
    /// in the line above the bar (which counts "done / total tokens").
    void setStage(const QString& stage);
    /// Replaces that line by `text` (e.g. "cancelled (kept: chain)") until the next
    /// setStage(). The line wraps at the panel's width (never clipped); its tooltip repeats it.
    void setProgressText(const QString& text);
    /// The line above the progress bar: the stage, or the text set by setProgressText().
    QString progressText() const;
    /// Fills the editor and the settings with a recorded run's prompt and settings and says
    /// so in a line above the editor (`source`, e.g. "prompt 'p3' of R.dsresults"); an empty
    /// `source` hides that line. Token-id prompts leave the editor as it is (the line says why).
    void showRecorded(const PromptSpec& prompt, const RunSettings& settings, const std::vector<int>& ddtreeBudgets,
                      const QString& source);
    /// The line above the editor naming the recorded run shown (empty when hidden).
    QString recordedSource() const;
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
    QComboBox* loop_;          ///< loop revision: "current" / "2026-04" (item data = LoopRevision)
    QDoubleSpinBox* topP_;     ///< sampling nucleus filter (1 = off)
    QSpinBox* topK_;           ///< sampling top-k filter (0 = off)
    QSpinBox* seed_;
    QLineEdit* budgets_;
    QLabel* budgetError_;
    QLineEdit* search_;
    QListView* list_;
    QStandardItemModel* setModel_;
    QSortFilterProxyModel* filter_;
    QPushButton* run_;
    QPushButton* cancel_;
    QProgressBar* progress_;
    QLabel* stage_;  ///< the run being counted, or how the analysis ended (wraps)
    QLabel* recorded_;
};

}  // namespace draftscope
