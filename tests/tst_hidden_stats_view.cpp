// HiddenStatsModel and HiddenStatsView: table cells/headers/tooltips/outlier role, model
// resets, line-plot and histogram data, outlier markers, clicks, exports, empty placeholder.

#include "hidden_stats_model.h"
#include "hidden_stats_view.h"

#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace draftscope;

namespace {

const char* const kL1 = "target layer 1 (hidden_states[2])";
const char* const kDr = "drafter context";

/// 2 series x 5 positions; series 0 has an RMS outlier at position 4.
HiddenStateStats makeStats() {
    HiddenStateStats st;
    st.ids = {101, 102, 103, 104, 105};
    HiddenSeriesStats a;
    a.name = kL1;
    a.layerId = 1;
    a.layerType = "full_attention";
    a.rms = {1.25f, 1.5f, 1.0f, 2.0f, 40.0f};
    a.mean = {0.1f, -0.25f, 0.0f, 0.3f, -5.5f};
    a.std = {1.2f, 1.4f, 1.0f, 1.9f, 39.5f};
    a.maxAbs = {3.5f, 4.0f, 2.5f, 6.0f, 300.0f};
    a.histogramEdges = {-300, -150, 0, 150, 300};
    a.histogramCounts = {2, 100, 120, 3};
    a.outlierPositions = {4};
    HiddenSeriesStats b;
    b.name = kDr;
    b.layerId = -1;
    b.layerType = "fc + hidden_norm";
    b.rms = {0.5f, 0.25f, 0.75f, 1.0f, 0.125f};
    b.mean = {0.0f, 0.01f, -0.02f, 0.03f, 0.0f};
    b.std = {0.5f, 0.25f, 0.7f, 0.99f, 0.12f};
    b.maxAbs = {2.0f, 1.0f, 3.0f, 4.0f, 0.5f};
    b.histogramEdges = {-4, -2, 0, 2, 4, 6};
    b.histogramCounts = {1, 40, 50, 8, 1};
    st.series = {a, b};
    return st;
}

std::vector<QString> pieces() { return {"Hello", " world", "\n", ",", " yes"}; }

/// 3 positions, 1 series (a differently sized reset target).
HiddenStateStats makeSmallStats() {
    HiddenStateStats st;
    st.ids = {7, 8, 9};
    HiddenSeriesStats a;
    a.name = "target layer 3 (hidden_states[4])";
    a.layerId = 3;
    a.layerType = "linear_attention";
    a.rms = {1, 2, 3};
    a.mean = {0, 0, 0};
    a.std = {1, 2, 3};
    a.maxAbs = {2, 4, 6};
    a.histogramEdges = {0, 1};
    a.histogramCounts = {9};
    st.series = {a};
    return st;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

}  // namespace

class TestHiddenStatsView : public QObject {
    Q_OBJECT

private slots:
    void histogramBarsWithoutAPlot() {
        // Edges -4..6 in 5 bins of width 2: centres -3, -1, 1, 3, 5 with their counts.
        const auto st = makeStats();
        const HiddenHistogram h = hiddenHistogram(&st.series[1]);
        QCOMPARE(h.centres, (QVector<double>{-3, -1, 1, 3, 5}));
        QCOMPARE(h.counts, (QVector<double>{1, 40, 50, 8, 1}));
        QCOMPARE(h.width, 2.0);
        QCOMPARE(h.title, QString("Value histogram\n") + hiddenSeriesLabel(st.series[1]));
        // One count short of the edges: only the bins that have a count.
        HiddenSeriesStats shortCounts = st.series[0];
        shortCounts.histogramCounts = {2, 100};
        const HiddenHistogram s = hiddenHistogram(&shortCounts);
        QCOMPARE(s.centres, (QVector<double>{-225, -75}));
        QCOMPARE(s.width, 150.0);
        HiddenSeriesStats none = st.series[0];
        none.histogramEdges.clear();
        QVERIFY(hiddenHistogram(&none).centres.isEmpty());
        QVERIFY(hiddenHistogram(&none).title.startsWith("Value histogram: none\n"));
        QCOMPARE(hiddenHistogram(nullptr).title, QString("Value histogram: no data"));
        QCOMPARE(hiddenHistogram(nullptr).width, 1.0);
    }

