#pragma once
// tau against the DDTree budget, with the chain (DFlash) run's tau for comparison.

#include "draftscope/run_types.h"
#include "exportable_view.h"

#include <QVector>
#include <QWidget>

class QCustomPlot;
class QStandardItemModel;

namespace draftscope {

/// One QCustomPlot: tau (mean acceptance length, root/anchor and accepted nodes, i.e. the
/// bonus-included convention of the chain's tau) of each DDTree run against its budget on a
/// log2 axis, and the chain run's tau as a dashed horizontal line labelled "chain". The
/// table (CSV/JSON) has one row per run: run, budget, tau, steps, generated tokens.
class BudgetSweepPlot : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit BudgetSweepPlot(QWidget* parent = nullptr);
    /// `chain` may have no steps (then no chain line is drawn).
    void setRuns(const RunResult& chain, const std::vector<TreeRunResult>& trees);
    void clear();

    /// The plotted points, in budget order.
    const QVector<double>& budgets() const { return budgets_; }
    const QVector<double>& taus() const { return taus_; }
    /// The chain's tau, or NaN when no chain run is shown.
    double chainTau() const { return chainTau_; }
    QCustomPlot* plot() const { return plot_; }
    QStandardItemModel* table() const { return table_; }

    QString exportName() const override { return QStringLiteral("ddtree_budget_sweep"); }
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    QCustomPlot* plot_;
    QStandardItemModel* table_;
    QVector<double> budgets_, taus_;
    double chainTau_;
};

}  // namespace draftscope
