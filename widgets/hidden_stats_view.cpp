#include "hidden_stats_view.h"

#include "figure_export.h"
#include "token_display.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace draftscope {

namespace {

// Qualitative palette without red (red is reserved for the outlier markers).
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
const QColor kOutlierColor(214, 39, 40);
constexpr int kLineExportWidth = 1000, kLineExportHeight = 520;
constexpr int kHistExportWidth = 760, kHistExportHeight = 460;
constexpr int kPointMarkersUpTo = 64;   // positions up to which every point gets a dot
constexpr int kClickSlopPx = 4;         // a press/release farther apart is a drag, not a click
constexpr int kSummaryOutliersShown = 8;

QColor seriesColor(int i) { return QColor(kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))]); }

QString elided(const QString& s, int maxChars) {
    return s.size() <= maxChars ? s : s.left(maxChars - 1) + QChar(0x2026);
}

const QString kDefaultPlaceholder = QStringLiteral(
    "No hidden-state statistics to show.\n\n"
    "Compute them for a prompt to see, per position, the RMS, mean, std and max|x| (over the hidden "
    "dimension) of every tapped target layer (target_layer_ids) and of the drafter's projected "
    "context, with RMS outliers flagged.");

}  // namespace

HiddenStatsView::HiddenStatsView(QWidget* parent) : QWidget(parent) {
    model_ = new HiddenStatsModel(this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(model_);

    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    stack_ = new QStackedWidget(this);
    outer->addWidget(stack_);

    placeholder_ = new QLabel(kDefaultPlaceholder, stack_);
    placeholder_->setObjectName(QStringLiteral("hiddenStatsPlaceholder"));
    placeholder_->setAlignment(Qt::AlignCenter);
    placeholder_->setWordWrap(true);
    placeholder_->setMargin(24);
    stack_->addWidget(placeholder_);

    auto* content = new QWidget(stack_);
    auto* v = new QVBoxLayout(content);
    v->setContentsMargins(4, 4, 4, 4);
    caption_ = new QLabel(content);
    caption_->setObjectName(QStringLiteral("hiddenStatsCaption"));
    caption_->setWordWrap(true);
    caption_->setVisible(false);
    v->addWidget(caption_);
    auto* whitespace = new QLabel(whitespaceLegend(), content);
    whitespace->setObjectName(QStringLiteral("whitespaceLegend"));
    v->addWidget(whitespace);

    // Line plot controls and summary.
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Statistic:"), content));
    statCombo_ = new QComboBox(content);
    statCombo_->setObjectName(QStringLiteral("statisticCombo"));
    for (int s = 0; s < kHiddenStatCount; ++s) {
        const auto stat = static_cast<HiddenStat>(s);
        statCombo_->addItem(hiddenStatLabel(stat));
        statCombo_->setItemData(s, hiddenStatDefinition(stat), Qt::ToolTipRole);
    }
    controls->addWidget(statCombo_);
    lineLog_ = new QCheckBox(tr("log y"), content);
    lineLog_->setObjectName(QStringLiteral("lineLogCheck"));
    lineLog_->setToolTip(tr("Logarithmic y axis (not for the mean, which can be negative)"));
    controls->addWidget(lineLog_);
    controls->addSpacing(12);
    summary_ = new QLabel(content);
    summary_->setObjectName(QStringLiteral("hiddenStatsSummary"));
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    controls->addWidget(summary_, 1);
    v->addLayout(controls);

    auto* vsplit = new QSplitter(Qt::Vertical, content);
    linePlot_ = new QCustomPlot(vsplit);
    linePlot_->setObjectName(QStringLiteral("hiddenStatsLinePlot"));
    // An explicit minimum: otherwise the legend's widest row sets the plot's minimum width.
    linePlot_->setMinimumSize(240, 220);
    linePlot_->installEventFilter(this);
    vsplit->addWidget(linePlot_);

    auto* hsplit = new QSplitter(Qt::Horizontal, vsplit);
    auto* histPanel = new QWidget(hsplit);
    auto* hv = new QVBoxLayout(histPanel);
    hv->setContentsMargins(0, 0, 0, 0);
    auto* hc = new QHBoxLayout;
    hc->addWidget(new QLabel(tr("Histogram of:"), histPanel));
    seriesCombo_ = new QComboBox(histPanel);
    seriesCombo_->setObjectName(QStringLiteral("histogramSeriesCombo"));
    seriesCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    seriesCombo_->setMinimumContentsLength(18);
    hc->addWidget(seriesCombo_, 1);
    histLog_ = new QCheckBox(tr("log y"), histPanel);
    histLog_->setObjectName(QStringLiteral("histogramLogCheck"));
    histLog_->setToolTip(tr("Logarithmic count axis: shows the sparse tails where exploding values live"));
    hc->addWidget(histLog_);
    hv->addLayout(hc);
    histPlot_ = new QCustomPlot(histPanel);
    histPlot_->setObjectName(QStringLiteral("hiddenStatsHistogramPlot"));
    histPlot_->setMinimumSize(260, 200);
    hv->addWidget(histPlot_, 1);
    hsplit->addWidget(histPanel);

    table_ = new QTableView(hsplit);
    table_->setObjectName(QStringLiteral("hiddenStatsTable"));
    table_->setModel(proxy_);
    table_->setSortingEnabled(true);
    table_->sortByColumn(HiddenStatsModel::kPositionColumn, Qt::AscendingOrder);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->setVisible(false);
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
    table_->horizontalHeader()->setStretchLastSection(false);
    hsplit->addWidget(table_);
    hsplit->setStretchFactor(0, 2);
    hsplit->setStretchFactor(1, 3);

    vsplit->addWidget(hsplit);
    vsplit->setStretchFactor(0, 3);
    vsplit->setStretchFactor(1, 2);
    v->addWidget(vsplit, 1);
    stack_->addWidget(content);

    buildLinePlot();
    buildHistogramPlot();

    connect(statCombo_, &QComboBox::currentIndexChanged, this, [this] { refreshLinePlot(); });
    connect(lineLog_, &QCheckBox::toggled, this, [this] { refreshLinePlot(); });
    connect(seriesCombo_, &QComboBox::currentIndexChanged, this, [this] { refreshHistogram(); });
    connect(histLog_, &QCheckBox::toggled, this, [this] { refreshHistogram(); });
    connect(linePlot_, &QCustomPlot::mousePress, this, &HiddenStatsView::onLinePress);
    connect(linePlot_, &QCustomPlot::mouseRelease, this, &HiddenStatsView::onLineRelease);
    connect(linePlot_, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) {
        refreshLinePlot();  // resets the zoom
    });
    connect(table_, &QTableView::clicked, this, [this](const QModelIndex& index) {
        const int position = proxy_->mapToSource(index).row();
        if (position < 0) return;
        highlightPosition(position);
        emit positionClicked(position);
    });

    auto lineRender = [this](const QString& path, QString* error) { return exportLinePlot(path, error); };
    installExportMenu(linePlot_, exportName(), lineRender, model_);
    installExportMenu(histPlot_, exportName() + QStringLiteral("_histogram"),
                      [this](const QString& path, QString* error) {
                          return exportPlot(histPlot_, path, error, kHistExportWidth, kHistExportHeight, figureTitle());
                      });
    installExportMenu(table_, exportName(), lineRender, model_);

    clear();
}

