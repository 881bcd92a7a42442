#include "acceptance_plots.h"

#include "drafter_comparison.h"
#include "figure_export.h"
#include "step_selection.h"

#include <qcustomplot.h>

#include <QDir>
#include <QStandardItemModel>
#include <QVBoxLayout>

namespace draftscope {

AcceptancePlots::AcceptancePlots(StepSelection* selection, QWidget* parent)
    : QWidget(parent), selection_(selection), rate_(new QCustomPlot(this)), histogram_(new QCustomPlot(this)),
      perStep_(new QCustomPlot(this)), table_(new QStandardItemModel(this)) {
    setObjectName("AcceptancePlots");
    rate_->setObjectName("acceptance_rate");
    histogram_->setObjectName("acceptance_histogram");
    perStep_->setObjectName("acceptance_per_step");
    rate_->setToolTip(tr("Per-position acceptance rate: for block position j, the fraction of verify steps whose "
                         "accepted prefix reaches j (accepted drafted tokens >= j). Position 0 (the anchor) is 1 by "
                         "definition and not drawn. Denominator: all verify steps, each of which drafts every position "
                         "(accepted / drafted, not conditioned on reaching j-1)."));
    histogram_->setToolTip(tr("Acceptance length per verify step = accepted drafted tokens + 1 (the bonus token "
                              "is included). tau is the mean acceptance length over the run's steps."));
    perStep_->setToolTip(tr("Acceptance length (accepted drafted tokens + the bonus token) of every verify step, "
                            "placed at its anchor's output position (tokens generated before the step), so runs of "
                            "two drafters on the same prompt line up on the same text."));
    for (auto* p : {rate_, histogram_, perStep_}) p->setMinimumHeight(140);
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
    perStep_->xAxis->setLabel(tr("output position of the step's anchor (tokens generated before it)"));
    perStep_->yAxis->setLabel(tr("acceptance length"));
    perStep_->plotLayout()->insertRow(0);
    perStep_->plotLayout()->addElement(0, 0, new QCPTextElement(perStep_, tr("Acceptance length per verify step")));
    for (auto* p : {rate_, histogram_, perStep_}) {
        p->legend->setFont(QFont(font().family(), 8));
        p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignTop);
    }
    histogram_->legend->setVisible(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(rate_);
    layout->addWidget(histogram_);
    layout->addWidget(perStep_);
    connect(selection_, &StepSelection::changed, this, [this](int step, int) { highlight(step); });
    for (auto* p : {rate_, histogram_, perStep_})
        installExportMenu(p, p->objectName(), [this, p](const QString& path, QString* e) { return exportFigure(p, path, e); },
                          table_);
}

void AcceptancePlots::clear() { setRun(RunResult{}); }

void AcceptancePlots::setRun(const RunResult& run) {
    run_ = run;
    other_ = RunResult{};
    nameA_.clear();
    nameB_.clear();
    redraw();
}

void AcceptancePlots::setComparison(const RunResult& other, const QString& nameA, const QString& nameB) {
    other_ = other;
    nameA_ = nameA;
    nameB_ = nameB;
    redraw();
}

void AcceptancePlots::redraw() {
    selectedBar_ = nullptr;
    for (auto* p : {rate_, histogram_, perStep_}) {
        p->clearPlottables();
        p->clearItems();
    }
    for (auto* g : histogram_->findChildren<QCPBarsGroup*>()) delete g;
    table_->clear();
    table_->setHorizontalHeaderLabels({tr("quantity"), tr("index"), tr("value"), tr("steps"), tr("drafter")});
    const bool compare = hasComparison();
    struct Series {
        const RunResult* run;
        QString name;
        QColor color;
    };
    std::vector<Series> series = {{&run_, compare ? tr("A: %1").arg(nameA_) : QString(), drafterColor(0)}};
    if (compare) series.push_back({&other_, tr("B: %1").arg(nameB_), drafterColor(1)});
    QCPBarsGroup* group = nullptr;
    if (compare) {
        group = new QCPBarsGroup(histogram_);
        group->setSpacingType(QCPBarsGroup::stPlotCoords);
        group->setSpacing(0.0);
    }
    int maxB = 2;
    double maxCount = 1, maxLen = 2, maxX = 1;
    for (const auto& s : series) {
        maxB = std::max(maxB, static_cast<int>(s.run->perPositionAcceptance.size()));
        for (auto c : s.run->acceptanceHistogram) maxCount = std::max(maxCount, static_cast<double>(c));
        maxLen = std::max(maxLen, static_cast<double>(s.run->acceptanceHistogram.size()));
    }
    for (std::size_t si = 0; si < series.size(); ++si) {
        const RunResult& run = *series[si].run;
        const QString& name = series[si].name;
        const QColor color = series[si].color;
        const QString tauText = run.steps.empty() ? QString() : QStringLiteral(" (tau %1)").arg(run.tau, 0, 'f', 3);
        const auto B = static_cast<int>(run.perPositionAcceptance.size());
        const double steps = static_cast<double>(run.steps.size());
        QVector<double> x, y;
        for (int j = 1; j < B; ++j) {
            x << j;
            y << run.perPositionAcceptance[static_cast<std::size_t>(j)];
            table_->appendRow({new QStandardItem(tr("acceptance rate")), new QStandardItem(QString::number(j)),
                               new QStandardItem(QString::number(y.back(), 'g', 6)),
                               new QStandardItem(QString::number(qRound(y.back() * steps))), new QStandardItem(name)});
        }
        auto* g = rate_->addGraph();
        g->setData(x, y);
        g->setPen(QPen(color, 2));
        g->setScatterStyle(QCPScatterStyle(si == 0 ? QCPScatterStyle::ssCircle : QCPScatterStyle::ssSquare, 6));
        g->setName(compare ? name + tauText : tr("rate"));

        QVector<double> lx, ly;
        for (std::size_t n = 1; n < run.acceptanceHistogram.size(); ++n) {
            lx << static_cast<double>(n);
            ly << static_cast<double>(run.acceptanceHistogram[n]);
            table_->appendRow({new QStandardItem(tr("acceptance length count")), new QStandardItem(QString::number(n)),
                               new QStandardItem(QString::number(ly.back())), new QStandardItem(QString::number(ly.back())),
                               new QStandardItem(name)});
        }
        if (!run.steps.empty())
            table_->appendRow({new QStandardItem(tr("tau (mean acceptance length, bonus included)")), new QStandardItem(""),
                               new QStandardItem(QString::number(run.tau, 'g', 6)), new QStandardItem(QString::number(steps)),
                               new QStandardItem(name)});
        auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
        bars->setData(lx, ly);
        bars->setWidth(compare ? 0.4 : 0.8);
        bars->setBrush(compare ? color.lighter(150) : QColor(0x9e, 0xc9, 0xe2));
        bars->setPen(QPen(color));
        bars->setName(compare ? name + tauText : tr("steps"));
        if (group) bars->setBarsGroup(group);
        if (!run.steps.empty()) {
            const QColor tauColor = compare ? color.darker(120) : QColor(0xd6, 0x27, 0x28);
            auto* tau = new QCPItemStraightLine(histogram_);
            tau->point1->setCoords(run.tau, 0);
            tau->point2->setCoords(run.tau, 1);
            tau->setPen(QPen(tauColor, 1.5, Qt::DashLine));
            auto* label = new QCPItemText(histogram_);
            // With two drafters B's label sits lower, so the labels do not overlap.
            label->position->setCoords(run.tau, maxCount * (1.08 - 0.2 * static_cast<double>(si)));
            label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
            label->setText(compare ? QStringLiteral(" tau %1 = %2 ").arg(si == 0 ? "A" : "B").arg(run.tau, 0, 'f', 3)
                                   : QStringLiteral(" tau = %1").arg(run.tau, 0, 'f', 3));
            label->setColor(tauColor);
        }

        QVector<double> px, py;
        const auto P = static_cast<double>(run.promptIds.size());
        for (const auto& st : run.steps) {
            px << static_cast<double>(st.start) - P;
            py << st.acceptanceLength();
            maxX = std::max(maxX, px.back());
        }
        auto* ps = perStep_->addGraph();
        ps->setData(px, py);
        ps->setLineStyle(QCPGraph::lsStepLeft);
        ps->setPen(QPen(color, 1.5));
        ps->setScatterStyle(QCPScatterStyle(si == 0 ? QCPScatterStyle::ssDisc : QCPScatterStyle::ssSquare, color, 5));
        ps->setName(compare ? name + tauText : tr("acceptance length"));
    }
    rate_->legend->setVisible(compare);
    perStep_->legend->setVisible(compare);
    rate_->xAxis->setRange(0.5, maxB - 0.5);
    histogram_->xAxis->setRange(0.3, maxLen - 0.3);
    histogram_->yAxis->setRange(0, maxCount * 1.15);
    perStep_->xAxis->setRange(-1, maxX + 2);
    perStep_->yAxis->setRange(0, maxB + 0.9);
    highlight(selection_->step());
}

void AcceptancePlots::highlight(int step) {
    if (selectedBar_) histogram_->removePlottable(selectedBar_);
    selectedBar_ = nullptr;
    if (step >= 0 && step < static_cast<int>(run_.steps.size())) {
        const int len = run_.steps[static_cast<std::size_t>(step)].acceptanceLength();
        auto* sel = new QCPBars(histogram_->xAxis, histogram_->yAxis);
        // With a comparison A's bars sit left of the length (A and B side by side).
        const double key = hasComparison() ? len - 0.2 : len;
        sel->setData(QVector<double>{key},
                     QVector<double>{static_cast<double>(run_.acceptanceHistogram[static_cast<std::size_t>(len)])});
        sel->setWidth(hasComparison() ? 0.38 : 0.8);
        sel->setBrush(hasComparison() ? QColor(0xd6, 0x27, 0x28, 140) : QColor(0xff, 0x7f, 0x0e, 160));
        sel->setName(tr("selected step (length %1)").arg(len));
        selectedBar_ = sel;
    }
    for (auto* p : {rate_, histogram_, perStep_}) p->replot();
}

bool AcceptancePlots::exportFigure(QCustomPlot* plot, const QString& path, QString* error, int width, int height) {
    // The selected step's bar is an on-screen state, not part of a figure.
    highlight(-1);
    const bool ok = exportPlot(plot, path, error, width, height, figureTitle());
    highlight(selection_->step());
    return ok;
}

QStringList AcceptancePlots::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    for (auto* plot : {rate_, histogram_, perStep_})
        set.figure(plot->objectName(),
                   [this, plot](const QString& path, QString* e) { return exportFigure(plot, path, e, 640, 360); });
    set.table(exportName(), table_);
    return set.written();
}

}  // namespace draftscope
