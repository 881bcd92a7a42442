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
/// log2 axis, and the chain run's tau as a dashed horizontal line (its value in the legend,
/// which sits under the plot, two entries a row or one when the plot is too narrow for
/// two: plot_legend.h); each point's label takes the side with more room. The
/// table (CSV/JSON) has one row per run: run, budget, tau, steps, generated tokens.
class BudgetSweepPlot : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit BudgetSweepPlot(QWidget* parent = nullptr);
    /// `chain` may have no steps (then no chain line is drawn). Drops a comparison.
    void setRuns(const RunResult& chain, const std::vector<TreeRunResult>& trees);
    /// Overlays drafter B (its chain run and DDTree runs on the same prompt) on the shown
    /// runs (drafter A): B's sweep and chain line in a second colour, legends naming both.
    /// The table gains a "drafter" column. An empty `chainB` and `treesB` remove it.
    void setComparison(const RunResult& chainB, const std::vector<TreeRunResult>& treesB, const QString& nameA,
                       const QString& nameB);
    void clear();

    /// The plotted points, in budget order.
    const QVector<double>& budgets() const { return budgets_; }
    const QVector<double>& taus() const { return taus_; }
    /// The chain's tau, or NaN when no chain run is shown.
    double chainTau() const { return chainTau_; }
    /// Drafter B's points and chain tau (empty / NaN without a comparison).
    const QVector<double>& budgetsB() const { return budgetsB_; }
    const QVector<double>& tausB() const { return tausB_; }
    double chainTauB() const { return chainTauB_; }
    QCustomPlot* plot() const { return plot_; }
    QStandardItemModel* table() const { return table_; }

    QString exportName() const override { return QStringLiteral("ddtree_budget_sweep"); }
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    static constexpr int kLegendPerRow = 2;  ///< at most; fewer when the plot is narrow
    void redraw();
    /// Writes the figure at width x height (0: on-screen size), the legend fitted to it.
    bool exportFigure(const QString& path, QString* error, int width, int height);
    QCustomPlot* plot_;
    QStandardItemModel* table_;
    RunResult chain_, chainB_;
    std::vector<TreeRunResult> trees_, treesB_;
    QString nameA_, nameB_;
    QVector<double> budgets_, taus_, budgetsB_, tausB_;
    double chainTau_, chainTauB_;
};

}  // namespace draftscope