void HiddenStatsView::buildLinePlot() {
    QCustomPlot* p = linePlot_;
    p->plotLayout()->insertRow(0);
    QFont titleFont = font();
    titleFont.setBold(true);
    lineTitle_ = new QCPTextElement(p, QString(), titleFont);
    p->plotLayout()->addElement(0, 0, lineTitle_);

    // Legend in its own row under the axis rect, two entries per row.
    p->legend->setVisible(true);
    p->axisRect()->insetLayout()->take(p->legend);
    p->plotLayout()->addElement(2, 0, p->legend);
    p->plotLayout()->setRowStretchFactor(2, 0.001);
    p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    p->legend->setWrap(1);  // updateLegendWrap() fits as many entries per row as the width allows
    p->legend->setBorderPen(Qt::NoPen);
    p->legend->setMargins(QMargins(4, 0, 4, 2));

    p->xAxis->setLabel(tr("position"));
    p->xAxis->grid()->setVisible(false);
    p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    p->axisRect()->setRangeDrag(Qt::Horizontal);
    p->axisRect()->setRangeZoom(Qt::Horizontal);

    marker_ = new QCPItemStraightLine(p);
    QPen mp(QColor(40, 40, 40));
    mp.setStyle(Qt::DashLine);
    mp.setWidthF(1.5);
    marker_->setPen(mp);
    marker_->setSelectable(false);
    marker_->setVisible(false);
    marker_->point1->setCoords(0, 0);
    marker_->point2->setCoords(0, 1);
    // Created after the marker (item 0). Generated positions: shaded, behind the graphs.
    generatedShade_ = new QCPItemRect(p);
    generatedShade_->setLayer(QStringLiteral("background"));
    generatedShade_->setPen(Qt::NoPen);
    generatedShade_->setBrush(QColor(70, 110, 170, 38));
    generatedShade_->setSelectable(false);
    generatedShade_->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    generatedShade_->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    boundary_ = new QCPItemStraightLine(p);
    boundary_->setPen(QPen(QColor(70, 110, 170), 1.2));
    boundary_->setSelectable(false);
    boundary_->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
    boundary_->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
    partLabel_ = new QCPItemText(p);
    partLabel_->setText(tr("prompt | generated"));
    partLabel_->setColor(QColor(40, 70, 120));
    partLabel_->setSelectable(false);
    partLabel_->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
    partLabel_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    for (QCPAbstractItem* item : {static_cast<QCPAbstractItem*>(generatedShade_), static_cast<QCPAbstractItem*>(boundary_),
                                  static_cast<QCPAbstractItem*>(partLabel_)})
        item->setVisible(false);
}

