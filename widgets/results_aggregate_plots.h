#pragma once
// Cross-prompt plots of a results file (draftscope-cli eval --out): per-prompt tau sorted,
// pooled per-position acceptance, the pooled acceptance-length histogram and DDTree macro
// tau per budget against the chain's macro tau; one series per drafter.

#include "draftscope/results_file.h"
#include "draftscope/results_summary.h"
#include "exportable_view.h"

#include <QVector>
#include <QWidget>

#include <vector>

class QCustomPlot;
class QStandardItemModel;

namespace draftscope {

/// Four QCustomPlots over every prompt of a results file, numbers from aggregateDrafter()
/// and promptsByTau() (results_summary.h). Drafter d is drawn in colour d (A blue, B orange).
/// The table (CSV/JSON) holds every plotted number: drafter, quantity, index, value.
class ResultsAggregatePlots : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit ResultsAggregatePlots(QWidget* parent = nullptr);

    /// Plots `results`. Never throws: a file without counted prompts shows empty plots.
    void setResults(const ResultsFile& results);
    void clear();

    /// Which plot plottedValues() reads.
    enum class Plot { PromptTau, PositionAcceptance, LengthHistogram, TreeMacroTau };
    /// The y values drawn for drafter `drafter` in `plot`, in x order (read back from the
    /// plottables, for tests): sorted prompt taus; acceptance at j = 1..B-1; step counts for
    /// lengths 1..B; tree macro tau per budget (budget order).
    QVector<double> plottedValues(Plot plot, int drafter) const;
    /// The chain macro tau reference line of drafter `drafter` in the budget plot (NaN if none).
    double chainReference(int drafter) const;
    const std::vector<DrafterAggregate>& aggregates() const { return aggregates_; }

    /// The prompt (index into the results' prompts) drawn nearest to pixel `pos` of the
    /// per-prompt tau plot, within `radius` pixels; -1 if none. `drafter` (optional) gets the
    /// series it belongs to.
    int promptAt(const QPointF& pos, int* drafter = nullptr, double radius = 8) const;
    /// Where the point of prompt `prompt` of drafter `drafter` is drawn in the tau plot
    /// (pixels); (-1, -1) if it is not drawn.
    QPointF promptPixel(int prompt, int drafter) const;
    /// "p3: tau 2.500 (rank 1 of 8, drafter A: run1)", the hover text of a point.
    QString promptPointText(int prompt, int drafter) const;
    /// Prompts named beside their point (the lowest taus of each drafter), by drafter.
    QStringList namedPrompts(int drafter) const;

    QCustomPlot* tauPlot() const { return tau_; }
    QCustomPlot* positionPlot() const { return position_; }
    QCustomPlot* histogramPlot() const { return histogram_; }
    QCustomPlot* budgetPlot() const { return budget_; }
    QStandardItemModel* table() const { return table_; }

    QString exportName() const override { return "results_aggregate"; }
    QStringList exportAll(const QString& dir, QString* error) override;

    /// Prompts named beside their point per drafter: the lowest taus, the ones to look at.
    static constexpr int kNamedPrompts = 3;

signals:
    /// A point of the per-prompt tau plot was clicked: prompt index, drafter.
    void promptClicked(int prompt, int drafter);

private:
    bool eventFilter(QObject* watched, QEvent* event) override;
    QCustomPlot* makePlot(const QString& name, const QString& title, const QString& tip);
    QCustomPlot* tau_;
    QCustomPlot* position_;
    QCustomPlot* histogram_;
    QCustomPlot* budget_;
    QStandardItemModel* table_;
    std::vector<DrafterAggregate> aggregates_;
    std::vector<double> chainRefs_;
    /// Per drafter: the prompt index of each tau point, in x order; its id and tau.
    std::vector<std::vector<int>> pointPrompts_;
    std::vector<QStringList> pointIds_;
    std::vector<QStringList> named_;
    QStringList drafterLabels_;
};

}  // namespace draftscope
