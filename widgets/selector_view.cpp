#include "selector_view.h"

#include "calibration_view.h"
#include "drafter_comparison.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QStandardItemModel>

#include <algorithm>

namespace draftscope {

QString proposerOf(const std::string& family) {
    if (family == "DFlash2") return SelectorView::tr("candidate selector");
    if (family == "DSpark") return SelectorView::tr("Markov bias");
    return {};
}

QString describeSelectorStats(const SelectorStats& s) {
    if (!s.available) return {};
    const QString changed = SelectorView::tr("changed %1 of %2 steps").arg(s.stepsChanged).arg(s.steps);
    if (!s.greedy) return SelectorView::tr("%1 (sampled run: no counterfactual)").arg(changed);
    const QString gained = s.gained ? SelectorView::tr("gained %1 (+%2 tokens)").arg(s.gained).arg(s.tokensGained)
                                    : SelectorView::tr("gained 0");
    return SelectorView::tr("%1; %2, lost %3, neutral %4").arg(changed, gained).arg(s.lost).arg(s.neutral);
}

SelectorView::SelectorView(QWidget* parent)
    : SummaryPlotView(parent, QStringLiteral("selector"), tr("Drafted token vs the drafter's argmax"),
                      tr("block position"), tr("steps drafting another token than the argmax (%)"),
                      tr("DFlash2's candidate selector or DSpark's Markov bias: per block position, the share of "
                         "verify steps whose drafted token is not the argmax of the drafter's logits (the token a "
                         "DFlash drafter would have drafted). A step gained when the drafted token was accepted "
                         "where the argmax token would have been rejected (exact: the drafts agree before it); it "
                         "lost when the drafted token was the first rejection and the argmax token was the "
                         "target's there (at least one token).")),
      calibration_(new CalibrationView(this)) {
    setObjectName("SelectorView");
    layout_->addWidget(calibration_, 1);
    clear();
}

void SelectorView::clear() { setSeries({}); }

void SelectorView::setSeries(const std::vector<SelectorSeries>& series) {
    series_ = series;
    redraw();
}

void SelectorView::redraw() {
    plot_->clearPlottables();
    table_->clear();
    table_->setHorizontalHeaderLabels(
        {tr("drafter"), tr("block position"), tr("steps drafted"), tr("steps changed"), tr("changed %")});
    QStringList lines;
    std::vector<const SelectorSeries*> shown;
    for (const auto& s : series_) {
        if (s.stats.available) {
            shown.push_back(&s);
            const QString who = s.proposer.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(s.proposer);
            lines << tr("%1%2: %3").arg(s.name, who, describeSelectorStats(s.stats));
        } else {
            lines << tr("%1: no candidate selector or Markov bias (a DFlash drafter drafts its argmax)").arg(s.name);
        }
    }
    summary_->setText(lines.isEmpty() ? tr("Run a DFlash2 or DSpark drafter to see what its candidate selector or "
                                           "Markov bias chose.")
                                      : lines.join('\n'));
    std::vector<CalibrationSeries> calibration;
    for (const auto& s : series_) calibration.push_back({s.name, s.which, s.calibration});
    calibration_->setSeries(calibration);
    calibration_->setVisible(calibration_->hasData());
    int positions = 1;
    const double width = shown.size() > 1 ? 0.38 : 0.7;
    for (std::size_t k = 0; k < shown.size(); ++k) {
        const auto& s = *shown[k];
        const auto n = s.stats.drafted.size();
        positions = std::max(positions, static_cast<int>(n));
        QVector<double> keys, values;
        for (std::size_t j = 0; j < n; ++j) {
            const double offset = shown.size() > 1 ? (k == 0 ? -width / 2 : width / 2) : 0.0;
            keys << static_cast<double>(j + 1) + offset;
            values << 100.0 * s.stats.changedRate(j);
            QList<QStandardItem*> row;
            for (const QVariant& v : {QVariant(s.name), QVariant(static_cast<int>(j + 1)), QVariant(s.stats.drafted[j]),
                                      QVariant(s.stats.changed[j]), QVariant(100.0 * s.stats.changedRate(j))}) {
                auto* it = new QStandardItem;
                it->setData(v, Qt::DisplayRole);
                row << it;
            }
            table_->appendRow(row);
        }
        auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
        bars->setName(s.name);
        bars->setWidth(width);
        const QColor color = drafterColor(s.which);
        bars->setPen(QPen(color.darker(130)));
        bars->setBrush(color);
        bars->setData(keys, values, true);
    }
    plot_->legend->setVisible(!shown.empty());
    plot_->xAxis->setRange(0.3, positions + 0.7);
    plot_->yAxis->setRange(0, 100);
    QSharedPointer<QCPAxisTickerFixed> ticks(new QCPAxisTickerFixed);
    ticks->setTickStep(1.0);
    plot_->xAxis->setTicker(ticks);
    plot_->replot();
}

QStringList SelectorView::exportAll(const QString& dir, QString* error) {
    auto written = exportFigureAndTable(dir, error, 900, 420);
    if ((!error || error->isEmpty()) && calibration_->hasData()) {
        calibration_->setFigureTitle(figureTitle());
        written += calibration_->exportAll(dir, error);
    }
    return written;
}

}  // namespace draftscope