    void expertHistogramCountsTheRoutersChoices() {
        // 5 positions x top-2 over 4 experts: hand counts 0:3, 1:4, 2:0, 3:3.
        auto st = makeStats();
        auto& a = st.series[0];
        a.numExperts = 4;
        a.expertChoices = {1, 0, 1, 3, 0, 1, 3, 1, 0, 3};
        const HiddenHistogram h = expertHistogram(&a);
        QCOMPARE(h.centres, (QVector<double>{0, 1, 2, 3}));
        QCOMPARE(h.counts, (QVector<double>{3, 4, 0, 3}));
        QCOMPARE(h.width, 1.0);
        QCOMPARE(h.title, QString("Experts chosen\n") + hiddenSeriesLabel(a) + QString(": 5 tokens × 2"));
        QVERIFY(expertHistogram(&st.series[1]).centres.isEmpty());
        QVERIFY(expertHistogram(&st.series[1]).title.startsWith("Experts chosen: none (no router)"));
        // The view offers the experts only for a series with a router.
        HiddenStatsView v;
        v.setStats(st, pieces());
        v.setHistogramSeries(0);
        v.setHistogramShowsExperts(true);
        QVERIFY(v.histogramShowsExperts());
        QCOMPARE(v.histogramBars()->data()->size(), 4);
        QCOMPARE(v.histogramBars()->data()->at(1)->value, 4.0);
        QCOMPARE(v.histogramPlot()->xAxis->label(), QString("expert"));
        v.setHistogramSeries(1);  // the drafter's context: values again
        QVERIFY(!v.histogramShowsExperts());
        QCOMPARE(v.histogramBars()->data()->size(), 5);
        QCOMPARE(v.histogramPlot()->xAxis->label(), QString("value"));
    }