void HiddenStatsView::buildHistogramPlot() {
    QCustomPlot* p = histPlot_;
    p->plotLayout()->insertRow(0);
    QFont titleFont = font();
    titleFont.setBold(true);
    histTitle_ = new QCPTextElement(p, QString(), titleFont);
    p->plotLayout()->addElement(0, 0, histTitle_);
    bars_ = new QCPBars(p->xAxis, p->yAxis);
    bars_->setWidthType(QCPBars::wtPlotCoords);
    bars_->setPen(QPen(QColor(31, 119, 180).darker(130), 0.5));
    bars_->setBrush(QColor(31, 119, 180, 190));
    p->xAxis->setLabel(tr("value"));
    p->yAxis->setLabel(tr("count (all positions × hidden dims)"));
    p->xAxis->grid()->setVisible(false);
}

void HiddenStatsView::setStats(const HiddenStateStats& stats, const std::vector<QString>& tokenPieces) {
    const int previousSeries = seriesCombo_->currentIndex();
    model_->setStats(stats, tokenPieces);
    const bool empty = model_->positionCount() == 0 || stats.series.empty();
    stack_->setCurrentIndex(empty ? 0 : 1);

    {
        const QSignalBlocker block(seriesCombo_);
        seriesCombo_->clear();
        for (const auto& s : stats.series) seriesCombo_->addItem(hiddenSeriesLabel(s));
        if (!stats.series.empty())
            seriesCombo_->setCurrentIndex(previousSeries >= 0 && previousSeries < int(stats.series.size()) ? previousSeries : 0);
    }

    // Graphs: one line per series, plus its outlier markers (one legend entry for all).
    linePlot_->clearGraphs();
    graphs_.clear();
    outlierGraphs_.clear();
    bool anyOutlier = false;
    for (std::size_t i = 0; i < stats.series.size(); ++i) {
        const auto& s = stats.series[i];
        auto* g = linePlot_->addGraph();
        QPen pen(seriesColor(int(i)));
        pen.setWidthF(1.6);
        if (s.layerId < 0) pen.setStyle(Qt::DashLine);  // the drafter's context
        g->setPen(pen);
        g->setName(hiddenSeriesLabel(s));
        if (model_->positionCount() <= kPointMarkersUpTo)
            g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, seriesColor(int(i)), 4));
        graphs_.push_back(g);
        anyOutlier = anyOutlier || !s.outlierPositions.empty();
    }
    for (std::size_t i = 0; i < stats.series.size(); ++i) {
        auto* o = linePlot_->addGraph();
        o->setLineStyle(QCPGraph::lsNone);
        o->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(kOutlierColor, 2), Qt::NoBrush, 11));
        o->setName(tr("RMS outlier (robust z > 5)"));
        if (i > 0 || !anyOutlier) o->removeFromLegend();
        outlierGraphs_.push_back(o);
    }

    // x axis: token pieces as tick labels when there are few positions.
    const int t = model_->positionCount();
    if (t > 0 && t <= kMaxTokenTicks) {
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        for (int pos = 0; pos < t; ++pos) {
            const QString piece = displayPiece(model_->tokenPiece(pos));
            ticker->addTick(pos, piece.isEmpty() ? QString::number(pos)
                                                 : QStringLiteral("%1 %2").arg(pos).arg(elided(piece, 12)));
        }
        linePlot_->xAxis->setTicker(ticker);
        linePlot_->xAxis->setTickLabelRotation(t > 8 ? 60 : 0);
        linePlot_->xAxis->setLabel(tr("position  token"));
    } else {
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        linePlot_->xAxis->setTicker(ticker);
        linePlot_->xAxis->setTickLabelRotation(0);
        linePlot_->xAxis->setLabel(tr("position"));
    }
    linePlot_->xAxis->setSubTicks(false);

    updateLegendWrap(linePlot_->width());
    refreshLinePlot();
    refreshHistogram();
    refreshSummary();
    table_->resizeColumnsToContents();
    highlightPosition(highlighted_ < t ? highlighted_ : -1);
}

