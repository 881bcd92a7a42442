#include "results_aggregate_plots.h"

#include "figure_export.h"

#include <qcustomplot.h>

#include <QDir>
#include <QFileInfo>
#include <QGridLayout>
#include <QMouseEvent>
#include <QStandardItemModel>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>

namespace draftscope {

namespace {

QColor drafterColor(int d) {
    static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                                    QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd)};
    return colors[d % 5];
}

QString drafterLabel(const ResultsFile& r, int d) {
    const QString dir = QString::fromStdString(r.drafters[static_cast<std::size_t>(d)].summary.directory);
    const QString letter = d < 26 ? QString(QChar('A' + d)) : QString::number(d + 1);
    return QStringLiteral("%1: %2").arg(letter, QFileInfo(dir).fileName());
}

template <class Plottable>
QVector<double> valuesOf(const Plottable* p) {
    QVector<double> out;
    if (!p) return out;
    for (auto it = p->data()->constBegin(); it != p->data()->constEnd(); ++it) out << it->value;
    return out;
}

}  // namespace

ResultsAggregatePlots::ResultsAggregatePlots(QWidget* parent) : QWidget(parent), table_(new QStandardItemModel(this)) {
    setObjectName("ResultsAggregatePlots");
    tau_ = makePlot("results_tau", tr("Per-prompt tau, sorted"),
                    tr("tau of every prompt (mean acceptance length, bonus token included), sorted ascending per "
                       "drafter; the dashed line is the drafter's macro tau (mean over prompts). Failed prompts and "
                       "runs without verify steps are left out. The lowest taus are named; hover a point for its "
                       "prompt, click it to open that prompt."));
    tau_->xAxis->setLabel(tr("prompt rank (sorted by tau)"));
    tau_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignLeft | Qt::AlignTop);
    tau_->yAxis->setLabel(tr("tau"));
    position_ = makePlot("results_position_acceptance", tr("Per-position acceptance (pooled)"),
                         tr("For block position j, the fraction of all verify steps of all prompts (pooled) whose "
                            "accepted prefix reaches j. Position 0 (the anchor) is 1 by definition and not drawn."));
    position_->xAxis->setLabel(tr("block position j"));
    position_->yAxis->setLabel(tr("fraction of steps reaching j"));
    histogram_ = makePlot("results_acceptance_histogram", tr("Acceptance lengths (pooled)"),
                          tr("Number of verify steps of all prompts (pooled) with acceptance length n (accepted "
                             "drafted tokens + the bonus token)."));
    histogram_->xAxis->setLabel(tr("acceptance length (accepted + bonus)"));
    histogram_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignTop);
    histogram_->yAxis->setLabel(tr("verify steps"));
    budget_ = makePlot("results_ddtree_budgets", tr("DDTree macro tau per budget"),
                       tr("Mean over prompts of the DDTree run's tau at each budget (log axis); the dashed line is "
                          "the chain (DFlash) macro tau of the same drafter. Both count the bonus token."));
    budget_->xAxis->setLabel(tr("DDTree budget (tree nodes per step)"));
    budget_->yAxis->setLabel(tr("macro tau"));
    budget_->xAxis->setScaleType(QCPAxis::stLogarithmic);
    budget_->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    QSharedPointer<QCPAxisTickerFixed> integerTicks(new QCPAxisTickerFixed);
    integerTicks->setTickStep(1.0);
    integerTicks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    position_->xAxis->setTicker(integerTicks);
    histogram_->xAxis->setTicker(integerTicks);
    tau_->xAxis->setTicker(integerTicks);
    // Hover names a point's prompt; a click opens it (promptClicked).
    tau_->setMouseTracking(true);
    tau_->installEventFilter(this);

    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(tau_, 0, 0);
    grid->addWidget(position_, 0, 1);
    grid->addWidget(histogram_, 1, 0);
    grid->addWidget(budget_, 1, 1);
    clear();
}

QCustomPlot* ResultsAggregatePlots::makePlot(const QString& name, const QString& title, const QString& tip) {
    auto* p = new QCustomPlot(this);
    p->setObjectName(name);
    p->setToolTip(tip);
    p->setMinimumSize(260, 180);
    p->plotLayout()->insertRow(0);
    p->plotLayout()->addElement(0, 0, new QCPTextElement(p, title, QFont(font().family(), 9, QFont::Bold)));
    p->legend->setVisible(true);
    p->legend->setFont(QFont(font().family(), 8));
    p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignBottom);
    installExportMenu(p, name, [p](const QString& path, QString* e) { return exportPlot(p, path, e); }, table_);
    return p;
}

