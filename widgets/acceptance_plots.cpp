#include "acceptance_plots.h"

#include "figure_export.h"
#include "step_selection.h"

#include <qcustomplot.h>

#include <QDir>
#include <QStandardItemModel>
#include <QVBoxLayout>

namespace draftscope {

AcceptancePlots::AcceptancePlots(StepSelection* selection, QWidget* parent)
    : QWidget(parent), selection_(selection), rate_(new QCustomPlot(this)), histogram_(new QCustomPlot(this)),
      table_(new QStandardItemModel(this)) {
    setObjectName("AcceptancePlots");
    rate_->setObjectName("acceptance_rate");
    histogram_->setObjectName("acceptance_histogram");
    rate_->setToolTip(tr("Per-position acceptance rate: for block position j, the fraction of verify steps whose "
                         "accepted prefix reaches j (accepted drafted tokens >= j). Position 0 (the anchor) is 1 by "
                         "definition and not drawn. Denominator: all verify steps, each of which drafts every position "
                         "(accepted / drafted, not conditioned on reaching j-1)."));
    histogram_->setToolTip(tr("Acceptance length per verify step = accepted drafted tokens + 1 (the bonus token "
                              "is included). tau is the mean acceptance length over the run's steps."));
    rate_->setMinimumHeight(140);
    histogram_->setMinimumHeight(140);
    QSharedPointer<QCPAxisTickerFixed> integerTicks(new QCPAxisTickerFixed);
    integerTicks->setTickStep(1.0);
    integerTicks->setScaleStrategy(QCPAxisTickerFixed::ssNone);
    rate_->xAxis->setTicker(integerTicks);
    histogram_->xAxis->setTicker(integerTicks);
    rate_->xAxis->setLabel(tr("block position j"));
    rate_->yAxis->setLabel(tr("fraction of steps reaching j"));
    rate_->yAxis->setRange(0, 1.05);
    rate_->plotLayout()->insertRow(0);
    rate_->plotLayout()->addElement(0, 0, new QCPTextElement(rate_, tr("Per-position acceptance rate (bonus token not counted)")));
    histogram_->xAxis->setLabel(tr("acceptance length (accepted + bonus)"));
    histogram_->yAxis->setLabel(tr("verify steps"));
    histogram_->plotLayout()->insertRow(0);
    histogram_->plotLayout()->addElement(0, 0, new QCPTextElement(histogram_, tr("Acceptance-length histogram")));
    histogram_->legend->setVisible(true);
    histogram_->legend->setFont(QFont(font().family(), 8));
    histogram_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignTop);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(rate_);
    layout->addWidget(histogram_);
    connect(selection_, &StepSelection::changed, this, [this](int step, int) { highlight(step); });
    installExportMenu(rate_, "acceptance_rate", [this](const QString& p, QString* e) { return exportPlot(rate_, p, e); }, table_);
    installExportMenu(histogram_, "acceptance_histogram",
                      [this](const QString& p, QString* e) { return exportPlot(histogram_, p, e); }, table_);
}

void AcceptancePlots::clear() { setRun(RunResult{}); }

void AcceptancePlots::setRun(const RunResult& run) {
    run_ = run;
    rate_->clearPlottables();
    rate_->clearItems();
    histogram_->clearPlottables();
    histogram_->clearItems();
    table_->clear();
    table_->setHorizontalHeaderLabels({tr("quantity"), tr("index"), tr("value"), tr("steps")});
    const auto B = static_cast<int>(run.perPositionAcceptance.size());
    const double steps = static_cast<double>(run.steps.size());
    QVector<double> x, y;
    for (int j = 1; j < B; ++j) {
        x << j;
        y << run.perPositionAcceptance[static_cast<std::size_t>(j)];
        table_->appendRow({new QStandardItem(tr("acceptance rate")), new QStandardItem(QString::number(j)),
                           new QStandardItem(QString::number(y.back(), 'g', 6)),
                           new QStandardItem(QString::number(qRound(y.back() * steps)))});
    }
    auto* g = rate_->addGraph();
    g->setData(x, y);
    g->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 2));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    g->setName(tr("rate"));
    rate_->xAxis->setRange(0.5, std::max(B, 2) - 0.5);

    QVector<double> lx, ly;
    double maxCount = 1;
    for (std::size_t n = 1; n < run.acceptanceHistogram.size(); ++n) {
        lx << static_cast<double>(n);
        ly << static_cast<double>(run.acceptanceHistogram[n]);
        maxCount = std::max(maxCount, ly.back());
        table_->appendRow({new QStandardItem(tr("acceptance length count")), new QStandardItem(QString::number(n)),
                           new QStandardItem(QString::number(ly.back())), new QStandardItem(QString::number(ly.back()))});
    }
    if (!run.steps.empty())
        table_->appendRow({new QStandardItem(tr("tau (mean acceptance length, bonus included)")), new QStandardItem(""),
                           new QStandardItem(QString::number(run.tau, 'g', 6)), new QStandardItem(QString::number(steps))});
    auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
    bars->setData(lx, ly);
    bars->setWidth(0.8);
    bars->setBrush(QColor(0x9e, 0xc9, 0xe2));
    bars->setPen(QPen(QColor(0x1f, 0x77, 0xb4)));
    bars->setName(tr("steps"));
    histogram_->xAxis->setRange(0.3, std::max<double>(static_cast<double>(run.acceptanceHistogram.size()), 2) - 0.3);
    histogram_->yAxis->setRange(0, maxCount * 1.15);
    if (!run.steps.empty()) {
        auto* tau = new QCPItemStraightLine(histogram_);
        tau->point1->setCoords(run.tau, 0);
        tau->point2->setCoords(run.tau, 1);
        tau->setPen(QPen(QColor(0xd6, 0x27, 0x28), 1.5, Qt::DashLine));
        auto* label = new QCPItemText(histogram_);
        label->position->setCoords(run.tau, maxCount * 1.08);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setText(QStringLiteral(" tau = %1").arg(run.tau, 0, 'f', 3));
        label->setColor(QColor(0xd6, 0x27, 0x28));
    }
    highlight(selection_->step());
}

void AcceptancePlots::highlight(int step) {
    for (int i = histogram_->plottableCount() - 1; i >= 1; --i) histogram_->removePlottable(i);
    if (step >= 0 && step < static_cast<int>(run_.steps.size())) {
        const int len = run_.steps[static_cast<std::size_t>(step)].acceptanceLength();
        auto* sel = new QCPBars(histogram_->xAxis, histogram_->yAxis);
        sel->setData(QVector<double>{static_cast<double>(len)},
                     QVector<double>{static_cast<double>(run_.acceptanceHistogram[static_cast<std::size_t>(len)])});
        sel->setWidth(0.8);
        sel->setBrush(QColor(0xff, 0x7f, 0x0e, 160));
        sel->setName(tr("selected step (length %1)").arg(len));
    }
    rate_->replot();
    histogram_->replot();
}

QStringList AcceptancePlots::exportAll(const QString& dir, QString* error) {
    QStringList written;
    for (auto* plot : {rate_, histogram_})
        for (const auto& fmt : figureFormats()) {
            const QString path = QDir(dir).filePath(plot->objectName() + "." + fmt);
            if (!exportPlot(plot, path, error, 640, 360)) return written;
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
