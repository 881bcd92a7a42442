#pragma once
// The "A vs B" table: two drafters on the same target and prompt, number by number.

#include "draftscope/engine.h"
#include "exportable_view.h"

#include <QString>
#include <QWidget>

class QLabel;
class QStandardItemModel;
class QTableView;

namespace draftscope {

/// One drafter's side of a comparison: its name, summary and runs on the shared prompt.
struct DrafterRuns {
    QString name;
    ModelSummary drafter;
    RunResult run;
    std::vector<TreeRunResult> trees;
};

/// Mean drafter probability of its drafted token over every drafted position of every
/// verify step (after-the-cut positions included); `acceptedOnly` restricts it to the
/// accepted positions. NaN without drafted positions.
double meanDraftProb(const RunResult& run, bool acceptedOnly);

/// Table with columns quantity, A, B, B - A, differs: tau, verify steps, generated tokens,
/// identical outputs, mean draft probability (all drafted / accepted positions), the
/// per-position acceptance rate of every block position, DDTree tau per budget run by
/// both, and the configuration (directory, layers, block size, tapped target layers, mask
/// token id, parameters). Rows whose values differ are marked (differs = "yes", bold).
/// Exports the table as ab_summary.csv/.json.
class ComparisonSummaryView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit ComparisonSummaryView(QWidget* parent = nullptr);
    void setComparison(const DrafterRuns& a, const DrafterRuns& b);
    void clear();
    QStandardItemModel* table() const { return table_; }
    QTableView* tableView() const { return view_; }
    /// Row index of `quantity` (first column), -1 if absent.
    int rowOf(const QString& quantity) const;

    QString exportName() const override { return QStringLiteral("ab_summary"); }
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    void fitColumns();
    QLabel* caption_;
    QTableView* view_;
    QStandardItemModel* table_;
};

}  // namespace draftscope