void ResultsAggregatePlots::clear() {
    aggregates_.clear();
    chainRefs_.clear();
    pointPrompts_.clear();
    pointIds_.clear();
    named_.clear();
    drafterLabels_.clear();
    for (auto* p : {tau_, position_, histogram_, budget_}) {
        p->clearPlottables();
        p->clearItems();
        p->replot();
    }
    table_->clear();
    table_->setHorizontalHeaderLabels({tr("drafter"), tr("quantity"), tr("index"), tr("value")});
}

void ResultsAggregatePlots::setResults(const ResultsFile& r) {
    clear();
    const int nd = static_cast<int>(r.drafters.size());
    auto row = [this](const QString& drafter, const QString& quantity, const QString& index, double value) {
        table_->appendRow({new QStandardItem(drafter), new QStandardItem(quantity), new QStandardItem(index),
                           new QStandardItem(QString::number(value, 'g', 8))});
    };
    double maxTau = 1, maxCount = 1;
    int maxPrompts = 1, maxB = 2;
    auto* histGroup = new QCPBarsGroup(histogram_);
    const auto& budgets = r.settings.ddtreeBudgets;
    for (int d = 0; d < nd; ++d) {
        DrafterAggregate a;
        try {
            a = aggregateDrafter(r, d);
        } catch (const std::exception&) {
            a.drafter = d;
        }
        aggregates_.push_back(a);
        const QString label = drafterLabel(r, d);
        const QColor color = drafterColor(d);

        // Per-prompt tau, sorted ascending; prompts that do not count are left out.
        QVector<double> x, y;
        drafterLabels_ << label;
        pointPrompts_.emplace_back();
        pointIds_.emplace_back();
        named_.emplace_back();
        for (std::size_t i : promptsByTau(r, d)) {
            const auto& p = r.prompts[i];
            if (!p.error.empty() || p.drafters.size() <= static_cast<std::size_t>(d)) continue;
            const auto& run = p.drafters[static_cast<std::size_t>(d)].run;
            if (run.steps.empty()) continue;
            x << x.size() + 1;
            y << run.tau;
            pointPrompts_.back().push_back(static_cast<int>(i));
            pointIds_.back() << QString::fromStdString(p.id);
            maxTau = std::max(maxTau, run.tau);
            row(label, tr("prompt tau (sorted)"), QString::fromStdString(p.id), run.tau);
        }
        // The lowest taus are named beside their point (hover names any point).
        for (int k = 0; k < std::min<int>(kNamedPrompts, static_cast<int>(x.size())); ++k) {
            auto* name = new QCPItemText(tau_);
            name->position->setType(QCPItemPosition::ptPlotCoords);
            name->position->setCoords(x[k], y[k]);
            name->setPositionAlignment(Qt::AlignLeft | (d % 2 ? Qt::AlignTop : Qt::AlignBottom));
            name->setPadding(QMargins(5, 1, 2, 1));
            name->setText(pointIds_.back()[k]);
            name->setColor(color.darker(130));
            name->setFont(QFont(font().family(), 7));
            name->setClipToAxisRect(true);
            named_.back() << pointIds_.back()[k];
        }
        maxPrompts = std::max(maxPrompts, static_cast<int>(x.size()));
        auto* g = tau_->addGraph();
        g->setName(tr("%1, macro %2").arg(label).arg(a.macroTau, 0, 'f', 3));
        g->setData(x, y, true);
        g->setPen(QPen(color, 1.2));
        g->setLineStyle(x.size() > 60 ? QCPGraph::lsLine : QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, x.size() > 60 ? 3 : 7));
        if (a.prompts > 0) {
            auto* macro = new QCPItemStraightLine(tau_);
            macro->point1->setCoords(0, a.macroTau);
            macro->point2->setCoords(1, a.macroTau);
            macro->setPen(QPen(color, 1, Qt::DashLine));
        }
        row(label, tr("macro tau"), "", a.macroTau);
        row(label, tr("pooled tau"), "", a.pooledTau);
        row(label, tr("prompts counted"), "", static_cast<double>(a.prompts));
        row(label, tr("prompts skipped"), "", static_cast<double>(a.skipped));

        // Pooled per-position acceptance, j = 1..B-1.
        QVector<double> px, py;
        for (std::size_t j = 1; j < a.perPositionAcceptance.size(); ++j) {
            px << static_cast<double>(j);
            py << a.perPositionAcceptance[j];
            row(label, tr("pooled acceptance rate"), QString::number(j), py.back());
        }
        maxB = std::max(maxB, static_cast<int>(a.perPositionAcceptance.size()));
        auto* pg = position_->addGraph();
        pg->setName(label);
        pg->setData(px, py, true);
        pg->setPen(QPen(color, 2));
        pg->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));

        // Acceptance-length histogram, lengths 1..B.
        QVector<double> hx, hy;
        for (std::size_t n = 1; n < a.acceptanceHistogram.size(); ++n) {
            hx << static_cast<double>(n);
            hy << static_cast<double>(a.acceptanceHistogram[n]);
            maxCount = std::max(maxCount, hy.back());
            row(label, tr("acceptance length count"), QString::number(n), hy.back());
        }
        auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
        bars->setName(label);
        bars->setData(hx, hy, true);
        bars->setWidth(nd > 1 ? 0.8 / nd : 0.8);
        bars->setBrush(color.lighter(150));
        bars->setPen(QPen(color));
        if (nd > 1) bars->setBarsGroup(histGroup);

        // DDTree macro tau per budget, with the chain's macro tau as reference.
        QVector<double> bx, by;
        for (std::size_t k = 0; k < budgets.size() && k < a.treeMacroTau.size(); ++k) {
            bx << budgets[k];
            by << a.treeMacroTau[k];
            maxTau = std::max(maxTau, by.back());
            row(label, tr("DDTree macro tau"), QString::number(budgets[k]), by.back());
        }
        auto* bg = budget_->addGraph();
        bg->setName(label);
        bg->setData(bx, by, true);
        bg->setPen(QPen(color, 2));
        bg->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 7));
        chainRefs_.push_back(a.prompts > 0 ? a.macroTau : std::numeric_limits<double>::quiet_NaN());
        if (a.prompts > 0 && !bx.isEmpty()) {
            auto* chain = new QCPItemStraightLine(budget_);
            chain->point1->setCoords(1, a.macroTau);
            chain->point2->setCoords(2, a.macroTau);
            chain->setPen(QPen(color, 1.2, Qt::DashLine));
            auto* text = new QCPItemText(budget_);
            text->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
            text->position->setType(QCPItemPosition::ptPlotCoords);
            text->position->setCoords(bx.front(), a.macroTau);
            text->setText(tr("chain %1").arg(a.macroTau, 0, 'f', 3));
            text->setColor(color);
            text->setFont(QFont(font().family(), 8));
        }
    }
    tau_->xAxis->setRange(0.3, maxPrompts + 0.7);
    tau_->yAxis->setRange(0, maxTau * (1.15 + 0.12 * nd));  // room for the legend above the points
    position_->xAxis->setRange(0.5, maxB - 0.5);
    position_->yAxis->setRange(0, 1.05);
    histogram_->xAxis->setRange(0.3, maxB + 0.7);
    histogram_->yAxis->setRange(0, maxCount * 1.15);
    if (budgets.empty()) {
        auto* text = new QCPItemText(budget_);
        text->position->setType(QCPItemPosition::ptAxisRectRatio);
        text->position->setCoords(0.5, 0.5);
        // Short lines: the plot may be as narrow as its minimum width (a text item is clipped
        // to the axis rect).
        text->setText(tr("no DDTree budgets\nin this results file\n(draftscope-cli eval\n--ddtree-budget N)"));
        text->setColor(Qt::darkGray);
        budget_->xAxis->setRange(1, 64);
        budget_->legend->setVisible(false);
    } else {
        const double lo = *std::min_element(budgets.begin(), budgets.end());
        const double hi = *std::max_element(budgets.begin(), budgets.end());
        budget_->xAxis->setRange(lo / 1.5, hi * 1.5);
        budget_->legend->setVisible(true);
    }
    budget_->yAxis->setRange(0, maxTau * 1.15);
    for (auto* p : {tau_, position_, histogram_, budget_}) p->replot();
}

