#pragma once
// The "Results" panel: the prompts of an opened results file as a sortable table (worst tau
// first), a drafter selector and the recorded models' availability.

#include "exportable_view.h"
#include "gui/recorded_results.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;

namespace draftscope {

/// Table columns: #, id, prompt tokens, generated, steps, tau per drafter, DDTree tau per
/// drafter and budget, error. Numbers sort numerically (failed prompts last); the default
/// sort is the selected drafter's tau ascending. Selecting a row or another drafter emits
/// promptSelected(). Exports the table (in view order) as CSV/JSON.
class ResultsPanel : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit ResultsPanel(QWidget* parent = nullptr);

    /// Shows `results` (null clears), sorted by drafter 0's tau, and selects the first row.
    void setResults(const ResultsFilePtr& results, const QString& path);
    const ResultsFilePtr& results() const { return results_; }
    /// Enables "Load recorded models" (reason empty) or explains why it is unavailable.
    void setModelsAvailability(const QString& missingReason);

    /// A live run replaced the recorded prompt in the views: clears the row selection
    /// (without emitting) and shows `note` above the table; an empty note hides it.
    void setLiveRunShown(const QString& note);
    QString liveRunNote() const;

    int currentDrafter() const;
    void setCurrentDrafter(int drafter);
    /// Index into results()->prompts of the selected row, -1 if none.
    int currentPrompt() const;
    /// Selects the row of prompt `prompt` (index into results()->prompts).
    void selectPrompt(int prompt);
    /// The search field: only prompts whose id, text or error contains `text` (any case) are
    /// listed; selectPrompt() of a prompt filtered out clears it.
    void setSearchText(const QString& text);
    QString searchText() const;
    /// Prompt indices in the table's current (sorted, filtered) order.
    std::vector<std::size_t> promptOrder() const;
    /// Sorts by the tau column of drafter `drafter`.
    void sortByTau(int drafter, Qt::SortOrder order = Qt::AscendingOrder);
    /// Column of drafter `drafter`'s tau.
    int tauColumn(int drafter) const { return 5 + drafter; }

    QStandardItemModel* model() const { return model_; }
    QSortFilterProxyModel* proxy() const { return proxy_; }
    QTableView* view() const { return view_; }

    QString exportName() const override { return "results_prompts"; }
    QStringList exportAll(const QString& dir, QString* error) override;

signals:
    /// The user (or code) selected prompt `prompt` shown with drafter `drafter`.
    void promptSelected(int prompt, int drafter);
    void loadModelsRequested();

private:
    void updateSearchCount();
    QLineEdit* search_ = nullptr;
    void emitSelection();
    ResultsFilePtr results_;
    QLabel* info_;
    QComboBox* drafterBox_;
    QLabel* drafterLabel_;
    QPushButton* loadModels_;
    QLabel* modelsNote_;
    QLabel* liveNote_;
    QTableView* view_;
    QStandardItemModel* model_;
    QSortFilterProxyModel* proxy_;
    bool filling_ = false;
};

}  // namespace draftscope