    void modelHeadersAndCells();
    void modelTooltipsAndOutliers();
    void modelTesterResets();
    void linePlotFollowsSelector();
    void outlierMarkers();
    void tokenTickLabels();
    void histogramBars();
    void clickEmitsPosition();
    void narrowTableKeepsItsKeyColumns();
    void highlightMarker();
    void legendFitsWidth();
    void exportsAllFiles();
    void emptyShowsPlaceholder();
    void raggedInputDoesNotCrash();
    void promptAndGeneratedParts();
};

void TestHiddenStatsView::modelHeadersAndCells() {
    HiddenStatsModel m;
    m.setStats(makeStats(), pieces());
    QCOMPARE(m.rowCount(), 5);
    QCOMPARE(m.columnCount(), 2 + 2 * 4);
    QCOMPARE(m.headerData(0, Qt::Horizontal).toString(), QString("position"));
    QCOMPARE(m.headerData(1, Qt::Horizontal).toString(), QString("token"));
    QCOMPARE(m.headerData(2, Qt::Horizontal).toString(), QString(kL1) + " rms");
    QCOMPARE(m.headerData(3, Qt::Horizontal).toString(), QString(kL1) + " mean");
    QCOMPARE(m.headerData(4, Qt::Horizontal).toString(), QString(kL1) + " std");
    QCOMPARE(m.headerData(5, Qt::Horizontal).toString(), QString(kL1) + " max|x|");
    QCOMPARE(m.headerData(9, Qt::Horizontal).toString(), QString(kDr) + " max|x|");
    QCOMPARE(m.columnFor(1, HiddenStat::Std), 8);
    QCOMPARE(m.seriesForColumn(8), 1);
    QCOMPARE(m.statForColumn(8), HiddenStat::Std);
    QCOMPARE(m.seriesForColumn(1), -1);

    QCOMPARE(m.index(3, 0).data().toInt(), 3);
    QCOMPARE(m.index(0, 1).data().toString(), QString("Hello"));
    // Whitespace as every view writes it (token_display.h): space U+00B7, newline U+21B5.
    QCOMPARE(m.index(1, 1).data().toString(), QString(QChar(0x00b7)) + "world");
    QCOMPARE(m.index(2, 1).data().toString(), QString(QChar(0x21b5)));
    QCOMPARE(m.index(2, 0).data(HiddenStatsModel::TokenIdRole).toLongLong(), 103);

    const auto st = makeStats();
    for (int s = 0; s < 2; ++s)
        for (int k = 0; k < kHiddenStatCount; ++k) {
            const auto stat = static_cast<HiddenStat>(k);
            const auto& vals = hiddenStatValues(st.series[std::size_t(s)], stat);
            for (int p = 0; p < 5; ++p) {
                const QVariant v = m.index(p, m.columnFor(s, stat)).data();
                QVERIFY(v.isValid());
                QCOMPARE(float(v.toDouble()), vals[std::size_t(p)]);
            }
        }
    // Shortest decimal of the float, not the float widened to double.
    QCOMPARE(m.index(0, m.columnFor(0, HiddenStat::Mean)).data().toString(), QString("0.1"));
    QCOMPARE(m.index(0, m.columnFor(0, HiddenStat::Mean)).data().toDouble(), 0.1);
}

void TestHiddenStatsView::modelTooltipsAndOutliers() {
    HiddenStatsModel m;
    m.setStats(makeStats(), pieces());
    QVERIFY(m.headerData(2, Qt::Horizontal, Qt::ToolTipRole).toString().contains("Root mean square"));
    QVERIFY(m.headerData(3, Qt::Horizontal, Qt::ToolTipRole).toString().contains("Mean over the hidden dimension"));
    QVERIFY(m.headerData(4, Qt::Horizontal, Qt::ToolTipRole).toString().contains("Standard deviation"));
    QVERIFY(m.headerData(5, Qt::Horizontal, Qt::ToolTipRole).toString().contains("max"));
    QVERIFY(m.headerData(2, Qt::Horizontal, Qt::ToolTipRole).toString().contains("full_attention"));
    const QString cellTip = m.index(1, m.columnFor(1, HiddenStat::MaxAbs)).data(Qt::ToolTipRole).toString();
    QVERIFY2(cellTip.contains(kDr) && cellTip.contains("position 1") && cellTip.contains("hidden dimension"),
             qPrintable(cellTip));
    QVERIFY(!cellTip.contains("outlier"));
    const QString outTip = m.index(4, m.columnFor(0, HiddenStat::Rms)).data(Qt::ToolTipRole).toString();
    QVERIFY2(outTip.contains("outlier") && outTip.contains("40"), qPrintable(outTip));

    for (int p = 0; p < 5; ++p)
        for (int c = 0; c < m.columnCount(); ++c) {
            const int s = m.seriesForColumn(c);
            const bool expect = p == 4 && (s == 0 || s == -1);
            QCOMPARE(m.index(p, c).data(HiddenStatsModel::OutlierRole).toBool(), expect);
            QCOMPARE(m.index(p, c).data(Qt::BackgroundRole).isValid(), expect);
        }
    QVERIFY(m.isOutlier(0, 4));
    QVERIFY(!m.isOutlier(1, 4));
    QVERIFY(m.isOutlier(-1, 4));
}

void TestHiddenStatsView::modelTesterResets() {
    HiddenStatsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setStats(makeStats(), pieces());
    QCOMPARE(m.rowCount(), 5);
    m.setStats(makeSmallStats(), {});
    QCOMPARE(m.rowCount(), 3);
    QCOMPARE(m.columnCount(), 6);
    QCOMPARE(m.index(0, 1).data().toString(), QString("[7]"));  // no piece: the id
    m.setStats({}, {});
    QCOMPARE(m.rowCount(), 0);
    QCOMPARE(m.columnCount(), 2);
    m.setStats(makeStats(), pieces());
    m.clear();
    QCOMPARE(m.rowCount(), 0);
}

void TestHiddenStatsView::linePlotFollowsSelector() {
    HiddenStatsView v;
    v.setStats(makeStats(), pieces());
    QVERIFY(!v.isShowingPlaceholder());
    const auto st = makeStats();
    QCOMPARE(v.linePlot()->graphCount(), 4);  // 2 lines + 2 outlier marker graphs
    QVERIFY(v.seriesGraph(0)->name().contains(kL1));
    QVERIFY(v.seriesGraph(0)->name().contains("full_attention"));
    QVERIFY(v.seriesGraph(1)->name().contains("fc + hidden_norm"));
    for (int k = 0; k < kHiddenStatCount; ++k) {
        const auto stat = static_cast<HiddenStat>(k);
        v.setStatistic(stat);
        QCOMPARE(v.statistic(), stat);
        for (int s = 0; s < 2; ++s) {
            const auto& vals = hiddenStatValues(st.series[std::size_t(s)], stat);
            const auto data = v.seriesGraph(s)->data();
            QCOMPARE(data->size(), 5);
            for (int p = 0; p < 5; ++p) {
                QCOMPARE(data->at(p)->key, double(p));
                QCOMPARE(data->at(p)->value, double(vals[std::size_t(p)]));
            }
        }
        // The y range shows every value.
        const QCPRange r = v.linePlot()->yAxis->range();
        for (int s = 0; s < 2; ++s)
            for (float x : hiddenStatValues(st.series[std::size_t(s)], stat)) QVERIFY(r.contains(x));
    }
    v.setStatistic(HiddenStat::Rms);
    v.setLineLogScale(true);
    QCOMPARE(v.linePlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    v.setStatistic(HiddenStat::Mean);  // mean can be negative: linear regardless
    QCOMPARE(v.linePlot()->yAxis->scaleType(), QCPAxis::stLinear);
}

void TestHiddenStatsView::outlierMarkers() {
    HiddenStatsView v;
    v.setStats(makeStats(), pieces());
    for (int k = 0; k < kHiddenStatCount; ++k) {
        const auto stat = static_cast<HiddenStat>(k);
        v.setStatistic(stat);
        const auto o0 = v.outlierGraph(0)->data();
        QCOMPARE(o0->size(), 1);
        QCOMPARE(o0->at(0)->key, 4.0);
        QCOMPARE(o0->at(0)->value, double(hiddenStatValues(makeStats().series[0], stat)[4]));
        QCOMPARE(v.outlierGraph(1)->data()->size(), 0);
    }
    QCOMPARE(v.outlierGraph(0)->lineStyle(), QCPGraph::lsNone);
    QVERIFY(v.outlierGraph(0)->scatterStyle().shape() != v.seriesGraph(0)->scatterStyle().shape());
    QVERIFY(v.linePlot()->legend->hasItemWithPlottable(v.outlierGraph(0)));
    QVERIFY(!v.linePlot()->legend->hasItemWithPlottable(v.outlierGraph(1)));
}

void TestHiddenStatsView::tokenTickLabels() {
    HiddenStatsView v;
    v.setStats(makeStats(), pieces());
    auto ticker = v.linePlot()->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    QCOMPARE(ticker->ticks().size(), 5);
    QCOMPARE(ticker->ticks().value(0), QString("0 Hello"));
    QCOMPARE(ticker->ticks().value(1), QString("1 ") + QChar(0x00b7) + "world");
    QCOMPARE(ticker->ticks().value(2), QString("2 ") + QChar(0x21b5));

    // Many positions: numeric ticks.
    HiddenStateStats many;
    HiddenSeriesStats s;
    s.name = "x";
    for (int i = 0; i < HiddenStatsView::kMaxTokenTicks + 10; ++i) {
        s.rms.push_back(1.0f + i);
        s.mean.push_back(0);
        s.std.push_back(1);
        s.maxAbs.push_back(2);
    }
    many.series = {s};
    v.setStats(many, {});
    QVERIFY(!v.linePlot()->xAxis->ticker().dynamicCast<QCPAxisTickerText>());
}

void TestHiddenStatsView::histogramBars() {
    HiddenStatsView v;
    v.setStats(makeStats(), pieces());
    const auto st = makeStats();
    for (int s : {0, 1}) {
        v.setHistogramSeries(s);
        QCOMPARE(v.histogramSeries(), s);
        const auto& ser = st.series[std::size_t(s)];
        const auto data = v.histogramBars()->data();
        QCOMPARE(data->size(), int(ser.histogramCounts.size()));
        for (int b = 0; b < data->size(); ++b) {
            QCOMPARE(data->at(b)->value, double(ser.histogramCounts[std::size_t(b)]));
            QCOMPARE(data->at(b)->key, 0.5 * (ser.histogramEdges[std::size_t(b)] + ser.histogramEdges[std::size_t(b) + 1]));
        }
        QCOMPARE(v.histogramBars()->width(), ser.histogramEdges[1] - ser.histogramEdges[0]);
    }
    v.setHistogramLogScale(true);
    QVERIFY(v.histogramLogScale());
    QCOMPARE(v.histogramPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(v.histogramBars()->data()->size(), 5);
    v.setHistogramLogScale(false);
    QCOMPARE(v.histogramPlot()->yAxis->scaleType(), QCPAxis::stLinear);
    // A new stats object keeps the selected series when it still exists.
    v.setStats(makeStats(), pieces());
    QCOMPARE(v.histogramSeries(), 1);
    v.setStats(makeSmallStats(), {});
    QCOMPARE(v.histogramSeries(), 0);
    QCOMPARE(v.histogramBars()->data()->size(), 1);
}

void TestHiddenStatsView::clickEmitsPosition() {
    HiddenStatsView v;
    v.resize(1200, 800);
    v.setStats(makeStats(), pieces());
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QCustomPlot* plot = v.linePlot();
    plot->replot();
    QSignalSpy spy(&v, &HiddenStatsView::positionClicked);
    const QRect ar = plot->axisRect()->rect();
    // Slightly off the exact x of position 2, mid-height: the nearest position is taken.
    const QPoint at(int(plot->xAxis->coordToPixel(2.2)), ar.center().y());
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toInt(), 2);
    QCOMPARE(v.highlightedPosition(), 2);
    // A click outside the axis rect emits nothing.
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, QPoint(2, 2));
    QCOMPARE(spy.count(), 1);
    // A table click emits the row's position (the table may be sorted: map through the view).
    QTableView* t = v.table();
    t->sortByColumn(v.model()->columnFor(0, HiddenStat::Rms), Qt::DescendingOrder);
    const QModelIndex top = t->model()->index(0, 0);
    QCOMPARE(top.data().toInt(), 4);  // largest RMS first
    QTest::mouseClick(t->viewport(), Qt::LeftButton, Qt::NoModifier, t->visualRect(top).center());
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy.at(1).at(0).toInt(), 4);
}

