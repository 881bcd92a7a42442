#include "hidden_stats_view.h"

#include "figure_export.h"
#include "hidden_stats_plots.h"
#include "token_display.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
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

constexpr int kClickSlopPx = 4;         // a press/release farther apart is a drag, not a click
constexpr int kSummaryOutliersShown = 8;

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
    linePlot_ = new HiddenStatsLinePlot(vsplit);
    linePlot_->setObjectName(QStringLiteral("hiddenStatsLinePlot"));
    // An explicit minimum: otherwise the legend's widest row sets the plot's minimum width.
    linePlot_->setMinimumSize(240, 220);
    vsplit->addWidget(linePlot_);

    auto* hsplit = hsplit_ = new QSplitter(Qt::Horizontal, vsplit);
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
    histKind_ = new QComboBox(histPanel);
    histKind_->setObjectName(QStringLiteral("histogramKindCombo"));
    histKind_->addItems({tr("values"), tr("experts chosen")});
    histKind_->setToolTip(tr("MoE targets: how many tokens the router of this series' layer sent to each expert"));
    hc->addWidget(histKind_);
    histLog_ = new QCheckBox(tr("log y"), histPanel);
    histLog_->setObjectName(QStringLiteral("histogramLogCheck"));
    histLog_->setToolTip(tr("Logarithmic count axis: shows the sparse tails where exploding values live"));
    hc->addWidget(histLog_);
    hv->addLayout(hc);
    histPlot_ = new HiddenStatsHistogramPlot(histPanel);
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
    table_->setToolTip(tr("The statistic chosen above for every series (all four with 'all statistics'); click a row "
                          "to mark its position in the plots"));
    auto* tablePanel = new QWidget(hsplit);
    auto* tv = new QVBoxLayout(tablePanel);
    tv->setContentsMargins(0, 0, 0, 0);
    allStats_ = new QCheckBox(tr("all statistics"), tablePanel);
    allStats_->setObjectName(QStringLiteral("allStatisticsCheck"));
    allStats_->setToolTip(tr("Show rms, mean, std and max|x| of every series in the table, not only the chosen statistic"));
    tv->addWidget(allStats_);
    tv->addWidget(table_, 1);
    hsplit->addWidget(tablePanel);
    hsplit->setStretchFactor(0, 2);
    hsplit->setStretchFactor(1, 3);

    vsplit->addWidget(hsplit);
    vsplit->setStretchFactor(0, 3);
    vsplit->setStretchFactor(1, 2);
    v->addWidget(vsplit, 1);
    stack_->addWidget(content);

    connect(statCombo_, &QComboBox::currentIndexChanged, this, [this] {
        refreshLinePlot();
        updateTableColumns();
    });
    connect(allStats_, &QCheckBox::toggled, this, [this] { updateTableColumns(); });
    connect(lineLog_, &QCheckBox::toggled, this, [this] { refreshLinePlot(); });
    connect(seriesCombo_, &QComboBox::currentIndexChanged, this, [this] { refreshHistogram(); });
    connect(histLog_, &QCheckBox::toggled, this, [this] { refreshHistogram(); });
    connect(histKind_, &QComboBox::currentIndexChanged, this, [this] { refreshHistogram(); });
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

    auto lineRender = [this](const QString& path, QString* error) {
        return linePlot_->exportFigure(path, error, figureTitle());
    };
    installExportMenu(linePlot_, exportName(), lineRender, model_);
    installExportMenu(histPlot_, exportName() + QStringLiteral("_histogram"),
                      [this](const QString& path, QString* error) {
                          return exportPlot(histPlot_, path, error, HiddenStatsHistogramPlot::kExportWidth,
                                            HiddenStatsHistogramPlot::kExportHeight, figureTitle());
                      });
    installExportMenu(table_, exportName(), lineRender, model_);

    clear();
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

    linePlot_->setSeries(*model_);
    const int t = model_->positionCount();
    refreshLinePlot();
    refreshHistogram();
    refreshSummary();
    updateTableColumns();
    highlightPosition(highlighted_ < t ? highlighted_ : -1);
}