void HiddenStatsView::clear() { setStats({}, {}); }

bool HiddenStatsView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == linePlot_ && event->type() == QEvent::Resize) updateLegendWrap(linePlot_->width());
    return QWidget::eventFilter(watched, event);
}

void HiddenStatsView::updateLegendWrap(int plotWidth) {
    QCPLegend* legend = linePlot_->legend;
    int widest = 1;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i))
            widest = std::max(widest, item->minimumOuterSizeHint().width());
    const int available = plotWidth - legend->margins().left() - legend->margins().right() - 8;
    const int wrap = std::clamp((available + legend->columnSpacing()) / (widest + legend->columnSpacing()), 1, 4);
    if (wrap != legend->wrap()) {
        legend->setWrap(wrap);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // re-flows the entries
        linePlot_->replot(QCustomPlot::rpQueuedReplot);
    }
}

HiddenStat HiddenStatsView::statistic() const { return static_cast<HiddenStat>(std::max(0, statCombo_->currentIndex())); }

void HiddenStatsView::setStatistic(HiddenStat stat) { statCombo_->setCurrentIndex(static_cast<int>(stat)); }

int HiddenStatsView::histogramSeries() const { return seriesCombo_->currentIndex(); }

void HiddenStatsView::setHistogramSeries(int series) {
    if (series >= 0 && series < seriesCombo_->count()) seriesCombo_->setCurrentIndex(series);
}

bool HiddenStatsView::histogramLogScale() const { return histLog_->isChecked(); }

void HiddenStatsView::setHistogramLogScale(bool log) { histLog_->setChecked(log); }

bool HiddenStatsView::lineLogScale() const { return lineLog_->isChecked(); }

void HiddenStatsView::setLineLogScale(bool log) { lineLog_->setChecked(log); }

bool HiddenStatsView::isShowingPlaceholder() const { return stack_->currentWidget() == placeholder_; }

QString HiddenStatsView::placeholderText() const { return placeholder_->text(); }

void HiddenStatsView::setPlaceholderText(const QString& text) { placeholder_->setText(text); }

