#include "budget_sweep_plot.h"

#include "figure_export.h"

#include <qcustomplot.h>

#include <QDir>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace draftscope {

BudgetSweepPlot::BudgetSweepPlot(QWidget* parent)
    : QWidget(parent), plot_(new QCustomPlot(this)), table_(new QStandardItemModel(this)),
      chainTau_(std::numeric_limits<double>::quiet_NaN()) {
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
    plot_->legend->setVisible(true);
    plot_->legend->setFont(QFont(font().family(), 8));
    plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignBottom);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    installExportMenu(plot_, exportName(), [this](const QString& p, QString* e) { return exportPlot(plot_, p, e); }, table_);
    clear();
}

void BudgetSweepPlot::clear() { setRuns(RunResult{}, {}); }

void BudgetSweepPlot::setRuns(const RunResult& chain, const std::vector<TreeRunResult>& trees) {
    plot_->clearPlottables();
    plot_->clearItems();
    table_->clear();
    table_->setHorizontalHeaderLabels({tr("run"), tr("budget"), tr("tau"), tr("steps"), tr("generated tokens")});
    auto item = [](const QVariant& v) {
        auto* it = new QStandardItem;
        it->setData(v, Qt::DisplayRole);
        return it;
    };
    budgets_.clear();
    taus_.clear();
    std::vector<const TreeRunResult*> sorted;
    for (const auto& t : trees) sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->budget < b->budget; });
    for (const auto* t : sorted) {
        budgets_ << t->budget;
        taus_ << t->tau;
        table_->appendRow({item(QStringLiteral("ddtree")), item(t->budget), item(t->tau),
                           item(static_cast<qlonglong>(t->steps.size())),
                           item(static_cast<qlonglong>(t->outputIds.size() - t->promptIds.size()))});
    }
    chainTau_ = chain.steps.empty() ? std::numeric_limits<double>::quiet_NaN() : chain.tau;
    if (!chain.steps.empty())
        table_->appendRow({item(QStringLiteral("chain")), item(QVariant()), item(chain.tau),
                           item(static_cast<qlonglong>(chain.steps.size())),
                           item(static_cast<qlonglong>(chain.outputIds.size() - chain.promptIds.size()))});

    double lo = budgets_.isEmpty() ? 1 : budgets_.front(), hi = budgets_.isEmpty() ? 64 : budgets_.back();
    lo = std::max(0.5, lo / 1.5);
    hi = std::max(hi * 1.5, lo * 4);
    QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
    for (double b : budgets_) ticks->addTick(b, QString::number(b));
    if (budgets_.isEmpty())
        for (double b : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0}) ticks->addTick(b, QString::number(b));
    plot_->xAxis->setTicker(ticks);
    plot_->xAxis->setRange(lo, hi);

    double ymax = 1;
    for (double t : taus_) ymax = std::max(ymax, t);
    if (!std::isnan(chainTau_)) ymax = std::max(ymax, chainTau_);
    plot_->yAxis->setRange(0, std::ceil(ymax * 1.15 + 0.2));

    auto* g = plot_->addGraph();
    g->setName(tr("DDTree tau"));
    g->setData(budgets_, taus_);
    g->setPen(QPen(QColor(0x23, 0x8b, 0x45), 2));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(0x23, 0x8b, 0x45), 8));
    for (int i = 0; i < budgets_.size(); ++i) {
        auto* label = new QCPItemText(plot_);
        label->position->setCoords(budgets_[i], taus_[i]);
        label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
        label->setPadding(QMargins(0, 0, 0, 6));
        label->setText(QString::number(taus_[i], 'f', 2));
        label->setFont(QFont(font().family(), 8));
    }
    if (!std::isnan(chainTau_)) {
        // A two-point graph (not a straight-line item) so the legend names it.
        auto* c = plot_->addGraph();
        c->setName(tr("chain (DFlash) tau %1").arg(chainTau_, 0, 'f', 3));
        c->setData(QVector<double>{lo, hi}, QVector<double>{chainTau_, chainTau_});
        c->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 1.5, Qt::DashLine));
        auto* label = new QCPItemText(plot_);
        label->position->setCoords(lo, chainTau_);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
        label->setText(tr(" chain %1").arg(chainTau_, 0, 'f', 2));
        label->setColor(QColor(0x1f, 0x77, 0xb4));
        label->setFont(QFont(font().family(), 8));
    }
    plot_->replot();
}

QStringList BudgetSweepPlot::exportAll(const QString& dir, QString* error) {
    QStringList written;
    for (const auto& fmt : figureFormats()) {
        const QString path = QDir(dir).filePath(exportName() + "." + fmt);
        if (!exportPlot(plot_, path, error, 640, 400)) return written;
        written << path;
    }
    for (const auto& fmt : tableFormats()) {
        const QString path = QDir(dir).filePath(exportName() + "." + fmt);
        if (!exportTable(table_, path, error)) return written;
        written << path;
    }
    return written;
}

}  // namespace draftscope
