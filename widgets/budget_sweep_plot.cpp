#include "budget_sweep_plot.h"

#include "drafter_comparison.h"
#include "figure_export.h"
#include "plot_legend.h"

#include <qcustomplot.h>

#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace draftscope {

BudgetSweepPlot::BudgetSweepPlot(QWidget* parent)
    : QWidget(parent), plot_(new QCustomPlot(this)), table_(new QStandardItemModel(this)),
      chainTau_(std::numeric_limits<double>::quiet_NaN()), chainTauB_(std::numeric_limits<double>::quiet_NaN()) {
    setObjectName("BudgetSweepPlot");
    plot_->setObjectName("ddtree_budget_sweep");
    plot_->setMinimumHeight(200);
    plot_->setToolTip(tr("tau = mean acceptance length per verify step, bonus token included: for DDTree the accepted "
                         "path with its root, for the chain (DFlash) the accepted drafted tokens + 1. Budget = tree "
                         "nodes drafted per step (the root not counted)."));
    plot_->xAxis->setScaleType(QCPAxis::stLogarithmic);
    plot_->xAxis->setLabel(tr("DDTree budget (tree nodes per step, log scale)"));
    plot_->yAxis->setLabel(tr("tau (mean acceptance length, bonus included)"));
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, tr("DDTree budget sweep")));
    // The legend in its own row under the axis rect (up to two entries a row, one when the
    // plot is too narrow for two): it never covers points or their labels, nor runs past
    // the plot's right edge (compare mode's entries are long).
    plot_->legend->setFont(QFont(font().family(), 8));
    placeLegendBelow(plot_);
    plot_->legend->setWrap(2);
    fitLegendRowsOnResize(plot_, kLegendPerRow);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    installExportMenu(plot_, exportName(), [this](const QString& p, QString* e) { return exportFigure(p, e, 0, 0); }, table_);
    clear();
}

void BudgetSweepPlot::clear() { setRuns(RunResult{}, {}); }

void BudgetSweepPlot::setRuns(const RunResult& chain, const std::vector<TreeRunResult>& trees) {
    chain_ = chain;
    trees_ = trees;
    chainB_ = RunResult{};
    treesB_.clear();
    nameA_.clear();
    nameB_.clear();
    redraw();
}

void BudgetSweepPlot::setComparison(const RunResult& chainB, const std::vector<TreeRunResult>& treesB,
                                    const QString& nameA, const QString& nameB) {
    chainB_ = chainB;
    treesB_ = treesB;
    nameA_ = nameA;
    nameB_ = nameB;
    redraw();
}