QVector<double> ResultsAggregatePlots::plottedValues(Plot plot, int drafter) const {
    if (drafter < 0 || drafter >= static_cast<int>(aggregates_.size())) return {};
    switch (plot) {
    case Plot::PromptTau: return valuesOf(tau_->graph(drafter));
    case Plot::PositionAcceptance: return valuesOf(position_->graph(drafter));
    case Plot::LengthHistogram: return valuesOf(qobject_cast<QCPBars*>(histogram_->plottable(drafter)));
    case Plot::TreeMacroTau: return valuesOf(budget_->graph(drafter));
    }
    return {};
}

QPointF ResultsAggregatePlots::promptPixel(int prompt, int drafter) const {
    if (drafter < 0 || drafter >= static_cast<int>(pointPrompts_.size()) || !tau_->graph(drafter)) return {-1, -1};
    const auto& order = pointPrompts_[static_cast<std::size_t>(drafter)];
    const auto it = std::find(order.begin(), order.end(), prompt);
    if (it == order.end()) return {-1, -1};
    const double rank = static_cast<double>(it - order.begin() + 1);
    const auto data = tau_->graph(drafter)->data()->findBegin(rank, false);
    if (data == tau_->graph(drafter)->data()->constEnd()) return {-1, -1};
    return {tau_->xAxis->coordToPixel(rank), tau_->yAxis->coordToPixel(data->value)};
}