void TestHiddenStatsView::narrowTableKeepsItsKeyColumns() {
    // As narrow as the right-hand docks at 1600 px: position, token and the chosen statistic
    // of both series are in view without scrolling; the others come back on request.
    HiddenStatsView v;
    v.resize(560, 700);
    v.setStats(makeStats(), pieces());
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QTableView* t = v.table();
    auto shown = [&] {
        QList<int> cols;
        for (int c = 0; c < t->model()->columnCount(); ++c)
            if (!t->isColumnHidden(c)) cols << c;
        return cols;
    };
    HiddenStatsModel* m = v.model();
    QCOMPARE(v.statistic(), HiddenStat::Rms);
    QCOMPARE(shown(), (QList<int>{0, 1, m->columnFor(0, HiddenStat::Rms), m->columnFor(1, HiddenStat::Rms)}));
    for (const int c : shown())
        QVERIFY2(t->columnViewportPosition(c) + t->columnWidth(c) <= t->viewport()->width(),
                 qPrintable(QString("column %1 (%2) ends at %3 > %4").arg(c).arg(m->headerData(c, Qt::Horizontal).toString())
                                .arg(t->columnViewportPosition(c) + t->columnWidth(c)).arg(t->viewport()->width())));
    // The table follows the Statistic box.
    v.setStatistic(HiddenStat::MaxAbs);
    QCOMPARE(shown(), (QList<int>{0, 1, m->columnFor(0, HiddenStat::MaxAbs), m->columnFor(1, HiddenStat::MaxAbs)}));
    v.setAllStatisticsShown(true);
    QCOMPARE(shown().size(), 2 + 2 * 4);
    // The export keeps every column whatever is shown.
    QCOMPARE(m->columnCount(), 10);
}