QCPGraph* HiddenStatsView::seriesGraph(int series) const {
    return series >= 0 && series < int(graphs_.size()) ? graphs_[std::size_t(series)] : nullptr;
}

QCPGraph* HiddenStatsView::outlierGraph(int series) const {
    return series >= 0 && series < int(outlierGraphs_.size()) ? outlierGraphs_[std::size_t(series)] : nullptr;
}

void HiddenStatsView::refreshLinePlot() {
    const HiddenStat stat = statistic();
    const auto& stats = model_->stats();
    const int t = model_->positionCount();
    const bool log = lineLog_->isChecked() && stat != HiddenStat::Mean;
    lineLog_->setEnabled(stat != HiddenStat::Mean);

    for (std::size_t i = 0; i < graphs_.size() && i < stats.series.size(); ++i) {
        const auto& values = hiddenStatValues(stats.series[i], stat);
        QVector<double> keys, vals;
        keys.reserve(int(values.size()));
        vals.reserve(int(values.size()));
        for (std::size_t p = 0; p < values.size(); ++p) {
            keys << double(p);
            vals << (std::isfinite(values[p]) ? double(values[p]) : qQNaN());  // non-finite: a gap
        }
        graphs_[i]->setData(keys, vals, true);
        QVector<double> ok, ov;
        for (std::int64_t p : stats.series[i].outlierPositions) {
            if (p < 0 || p >= std::int64_t(values.size()) || !std::isfinite(values[std::size_t(p)])) continue;
            ok << double(p);
            ov << double(values[std::size_t(p)]);
        }
        outlierGraphs_[i]->setData(ok, ov);
    }

    QCPAxis* y = linePlot_->yAxis;
    if (log) {
        y->setScaleType(QCPAxis::stLogarithmic);
        y->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        y->setNumberFormat(QStringLiteral("eb"));
        y->setNumberPrecision(0);
    } else {
        y->setScaleType(QCPAxis::stLinear);
        y->setTicker(QSharedPointer<QCPAxisTicker>::create());
        y->setNumberFormat(QStringLiteral("g"));
        y->setNumberPrecision(6);
    }
    linePlot_->xAxis->setRange(-0.5, std::max(0, t - 1) + 0.5);
    const int promptLength = model_->promptLength();
    const bool generated = promptLength < t;
    const double edge = promptLength - 0.5;  // between the last prompt and the first generated position
    generatedShade_->topLeft->setCoords(edge, 0);
    generatedShade_->bottomRight->setCoords(t - 0.5, 1);
    boundary_->point1->setCoords(edge, 0);
    boundary_->point2->setCoords(edge, 1);
    partLabel_->position->setCoords(edge, 0.01);
    generatedShade_->setVisible(generated);
    boundary_->setVisible(generated);
    partLabel_->setVisible(generated);
    bool found = false;
    QCPRange r;
    for (auto* g : graphs_) {
        bool f = false;
        const QCPRange gr = g->getValueRange(f, log ? QCP::sdPositive : QCP::sdBoth);
        if (!f) continue;
        r = found ? QCPRange(std::min(r.lower, gr.lower), std::max(r.upper, gr.upper)) : gr;
        found = true;
    }
    if (!found) {
        y->setRange(log ? QCPRange(0.1, 10) : QCPRange(0, 1));
    } else if (log) {
        y->setRange(r.lower / 1.6, r.upper * 1.6);
    } else {
        double lo = stat == HiddenStat::Mean ? r.lower : std::min(0.0, r.lower);
        double hi = r.upper;
        double pad = (hi - lo) * 0.06;
        if (pad <= 0) pad = std::max(std::fabs(hi) * 0.1, 1e-3);
        y->setRange(stat == HiddenStat::Mean || lo < 0 ? lo - pad : lo, hi + pad);
    }
    y->setLabel(tr("%1 over hidden dim").arg(hiddenStatLabel(stat)));
    lineTitle_->setText(t == 0 || stats.series.empty()
                            ? tr("Hidden-state statistics: no data")
                            : tr("Per-position %1 of the hidden states (%2 positions)").arg(hiddenStatLabel(stat)).arg(t));
    linePlot_->replot(QCustomPlot::rpQueuedReplot);
}

