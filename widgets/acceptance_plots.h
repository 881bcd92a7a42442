#pragma once
// Per-position acceptance-rate curve and acceptance-length histogram of a run.

#include "draftscope/run_types.h"
#include "exportable_view.h"

#include <QWidget>

class QCustomPlot;
class QStandardItemModel;

namespace draftscope {

class StepSelection;

/// Two QCustomPlots: (1) the fraction of steps whose accepted prefix reaches block
/// position j, for j = 1..B-1 (drafted positions; the anchor's rate is 1 by definition);
/// (2) the histogram of acceptance lengths (accepted drafted tokens + the bonus token),
/// with tau marked. The selected step's acceptance length is highlighted.
class AcceptancePlots : public QWidget, public ExportableView {
    Q_OBJECT
public:
    AcceptancePlots(StepSelection* selection, QWidget* parent = nullptr);
    void setRun(const RunResult& run);
    void clear();
    QCustomPlot* ratePlot() const { return rate_; }
    QCustomPlot* histogramPlot() const { return histogram_; }
    /// Rows: block position j, acceptance rate, steps reaching j; then length n, steps.
    QStandardItemModel* table() const { return table_; }

    QString exportName() const override { return "acceptance"; }
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    void highlight(int step);
    StepSelection* selection_;
    QCustomPlot* rate_;
    QCustomPlot* histogram_;
    QStandardItemModel* table_;
    RunResult run_;
};

}  // namespace draftscope