void TestHiddenStatsView::highlightMarker() {
    HiddenStatsView v;
    v.setStats(makeStats(), pieces());
    QSignalSpy spy(&v, &HiddenStatsView::positionClicked);
    v.highlightPosition(3);
    QCOMPARE(v.highlightedPosition(), 3);
    auto* marker = qobject_cast<QCPItemStraightLine*>(v.linePlot()->item(0));
    QVERIFY(marker);
    QVERIFY(marker->visible());
    QCOMPARE(marker->point1->coords().x(), 3.0);
    QCOMPARE(marker->point2->coords().x(), 3.0);
    const auto rows = v.table()->selectionModel()->selectedRows();
    QCOMPARE(rows.size(), 1);
    QCOMPARE(rows.first().data().toInt(), 3);
    QCOMPARE(spy.count(), 0);  // highlighting emits nothing
    v.highlightPosition(99);
    QCOMPARE(v.highlightedPosition(), -1);
    QVERIFY(!marker->visible());
    v.highlightPosition(1);
    v.setStats(makeSmallStats(), {});  // still in range: kept
    QCOMPARE(v.highlightedPosition(), 1);
    v.highlightPosition(-1);
    QVERIFY(!marker->visible());
}

void TestHiddenStatsView::legendFitsWidth() {
    HiddenStatsView v;
    v.setStats(makeStats(), pieces());
    v.resize(1600, 800);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QTRY_VERIFY(v.linePlot()->legend->wrap() >= 2);
    v.resize(420, 800);  // the legend's long entries must not pin the view's minimum width
    QTRY_COMPARE(v.linePlot()->legend->wrap(), 1);
    QVERIFY(v.width() < 600);
    for (int i = 0; i < v.linePlot()->legend->itemCount(); ++i) QVERIFY(v.linePlot()->legend->item(i));
}