void HiddenStatsView::refreshHistogram() {
    const auto& stats = model_->stats();
    const int si = seriesCombo_->currentIndex();
    QVector<double> keys, counts;
    double width = 1.0;
    QString title = tr("Value histogram: no data");
    if (si >= 0 && si < int(stats.series.size())) {
        const auto& s = stats.series[std::size_t(si)];
        const std::size_t bins = std::min(s.histogramCounts.size(), s.histogramEdges.empty() ? 0 : s.histogramEdges.size() - 1);
        for (std::size_t b = 0; b < bins; ++b) {
            keys << 0.5 * (s.histogramEdges[b] + s.histogramEdges[b + 1]);
            counts << double(s.histogramCounts[b]);
        }
        if (bins > 0) width = (s.histogramEdges[bins] - s.histogramEdges[0]) / double(bins);
        title = bins > 0 ? tr("Value histogram\n%1").arg(hiddenSeriesLabel(s))
                         : tr("Value histogram: none\n%1").arg(hiddenSeriesLabel(s));
    }
    bars_->setWidth(width > 0 ? width : 1.0);
    bars_->setData(keys, counts, true);
    histTitle_->setText(title);

    const bool log = histLog_->isChecked();
    QCPAxis* y = histPlot_->yAxis;
    double maxCount = 0;
    for (double c : counts) maxCount = std::max(maxCount, c);
    if (log) {
        y->setScaleType(QCPAxis::stLogarithmic);
        y->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        y->setNumberFormat(QStringLiteral("eb"));
        y->setNumberPrecision(0);
        y->setRange(0.5, std::max(10.0, maxCount * 2.0));
    } else {
        y->setScaleType(QCPAxis::stLinear);
        y->setTicker(QSharedPointer<QCPAxisTicker>::create());
        y->setNumberFormat(QStringLiteral("g"));
        y->setNumberPrecision(6);
        y->setRange(0, maxCount > 0 ? maxCount * 1.08 : 1.0);
    }
    if (!keys.isEmpty())
        histPlot_->xAxis->setRange(keys.first() - width, keys.last() + width);
    else
        histPlot_->xAxis->setRange(0, 1);
    histPlot_->replot(QCustomPlot::rpQueuedReplot);
}

void HiddenStatsView::refreshSummary() {
    const auto& stats = model_->stats();
    const int t = model_->positionCount();
    QStringList parts;
    const int promptLength = model_->promptLength();
    if (promptLength < t)
        parts << tr("%1 positions (%2 prompt | %3 generated, shaded), %4 series.").arg(t).arg(promptLength)
                     .arg(t - promptLength).arg(stats.series.size());
    else
        parts << tr("%1 positions, %2 series.").arg(t).arg(stats.series.size());
    QStringList outliers, nonFinite;
    for (const auto& s : stats.series) {
        const QString name = QString::fromStdString(s.name);
        if (!s.outlierPositions.empty()) {
            QStringList ps;
            for (std::size_t k = 0; k < s.outlierPositions.size() && k < std::size_t(kSummaryOutliersShown); ++k) {
                const int p = int(s.outlierPositions[k]);
                const QString piece = displayPiece(model_->tokenPiece(p));
                ps << (piece.isEmpty() ? QString::number(p) : QStringLiteral("%1 \"%2\"").arg(p).arg(elided(piece, 16)));
            }
            if (s.outlierPositions.size() > std::size_t(kSummaryOutliersShown))
                ps << tr("… (%1 in all)").arg(s.outlierPositions.size());
            outliers << QStringLiteral("%1: %2").arg(name, ps.join(QStringLiteral(", ")));
        }
        int bad = 0;
        for (int st = 0; st < kHiddenStatCount; ++st)
            for (float x : hiddenStatValues(s, static_cast<HiddenStat>(st))) bad += std::isfinite(x) ? 0 : 1;
        if (bad > 0) nonFinite << tr("%1 (%2 values)").arg(name).arg(bad);
    }
    parts << (outliers.isEmpty() ? tr("No RMS outliers.")
                                 : tr("RMS outliers (robust z > 5): %1.").arg(outliers.join(QStringLiteral("; "))));
    if (!nonFinite.isEmpty()) parts << tr("Non-finite statistics (inf/NaN, drawn as gaps): %1.").arg(nonFinite.join(QStringLiteral(", ")));
    summary_->setText(parts.join(QLatin1Char(' ')));
    summary_->setStyleSheet(nonFinite.isEmpty() ? QString() : QStringLiteral("color: #b00000;"));
}