void HiddenStatsView::updateTableColumns() {
    // A narrow dock keeps the columns that matter: position, token and the chosen statistic
    // of every series (the token column elided past a readable width).
    const bool all = allStats_->isChecked();
    for (int c = HiddenStatsModel::kFixedColumns; c < model_->columnCount(); ++c)
        table_->setColumnHidden(c, !all && model_->seriesForColumn(c) >= 0 && model_->statForColumn(c) != statistic());
    // Widths from the cells, not the long series names of the headers (elided; the header
    // tooltip and the export keep them whole).
    const QFontMetrics fm = table_->fontMetrics();
    const int tokenWidth = fm.horizontalAdvance(QStringLiteral("'abcdefghij'")) + 12;
    const int headerFloor = fm.horizontalAdvance(QStringLiteral("max|x| ")) + 16;
    for (int c = 0; c < model_->columnCount(); ++c) {
        if (table_->isColumnHidden(c)) continue;
        int cells = 0;  // the widest of (up to) the first 2000 rows' texts
        for (int r = 0, rows = std::min(proxy_->rowCount(), 2000); r < rows; ++r)
            cells = std::max(cells, fm.horizontalAdvance(proxy_->index(r, c).data().toString()));
        int w = std::max(cells + 14, headerFloor);
        if (c == HiddenStatsModel::kPositionColumn) w = std::max(w, table_->horizontalHeader()->sectionSizeHint(c));
        if (c == HiddenStatsModel::kTokenColumn) w = std::min(w, tokenWidth);
        table_->setColumnWidth(c, w);
    }
    table_->setTextElideMode(Qt::ElideRight);
}

void HiddenStatsView::resizeEvent(QResizeEvent* e) {
    QWidget::resizeEvent(e);
    // Narrow: the histogram above the table, so the table has the dock's whole width.
    const Qt::Orientation o = width() < kSideBySideWidth ? Qt::Vertical : Qt::Horizontal;
    if (hsplit_ && hsplit_->orientation() != o) hsplit_->setOrientation(o);
}

bool HiddenStatsView::allStatisticsShown() const { return allStats_->isChecked(); }

void HiddenStatsView::setAllStatisticsShown(bool on) { allStats_->setChecked(on); }

void HiddenStatsView::clear() { setStats({}, {}); }

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

QCPGraph* HiddenStatsView::seriesGraph(int series) const { return linePlot_->seriesGraph(series); }
QCPGraph* HiddenStatsView::outlierGraph(int series) const { return linePlot_->outlierGraph(series); }
QCPBars* HiddenStatsView::histogramBars() const { return histPlot_->bars(); }
QCPItemRect* HiddenStatsView::generatedShade() const { return linePlot_->generatedShade(); }
QCPItemStraightLine* HiddenStatsView::promptBoundary() const { return linePlot_->promptBoundary(); }
QCPItemText* HiddenStatsView::partLabel() const { return linePlot_->partLabel(); }

void HiddenStatsView::refreshLinePlot() {
    lineLog_->setEnabled(statistic() != HiddenStat::Mean);
    linePlot_->showStatistic(*model_, statistic(), lineLog_->isChecked());
}

bool HiddenStatsView::histogramShowsExperts() const { return histKind_->isEnabled() && histKind_->currentIndex() == 1; }
void HiddenStatsView::setHistogramShowsExperts(bool experts) { histKind_->setCurrentIndex(experts ? 1 : 0); }

void HiddenStatsView::refreshHistogram() {
    const auto& series = model_->stats().series;
    const int si = seriesCombo_->currentIndex();
    const auto* s = si >= 0 && si < int(series.size()) ? &series[std::size_t(si)] : nullptr;
    histKind_->setEnabled(s && s->numExperts > 0);  // only a series with a router has experts
    histPlot_->showSeries(s, histLog_->isChecked(), histogramShowsExperts());
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
                const QString piece = displayPiece(model_->tokenPiece(p), 16);
                ps << (piece.isEmpty() ? QString::number(p) : QStringLiteral("%1 \"%2\"").arg(p).arg(piece));
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
        linePlot_->setMarker(-1);
        table_->clearSelection();
    } else {
        highlighted_ = position;
        linePlot_->setMarker(position);
        const QModelIndex index = proxy_->mapFromSource(model_->index(position, 0));
        if (index.isValid()) {
            table_->selectRow(index.row());
            table_->scrollTo(index);
        }
    }
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

QStringList HiddenStatsView::exportAll(const QString& dir, QString* error) {
    // Export sizes are fixed so that scripted exports do not depend on the window size.
    linePlot_->replot();
    histPlot_->replot();
    FigureSet set(dir, error);
    set.figure(exportName(), [this](const QString& path, QString* e) { return linePlot_->exportFigure(path, e, figureTitle()); }) &&
        set.plot(exportName() + QStringLiteral("_histogram"), histPlot_, HiddenStatsHistogramPlot::kExportWidth,
                 HiddenStatsHistogramPlot::kExportHeight, figureTitle()) &&
        set.table(exportName(), model_);
    return set.written();
}

void HiddenStatsView::setCaption(const QString& text) {
    caption_->setText(text);
    caption_->setVisible(!text.isEmpty());
}

QString HiddenStatsView::caption() const { return caption_->text(); }

}  // namespace draftscope