void TestHiddenStatsView::exportsAllFiles() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    HiddenStatsView v;
    v.setStats(makeStats(), pieces());
    QCOMPARE(v.exportName(), QString("hidden_stats"));
    QString err;
    const QString dir = tmp.filePath("out/sub");  // created on demand
    const QStringList files = v.exportAll(dir, &err);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QCOMPARE(files.size(), 8);
    for (const QString& f : files) QVERIFY2(QFileInfo(f).size() > 0, qPrintable(f));
    for (const QString& base : {QString("hidden_stats"), QString("hidden_stats_histogram")}) {
        const QString stem = dir + "/" + base;
        QVERIFY(files.contains(stem + ".png"));
        QVERIFY(readAll(stem + ".png").startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)));
        QVERIFY(readAll(stem + ".svg").contains("<svg"));
        QVERIFY(readAll(stem + ".pdf").startsWith("%PDF"));
    }
    const QByteArray csv = readAll(dir + "/hidden_stats.csv");
    const QString header = QString::fromUtf8(csv.left(csv.indexOf("\r\n")));
    QCOMPARE(header, QString("position,token,%1 rms,%1 mean,%1 std,%1 max|x|,%2 rms,%2 mean,%2 std,%2 max|x|")
                         .arg(kL1, kDr));
    QCOMPARE(csv.count("\r\n"), 6);
    const QJsonDocument json = QJsonDocument::fromJson(readAll(dir + "/hidden_stats.json"));
    QVERIFY(json.isArray());
    QCOMPARE(json.array().size(), 5);
    const QJsonObject row4 = json.array().at(4).toObject();
    QCOMPARE(row4.value("position").toInt(), 4);
    QCOMPARE(row4.value(QString(kL1) + " rms").toDouble(), 40.0);
    QCOMPARE(json.array().at(0).toObject().value(QString(kL1) + " mean").toDouble(), 0.1);
    // The tables hold the raw token text (the glyphs are for the screen only).
    QCOMPARE(json.array().at(1).toObject().value("token").toString(), QString(" world"));
    QCOMPARE(json.array().at(2).toObject().value("token").toString(), QString("\n"));
    QVERIFY(csv.contains("\r\n1, world,"));
    QVERIFY(csv.contains("\r\n2,\"\n\","));
    // JSON keys in column order, as the CSV header.
    const QByteArray jsonText = readAll(dir + "/hidden_stats.json");
    QVERIFY(jsonText.indexOf("\"position\"") < jsonText.indexOf("\"token\""));
    QVERIFY(jsonText.indexOf("\"token\"") < jsonText.indexOf(QString("\"%1 rms\"").arg(kL1).toUtf8()));
    // The clicked-position marker is not part of the figure, and stays on screen.
    v.highlightPosition(2);
    const QString marked = tmp.filePath("marked");
    QCOMPARE(v.exportAll(marked, &err).size(), 8);
    QCOMPARE(readAll(marked + "/hidden_stats.svg"), readAll(dir + "/hidden_stats.svg"));
    QCOMPARE(v.highlightedPosition(), 2);
}