int ResultsAggregatePlots::promptAt(const QPointF& pos, int* drafter, double radius) const {
    int best = -1, bestDrafter = -1;
    double bestDistance = radius * radius;
    for (int d = 0; d < static_cast<int>(pointPrompts_.size()); ++d)
        for (const int prompt : pointPrompts_[static_cast<std::size_t>(d)]) {
            const QPointF p = promptPixel(prompt, d) - pos;
            const double dist = p.x() * p.x() + p.y() * p.y();
            if (dist <= bestDistance) bestDistance = dist, best = prompt, bestDrafter = d;
        }
    if (drafter) *drafter = bestDrafter;
    return best;
}

QString ResultsAggregatePlots::promptPointText(int prompt, int drafter) const {
    if (drafter < 0 || drafter >= static_cast<int>(pointPrompts_.size())) return {};
    const auto& order = pointPrompts_[static_cast<std::size_t>(drafter)];
    const auto it = std::find(order.begin(), order.end(), prompt);
    if (it == order.end()) return {};
    const int rank = static_cast<int>(it - order.begin());
    const double tau = tau_->graph(drafter)->data()->at(rank)->value;
    return tr("%1: tau %2 (rank %3 of %4, drafter %5); click to open it")
        .arg(pointIds_[static_cast<std::size_t>(drafter)][rank])
        .arg(tau, 0, 'f', 3)
        .arg(rank + 1)
        .arg(order.size())
        .arg(drafterLabels_[drafter]);
}

QStringList ResultsAggregatePlots::namedPrompts(int drafter) const {
    return drafter >= 0 && drafter < static_cast<int>(named_.size()) ? named_[static_cast<std::size_t>(drafter)] : QStringList{};
}

bool ResultsAggregatePlots::eventFilter(QObject* watched, QEvent* event) {
    if (watched == tau_ && event->type() == QEvent::ToolTip) {
        // Over a point its prompt, elsewhere the plot's description.
        const auto* he = static_cast<QHelpEvent*>(event);
        int d = -1;
        if (const int prompt = promptAt(he->pos(), &d); prompt >= 0) {
            QToolTip::showText(he->globalPos(), promptPointText(prompt, d), tau_);
            return true;
        }
    }
    if (watched == tau_ && (event->type() == QEvent::MouseMove || event->type() == QEvent::MouseButtonRelease)) {
        const auto* me = static_cast<QMouseEvent*>(event);
        int d = -1;
        const int prompt = promptAt(me->position(), &d);
        if (event->type() == QEvent::MouseMove) {
            tau_->setCursor(prompt >= 0 ? Qt::PointingHandCursor : Qt::ArrowCursor);
            if (prompt >= 0) QToolTip::showText(me->globalPosition().toPoint(), promptPointText(prompt, d), tau_);
            else QToolTip::hideText();
        } else if (prompt >= 0 && me->button() == Qt::LeftButton) {
            emit promptClicked(prompt, d);
        }
    }
    return QWidget::eventFilter(watched, event);
}

double ResultsAggregatePlots::chainReference(int drafter) const {
    if (drafter < 0 || drafter >= static_cast<int>(chainRefs_.size())) return std::numeric_limits<double>::quiet_NaN();
    return chainRefs_[static_cast<std::size_t>(drafter)];
}

QStringList ResultsAggregatePlots::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    for (auto* plot : {tau_, position_, histogram_, budget_}) set.plot(plot->objectName(), plot, 640, 400, figureTitle());
    set.table(exportName(), table_);
    return set.written();
}

}  // namespace draftscope
