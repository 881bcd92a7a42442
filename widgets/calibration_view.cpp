#include "calibration_view.h"

#include "drafter_comparison.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QStandardItemModel>

#include <algorithm>
#include <cmath>

namespace draftscope {

QString describeCalibration(const ConfidenceCalibration& c) {
    if (!c.available) return {};
    // The head is trained for sampling at T = 1 (1 - TV): say when the run measures something else.
    const QString regime =
        c.temperature == 0.0 ? CalibrationView::tr(" (greedy run: accepted = argmax match)")
        : c.temperature != 1.0
            ? CalibrationView::tr(" (sampled at T = %1; the head is trained for T = 1)").arg(c.temperature)
            : QString();
    return CalibrationView::tr("%1 tested slots: mean confidence %2, accepted %3; Brier %4, ECE %5%6")
        .arg(c.tested)
        .arg(c.meanConfidence, 0, 'f', 2)
        .arg(c.acceptedRate, 0, 'f', 2)
        .arg(c.brier, 0, 'f', 3)
        .arg(c.ece, 0, 'f', 3)
        .arg(regime);
}

CalibrationView::CalibrationView(QWidget* parent)
    : SummaryPlotView(parent, QStringLiteral("calibration"), tr("Confidence head calibration"),
                      tr("predicted acceptance (confidence head)"), tr("accepted (share of tested slots)"),
                      tr("DSpark confidence head: each point is one bin of predicted acceptance probability; x is "
                         "the bin's mean prediction, y the share of its slots the target accepted, the area the "
                         "number of slots. A slot counts when the target tested it (every drafted token before it "
                         "was accepted), the case the head is trained for. On the diagonal the head is calibrated; "
                         "below it, over-confident.")) {
    setObjectName("CalibrationView");
    clear();
}

void CalibrationView::clear() { setSeries({}); }

void CalibrationView::setSeries(const std::vector<CalibrationSeries>& series) {
    series_ = series;
    redraw();
}

bool CalibrationView::hasData() const {
    return std::any_of(series_.begin(), series_.end(), [](const auto& s) { return s.calibration.available; });
}

void CalibrationView::redraw() {
    plot_->clearPlottables();
    table_->clear();
    table_->setHorizontalHeaderLabels(
        {tr("drafter"), tr("bin from"), tr("bin to"), tr("tested slots"), tr("mean confidence"), tr("accepted share")});
    QStringList lines;
    for (const auto& s : series_)
        lines << (s.calibration.available ? tr("%1: %2").arg(s.name, describeCalibration(s.calibration))
                                          : tr("%1: no confidence head").arg(s.name));
    summary_->setText(hasData()
                          ? lines.join('\n')
                          : tr("Run a DSpark drafter with a confidence head to see how well it predicts acceptance."));
    auto* diagonal = new QCPGraph(plot_->xAxis, plot_->yAxis);
    diagonal->setName(tr("calibrated"));
    diagonal->setPen(QPen(Qt::gray, 1, Qt::DashLine));
    diagonal->setData({0.0, 1.0}, {0.0, 1.0});
    int most = 1;
    for (const auto& s : series_)
        for (const auto& b : s.calibration.bins) most = std::max(most, b.tested);
    for (const auto& s : series_) {
        if (!s.calibration.available) continue;
        const QColor color = drafterColor(s.which);
        auto* line = new QCPGraph(plot_->xAxis, plot_->yAxis);
        line->setName(s.name);
        line->setPen(QPen(color, 1.5));
        line->setLineStyle(QCPGraph::lsLine);
        QVector<double> x, y;
        for (const auto& b : s.calibration.bins) {
            QList<QStandardItem*> row;
            for (const QVariant& v : {QVariant(s.name), QVariant(b.lower), QVariant(b.upper), QVariant(b.tested),
                                      QVariant(b.meanConfidence), QVariant(b.acceptedRate)}) {
                auto* it = new QStandardItem;
                it->setData(v, Qt::DisplayRole);
                row << it;
            }
            table_->appendRow(row);
            if (!b.tested) continue;
            x << b.meanConfidence;
            y << b.acceptedRate;
            // One circle per bin whose area follows its share of the slots (6 to 20 px across).
            auto* dot = new QCPGraph(plot_->xAxis, plot_->yAxis);
            dot->removeFromLegend();
            dot->setLineStyle(QCPGraph::lsNone);
            QColor fill = color;
            fill.setAlpha(140);
            const double px = 6.0 + 14.0 * std::sqrt(static_cast<double>(b.tested) / most);
            dot->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(color.darker(130)), QBrush(fill), px));
            dot->setData({b.meanConfidence}, {b.acceptedRate});
        }
        line->setData(x, y, true);
    }
    plot_->legend->setVisible(hasData());
    // A margin so that circles at 0 or 1 are not cut.
    plot_->xAxis->setRange(-0.03, 1.03);
    plot_->yAxis->setRange(-0.03, 1.03);
    plot_->replot();
}

QStringList CalibrationView::exportAll(const QString& dir, QString* error) {
    return exportFigureAndTable(dir, error, 600, 560);
}

}  // namespace draftscope