void TestHiddenStatsView::emptyShowsPlaceholder() {
    HiddenStatsView v;
    v.resize(800, 600);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(v.isShowingPlaceholder());  // a fresh view is empty
    QVERIFY(!v.placeholderText().isEmpty());
    auto* label = v.findChild<QLabel*>("hiddenStatsPlaceholder");
    QVERIFY(label && label->isVisible());
    v.setStats(makeStats(), pieces());
    QVERIFY(!v.isShowingPlaceholder());
    QVERIFY(!label->isVisible());
    v.highlightPosition(2);
    v.setStats({}, {});
    QVERIFY(v.isShowingPlaceholder());
    QVERIFY(label->isVisible());
    QCOMPARE(v.highlightedPosition(), -1);
    QCOMPARE(v.histogramSeries(), -1);
    QCOMPARE(v.linePlot()->graphCount(), 0);
    QCOMPARE(v.histogramBars()->data()->size(), 0);
    v.highlightPosition(0);  // no positions: ignored
    QCOMPARE(v.highlightedPosition(), -1);
    for (int k = 0; k < kHiddenStatCount; ++k) v.setStatistic(static_cast<HiddenStat>(k));
    v.setHistogramLogScale(true);
    v.setLineLogScale(true);
    v.grab();
    // Series but no positions, or positions but no series: still the placeholder.
    HiddenStateStats idsOnly;
    idsOnly.ids = {1, 2};
    v.setStats(idsOnly, {"a", "b"});
    QVERIFY(v.isShowingPlaceholder());
    HiddenStateStats noPositions;
    noPositions.series.resize(1);
    v.setStats(noPositions, {});
    QVERIFY(v.isShowingPlaceholder());
    v.setPlaceholderText("custom");
    QCOMPARE(v.placeholderText(), QString("custom"));
    // Exporting an empty view writes empty figures and tables, no crash.
    QTemporaryDir tmp;
    QString err;
    v.clear();
    const QStringList files = v.exportAll(tmp.path(), &err);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QCOMPARE(files.size(), 8);
    QCOMPARE(QJsonDocument::fromJson(readAll(tmp.filePath("hidden_stats.json"))).array().size(), 0);
}

void TestHiddenStatsView::raggedInputDoesNotCrash() {
    // Vectors of unequal lengths, out-of-range outliers, mismatched histograms, inf/NaN.
    HiddenStateStats st;
    st.ids = {1, 2, 3, 4};
    HiddenSeriesStats a;
    a.name = "ragged";
    a.rms = {1.0f, std::numeric_limits<float>::infinity(), 2.0f};
    a.mean = {0.0f};
    a.maxAbs = {1, 2, 3, 4, 5, 6};
    a.histogramEdges = {0, 1, 2};
    a.histogramCounts = {1, 2, 3, 4};
    a.outlierPositions = {-1, 1, 2, 100};
    st.series = {a};
    HiddenStatsView v;
    v.setStats(st, {"x"});
    QCOMPARE(v.model()->rowCount(), 6);
    QVERIFY(!v.model()->index(3, v.model()->columnFor(0, HiddenStat::Rms)).data().isValid());
    QVERIFY(std::isnan(v.seriesGraph(0)->data()->at(1)->value));  // inf: a gap
    QCOMPARE(v.outlierGraph(0)->data()->size(), 1);                 // inf outlier not drawn
    QCOMPARE(v.histogramBars()->data()->size(), 2);
    for (int k = 0; k < kHiddenStatCount; ++k) v.setStatistic(static_cast<HiddenStat>(k));
    v.setLineLogScale(true);
    v.setStatistic(HiddenStat::Rms);
    v.resize(900, 600);
    QVERIFY(!v.grab().isNull());
    for (int r = 0; r < v.model()->rowCount(); ++r)
        for (int c = 0; c < v.model()->columnCount(); ++c) v.model()->index(r, c).data(Qt::ToolTipRole);
}