void BudgetSweepPlot::redraw() {
    plot_->clearPlottables();
    plot_->clearItems();
    table_->clear();
    const bool compare = !chainB_.steps.empty() || !treesB_.empty();
    QStringList header = {tr("run"), tr("budget"), tr("tau"), tr("steps"), tr("generated tokens")};
    if (compare) header << tr("drafter");
    table_->setHorizontalHeaderLabels(header);
    auto item = [](const QVariant& v) {
        auto* it = new QStandardItem;
        it->setData(v, Qt::DisplayRole);
        return it;
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // Fills budgets/taus from one drafter's runs and appends its table rows.
    auto collect = [&](const RunResult& chain, const std::vector<TreeRunResult>& trees, const QString& name,
                       QVector<double>& budgets, QVector<double>& taus, double& chainTau) {
        budgets.clear();
        taus.clear();
        std::vector<const TreeRunResult*> sorted;
        for (const auto& t : trees) sorted.push_back(&t);
        std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->budget < b->budget; });
        auto row = [&](QList<QStandardItem*> r) {
            if (compare) r << item(name);
            table_->appendRow(r);
        };
        for (const auto* t : sorted) {
            budgets << t->budget;
            taus << t->tau;
            row({item(QStringLiteral("ddtree")), item(t->budget), item(t->tau), item(static_cast<qlonglong>(t->steps.size())),
                 item(static_cast<qlonglong>(t->outputIds.size() - t->promptIds.size()))});
        }
        chainTau = chain.steps.empty() ? nan : chain.tau;
        if (!chain.steps.empty())
            row({item(QStringLiteral("chain")), item(QVariant()), item(chain.tau),
                 item(static_cast<qlonglong>(chain.steps.size())),
                 item(static_cast<qlonglong>(chain.outputIds.size() - chain.promptIds.size()))});
    };
    collect(chain_, trees_, nameA_, budgets_, taus_, chainTau_);
    chainTauB_ = nan;
    budgetsB_.clear();
    tausB_.clear();
    if (compare) collect(chainB_, treesB_, nameB_, budgetsB_, tausB_, chainTauB_);

    QVector<double> all = budgets_ + budgetsB_;
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    double lo = all.isEmpty() ? 1 : all.front(), hi = all.isEmpty() ? 64 : all.back();
    lo = std::max(0.5, lo / 1.5);
    hi = std::max(hi * 1.5, lo * 4);
    QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
    for (double b : all) ticks->addTick(b, QString::number(b));
    if (all.isEmpty())
        for (double b : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0}) ticks->addTick(b, QString::number(b));
    plot_->xAxis->setTicker(ticks);
    plot_->xAxis->setRange(lo, hi);

    double ymax = 1;
    for (double t : taus_ + tausB_) ymax = std::max(ymax, t);
    for (double c : {chainTau_, chainTauB_})
        if (!std::isnan(c)) ymax = std::max(ymax, c);
    plot_->yAxis->setRange(0, std::ceil(ymax * 1.15 + 0.2));

    // Each point's label goes above or below it, on the side with more room to the nearest
    // chain line, the other drafter's point at that budget, or the axis end.
    const double ytop = plot_->yAxis->range().upper;
    auto labelBelow = [&](double budget, double tau) {
        double up = ytop - tau, down = tau;
        auto obstacle = [&](double y) {
            if (std::isnan(y)) return;
            if (y >= tau) up = std::min(up, y - tau);
            if (y <= tau) down = std::min(down, tau - y);
        };
        for (double c : {chainTau_, chainTauB_}) obstacle(c);
        for (const auto* series : {&budgets_, &budgetsB_}) {
            const auto& ts = series == &budgets_ ? taus_ : tausB_;
            for (int i = 0; i < series->size(); ++i)
                if ((*series)[i] == budget && ts[i] != tau) obstacle(ts[i]);
        }
        return down > up;
    };
    auto draw = [&](const QVector<double>& budgets, const QVector<double>& taus, double chainTau, const QString& who,
                    const QColor& treeColor, const QColor& chainColor, bool second) {
        auto* g = plot_->addGraph();
        g->setName(who.isEmpty() ? tr("DDTree tau") : tr("%1: DDTree tau").arg(who));
        g->setData(budgets, taus);
        g->setPen(QPen(treeColor, 2));
        g->setScatterStyle(QCPScatterStyle(second ? QCPScatterStyle::ssSquare : QCPScatterStyle::ssDisc, treeColor, 8));
        for (int i = 0; i < budgets.size(); ++i) {
            const bool below = labelBelow(budgets[i], taus[i]);
            auto* label = new QCPItemText(plot_);
            label->position->setCoords(budgets[i], taus[i]);
            label->setPositionAlignment(Qt::AlignHCenter | (below ? Qt::AlignTop : Qt::AlignBottom));
            label->setPadding(below ? QMargins(0, 6, 0, 0) : QMargins(0, 0, 0, 6));
            label->setText(QString::number(taus[i], 'f', 2));
            label->setColor(who.isEmpty() ? Qt::black : treeColor.darker(130));
            label->setFont(QFont(font().family(), 8));
        }
        if (std::isnan(chainTau)) return;
        // A two-point graph (not a straight-line item) so the legend names it.
        auto* c = plot_->addGraph();
        c->setName(who.isEmpty() ? tr("chain (DFlash) tau %1").arg(chainTau, 0, 'f', 3)
                                 : tr("%1: chain (DFlash) tau %2").arg(who).arg(chainTau, 0, 'f', 3));
        c->setData(QVector<double>{lo, hi}, QVector<double>{chainTau, chainTau});
        c->setPen(QPen(chainColor, 1.5, second ? Qt::DotLine : Qt::DashLine));  // its tau: in the legend
    };
    if (!compare) {
        draw(budgets_, taus_, chainTau_, QString(), QColor(0x23, 0x8b, 0x45), QColor(0x1f, 0x77, 0xb4), false);
    } else {
        draw(budgets_, taus_, chainTau_, tr("A (%1)").arg(nameA_), drafterColor(0), drafterColor(0).darker(130), false);
        draw(budgetsB_, tausB_, chainTauB_, tr("B (%1)").arg(nameB_), drafterColor(1), drafterColor(1).darker(130), true);
    }
    fitLegendRows(plot_, plot_->width(), kLegendPerRow);
    plot_->replot();
}

bool BudgetSweepPlot::exportFigure(const QString& path, QString* error, int width, int height) {
    return exportPlotFittingLegend(plot_, path, error, width, height, figureTitle(), kLegendPerRow);
}

QStringList BudgetSweepPlot::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.figure(exportName(), [this](const QString& path, QString* e) { return exportFigure(path, e, 640, 400); }) &&
        set.table(exportName(), table_);
    return set.written();
}

}  // namespace draftscope
