#pragma once
// Per-position acceptance-rate curve and acceptance-length histogram of a run.

#include "draftscope/run_types.h"
#include "exportable_view.h"

#include <QWidget>

class QCPBars;
class QCustomPlot;
class QStandardItemModel;

namespace draftscope {

class StepSelection;

/// Three QCustomPlots: (1) the fraction of steps whose accepted prefix reaches block
/// position j, for j = 1..B-1 (drafted positions; the anchor's rate is 1 by definition);
/// (2) the histogram of acceptance lengths (accepted drafted tokens + the bonus token),
/// with tau marked; (3) the acceptance length of every step against the output position
/// of its anchor. The selected step's acceptance length is highlighted. With a comparison
/// (drafter B's run on the same prompt) every plot overlays B in a second colour and the
/// legends name both drafters with their tau.
class AcceptancePlots : public QWidget, public ExportableView {
    Q_OBJECT
public:
    AcceptancePlots(StepSelection* selection, QWidget* parent = nullptr);
    /// Shows `run` alone (drops a comparison).
    void setRun(const RunResult& run);
    /// Overlays `other` (drafter B on the same prompt) on the shown run (drafter A); the
    /// legends read "A: nameA (tau x)" and "B: nameB (tau y)". An empty `other` removes it.
    void setComparison(const RunResult& other, const QString& nameA, const QString& nameB);
    bool hasComparison() const { return !other_.steps.empty(); }
    void clear();
    QCustomPlot* ratePlot() const { return rate_; }
    QCustomPlot* histogramPlot() const { return histogram_; }
    /// Acceptance length per step: graph 0 = A (x = anchor position - prompt length), graph 1 = B.
    QCustomPlot* perStepPlot() const { return perStep_; }
    /// Rows: block position j, acceptance rate, steps reaching j; then length n, steps;
    /// then tau. Column "drafter" names the run (empty without a comparison); B's rows follow A's.
    QStandardItemModel* table() const { return table_; }

    QString exportName() const override { return "acceptance"; }
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    void redraw();
    void highlight(int step);
    /// Writes `plot` without the selected step's bar (width/height 0: on-screen size).
    bool exportFigure(QCustomPlot* plot, const QString& path, QString* error, int width = 0, int height = 0);
    StepSelection* selection_;
    QCustomPlot* rate_;
    QCustomPlot* histogram_;
    QCustomPlot* perStep_;
    QStandardItemModel* table_;
    RunResult run_, other_;
    QString nameA_, nameB_;
    QCPBars* selectedBar_ = nullptr;
};

}  // namespace draftscope