void TestHiddenStatsView::promptAndGeneratedParts() {
    // A run's committed sequence: positions 0..2 are the prompt, 3..4 generated.
    HiddenStateStats st = makeStats();
    st.promptLength = 3;
    HiddenStatsModel m;
    m.setStats(st, pieces());
    QCOMPARE(m.promptLength(), 3);
    const QColor outlier(255, 208, 208), generated(228, 236, 246);
    for (int p = 0; p < 5; ++p) {
        QCOMPARE(m.isGenerated(p), p >= 3);
        for (int c = 0; c < m.columnCount(); ++c) {
            QCOMPARE(m.index(p, c).data(HiddenStatsModel::GeneratedRole).toBool(), p >= 3);
            const QVariant bg = m.index(p, c).data(Qt::BackgroundRole);
            const int s = m.seriesForColumn(c);
            const bool isOut = p == 4 && (s == 0 || s == -1);  // the outlier colour wins
            if (isOut)
                QCOMPARE(bg.value<QBrush>().color(), outlier);
            else if (p >= 3)
                QCOMPARE(bg.value<QBrush>().color(), generated);
            else
                QVERIFY(!bg.isValid());
        }
    }
    QVERIFY(m.index(3, HiddenStatsModel::kTokenColumn).data(Qt::ToolTipRole).toString().contains("position 3 (generated)"));
    QVERIFY(m.index(2, HiddenStatsModel::kTokenColumn).data(Qt::ToolTipRole).toString().contains("position 2 (prompt)"));
    // Without a recorded prompt length (or prompt-only statistics) nothing is generated.
    HiddenStatsModel old;
    old.setStats(makeStats(), pieces());
    QCOMPARE(old.promptLength(), 5);
    QVERIFY(!old.isGenerated(4));

    HiddenStatsView v;
    v.resize(900, 700);
    v.setStats(st, pieces());
    QVERIFY(v.generatedShade()->visible());
    QCOMPARE(v.generatedShade()->topLeft->coords().x(), 2.5);
    QCOMPARE(v.generatedShade()->bottomRight->coords().x(), 4.5);
    QVERIFY(v.promptBoundary()->visible());
    QCOMPARE(v.promptBoundary()->point1->coords().x(), 2.5);
    QCOMPARE(v.promptBoundary()->point2->coords().x(), 2.5);
    QVERIFY(v.partLabel()->visible());
    QCOMPARE(v.partLabel()->text(), QStringLiteral("prompt | generated"));
    // Every position, generated ones included, is drawn.
    QCOMPARE(v.seriesGraph(0)->data()->size(), 5);
    QCOMPARE(v.seriesGraph(0)->data()->at(4)->value, 40.0);
    auto* summary = v.findChild<QLabel*>("hiddenStatsSummary");
    QVERIFY(summary);
    QVERIFY2(summary->text().contains("5 positions (3 prompt | 2 generated, shaded)"), qPrintable(summary->text()));

    v.setStats(makeStats(), pieces());  // prompt only: no shading, no separator
    QVERIFY(!v.generatedShade()->visible());
    QVERIFY(!v.promptBoundary()->visible());
    QVERIFY(!v.partLabel()->visible());
    QVERIFY(summary->text().startsWith("5 positions, 2 series."));
}

QTEST_MAIN(TestHiddenStatsView)
#include "tst_hidden_stats_view.moc"