void HiddenStatsView::highlightPosition(int position) {
    const int t = model_->positionCount();
    if (position < 0 || position >= t) {
        highlighted_ = -1;
        marker_->setVisible(false);
        table_->clearSelection();
    } else {
        highlighted_ = position;
        marker_->point1->setCoords(position, 0);
        marker_->point2->setCoords(position, 1);
        marker_->setVisible(true);
        const QModelIndex index = proxy_->mapFromSource(model_->index(position, 0));
        if (index.isValid()) {
            table_->selectRow(index.row());
            table_->scrollTo(index);
        }
    }
    linePlot_->replot(QCustomPlot::rpQueuedReplot);
}

void HiddenStatsView::onLinePress(QMouseEvent* event) {
    pressed_ = event->button() == Qt::LeftButton;
    pressPos_ = event->pos();
}

void HiddenStatsView::onLineRelease(QMouseEvent* event) {
    if (!pressed_ || event->button() != Qt::LeftButton) return;
    pressed_ = false;
    if ((event->pos() - pressPos_).manhattanLength() > kClickSlopPx) return;  // a drag
    const int t = model_->positionCount();
    if (t == 0 || !linePlot_->axisRect()->rect().contains(event->pos())) return;
    const int position = std::clamp(int(std::lround(linePlot_->xAxis->pixelToCoord(event->pos().x()))), 0, t - 1);
    highlightPosition(position);
    emit positionClicked(position);
}

bool HiddenStatsView::exportLinePlot(const QString& path, QString* error) {
    updateLegendWrap(kLineExportWidth);  // legend rows fitted to the export width
    // The clicked-position marker is an on-screen state, not part of the figure.
    const bool marked = marker_->visible();
    marker_->setVisible(false);
    const bool ok = exportPlot(linePlot_, path, error, kLineExportWidth, kLineExportHeight, figureTitle());
    marker_->setVisible(marked);
    updateLegendWrap(linePlot_->width());
    return ok;
}

QStringList HiddenStatsView::exportAll(const QString& dir, QString* error) {
    QStringList written;
    if (!QDir().mkpath(dir)) {
        if (error) *error = tr("cannot create directory '%1'").arg(dir);
        return written;
    }
    const QDir d(dir);
    QString err;
    auto fail = [&](const QString& e) {
        if (error) *error = e;
        return written;
    };
    // Export sizes are fixed so that scripted exports do not depend on the window size.
    linePlot_->replot();
    histPlot_->replot();
    for (const QString& fmt : figureFormats()) {
        const QString path = d.filePath(exportName() + QLatin1Char('.') + fmt);
        if (!exportLinePlot(path, &err)) return fail(err);
        written << path;
    }
    for (const QString& fmt : figureFormats()) {
        const QString path = d.filePath(exportName() + QStringLiteral("_histogram.") + fmt);
        if (!exportPlot(histPlot_, path, &err, kHistExportWidth, kHistExportHeight, figureTitle())) return fail(err);
        written << path;
    }
    for (const QString& fmt : tableFormats()) {
        const QString path = d.filePath(exportName() + QLatin1Char('.') + fmt);
        if (!exportTable(model_, path, &err)) return fail(err);
        written << path;
    }
    return written;
}

void HiddenStatsView::setCaption(const QString& text) {
    caption_->setText(text);
    caption_->setVisible(!text.isEmpty());
}

QString HiddenStatsView::caption() const { return caption_->text(); }

}  // namespace draftscope
