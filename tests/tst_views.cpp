// The block agreement grid, the output strip and the acceptance plots fed a hand-made run
// whose every number is known; item models under QAbstractItemModelTester; exports.

#include "acceptance_plots.h"
#include "block_agreement_view.h"
#include "budget_sweep_plot.h"
#include "comparison_summary_view.h"
#include "drafter_comparison.h"
#include "figure_export.h"
#include "output_strip_view.h"
#include "calibration_view.h"
#include "selector_view.h"
#include "step_selection.h"

#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QTextBrowser>

#include <cmath>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardItemModel>
#include <QHeaderView>
#include <QScrollBar>
#include <QTableView>
#include <QImage>
#include <QTemporaryDir>
#include <QtTest>

using namespace draftscope;

namespace {

/// B = 4. Prompt ids 1..5; the prefill's anchor 10 at index 5.
/// Step 0 at 5: drafts 11 12 13, target 11 99 13 14 -> acc 1, bonus 99.
/// Step 1 at 7: drafts 20 21 22, target 20 21 22 23 -> acc 3, bonus 23.
RunResult handMadeRun() {
    RunResult r;
    r.blockSize = 4;
    r.promptIds = {1, 2, 3, 4, 5};
    r.outputIds = {1, 2, 3, 4, 5, 10, 11, 99, 20, 21, 22, 23};
    VerifyStep a;
    a.start = 5;
    a.anchor = 10;
    a.drafted = {11, 12, 13};
    a.targetTokens = {11, 99, 13, 14};
    a.acceptedCount = 1;
    a.bonusToken = 99;
    a.draftProb = {0.9f, 0.6f, 0.3f};
    a.targetProbOfDraft = {0.8f, 0.05f, 0.5f};
    a.targetProbOfTarget = {0.8f, 0.7f, 0.5f};
    a.targetRankInDraft = {0, 2, -1};
    a.draftTopIds = {{11, 5, 6}, {12, 7, 99}, {13, 8, 9}};
    a.draftTopProbs = {{0.9f, 0.05f, 0.01f}, {0.6f, 0.2f, 0.1f}, {0.3f, 0.2f, 0.1f}};
    VerifyStep b = a;
    b.start = 7;
    b.anchor = 99;
    b.drafted = {20, 21, 22};
    b.targetTokens = {20, 21, 22, 23};
    b.acceptedCount = 3;
    b.bonusToken = 23;
    r.steps = {a, b};
    r.acceptanceLengths = {2, 4};
    r.tau = 3.0;
    r.perPositionAcceptance = {1.0, 1.0, 0.5, 0.5};
    r.acceptanceHistogram = {0, 0, 1, 0, 1};
    return r;
}

/// Drafter B on the same prompt and output as handMadeRun() (drafter A), other steps:
/// Step 0 at 5: drafts 11 99 50, target 11 99 20 21 -> acc 2, bonus 20.
/// Step 1 at 8: drafts 21 60 61, target 21 22 23 24 -> acc 1, bonus 22.
/// Step 2 at 10: drafts 23 70 71, target 23 30 31 32 -> acc 1, bonus 30 (past the output's end).
/// Accepted by, positions 5..11: prompt (first anchor), both, B only, A only, both, A only, B only.
RunResult handMadeRunB() {
    RunResult r = handMadeRun();
    auto step = [&](std::int64_t start, std::int64_t anchor, std::vector<std::int64_t> drafted,
                    std::vector<std::int64_t> target, int acc) {
        VerifyStep s = r.steps[0];
        s.start = start;
        s.anchor = anchor;
        s.drafted = std::move(drafted);
        s.targetTokens = std::move(target);
        s.acceptedCount = acc;
        s.bonusToken = s.targetTokens[static_cast<std::size_t>(acc)];
        return s;
    };
    r.steps = {step(5, 10, {11, 99, 50}, {11, 99, 20, 21}, 2), step(8, 20, {21, 60, 61}, {21, 22, 23, 24}, 1),
               step(10, 22, {23, 70, 71}, {23, 30, 31, 32}, 1)};
    r.acceptanceLengths = {3, 2, 2};
    r.tau = 7.0 / 3.0;
    r.perPositionAcceptance = {1.0, 1.0, 1.0 / 3.0, 0.0};
    r.acceptanceHistogram = {0, 0, 2, 1, 0};
    return r;
}

QString piece(std::int64_t id) { return QStringLiteral("t%1").arg(id); }

std::vector<QString> pieces(const RunResult& r) {
    std::vector<QString> out;
    for (auto id : r.outputIds) out.push_back(piece(id));
    return out;
}

QByteArray head(const QString& path, int n) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.read(n);
}

void verifyFigure(const QString& path) {
    const bool table = path.endsWith(".csv") || path.endsWith(".json");
    QVERIFY2(QFileInfo(path).size() > (table ? 10 : 100), qPrintable(path));
    if (path.endsWith(".png")) QCOMPARE(head(path, 8), QByteArray("\x89PNG\r\n\x1a\n", 8));
    if (path.endsWith(".pdf")) QCOMPARE(head(path, 4), QByteArray("%PDF"));
    if (path.endsWith(".svg")) QVERIFY(head(path, 4000).contains("<svg"));
}

}  // namespace

class TestViews : public QObject {
    Q_OBJECT
private slots:
    void figureSetWritesInOrderAndStopsAtTheFirstFailure() {
        QTemporaryDir tmp;
        const QString dir = tmp.path() + "/new/sub";  // created by the set
        QStandardItemModel table(1, 2);
        table.setHorizontalHeaderLabels({"a", "b"});
        table.setItem(0, 0, new QStandardItem("x"));
        table.setItem(0, 1, new QStandardItem("1"));
        QStringList rendered;
        auto render = [&](const QString& path, QString*) {
            rendered << QFileInfo(path).fileName();
            QFile f(path);
            return f.open(QIODevice::WriteOnly) && f.write("figure") == 6;
        };
        QString err;
        FigureSet set(dir, &err);
        QVERIFY(set.figure("fig", render));
        QVERIFY(set.table("tab", &table));
        QCOMPARE(rendered, (QStringList{"fig.png", "fig.svg", "fig.pdf"}));
        QCOMPARE(set.written(), (QStringList{dir + "/fig.png", dir + "/fig.svg", dir + "/fig.pdf", dir + "/tab.csv",
                                             dir + "/tab.json"}));
        QFile csv(dir + "/tab.csv");
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readAll(), QByteArray("a,b\r\nx,1\r\n"));
        // The svg fails: the error is the renderer's, nothing later is written.
        auto failing = [&](const QString& path, QString* e) {
            if (path.endsWith(".svg")) {
                *e = "no svg today";
                return false;
            }
            return render(path, e);
        };
        QVERIFY(!set.figure("bad", failing));
        QCOMPARE(err, QString("no svg today"));
        QVERIFY(!set.table("late", &table));
        QVERIFY(!set.ok());
        QCOMPARE(set.written().size(), 6);
        QCOMPARE(set.written().last(), dir + "/bad.png");
        QVERIFY(!QFile::exists(dir + "/late.csv"));
        // A directory that cannot be made is the first error.
        QFile blocker(tmp.path() + "/file");
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        QString err2;
        FigureSet blocked(tmp.path() + "/file/sub", &err2);
        QVERIFY(!blocked.table("t", &table));
        QVERIFY2(err2.contains("cannot create directory"), qPrintable(err2));
        QVERIFY(blocked.written().isEmpty());
    }

    void blockAgreementModel() {
        BlockAgreementModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setRun(handMadeRun(), piece);
        QCOMPARE(m.rowCount(), 2);
        QCOMPARE(m.columnCount(), 4);
        auto status = [&](int r, int c) { return static_cast<CellStatus>(m.index(r, c).data(BlockAgreementModel::StatusRole).toInt()); };
        QCOMPARE(status(0, 0), CellStatus::Anchor);
        QCOMPARE(status(0, 1), CellStatus::Accepted);
        QCOMPARE(status(0, 2), CellStatus::Rejected);
        QCOMPARE(status(0, 3), CellStatus::AfterCut);
        QCOMPARE(status(1, 3), CellStatus::Accepted);
        QCOMPARE(m.index(0, 0).data().toString(), QString("t10"));
        QCOMPARE(m.index(0, 2).data().toString(), QString("t12"));
        QCOMPARE(m.index(0, 2).data(BlockAgreementModel::TargetTokenRole).toLongLong(), 99);
        QCOMPARE(m.index(0, 2).data(BlockAgreementModel::TargetRankRole).toInt(), 2);
        QCOMPARE(m.index(0, 2).data(BlockAgreementModel::AbsolutePositionRole).toLongLong(), 7);
        const QString tip = m.index(0, 2).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains("rejected") && tip.contains("0.6000") && tip.contains("0.0500") && tip.contains("t99") &&
                     tip.contains("top-3: 2"), qPrintable(tip));
        QVERIFY(m.index(0, 3).data(Qt::ToolTipRole).toString().contains("not in the top-k"));
        QCOMPARE(m.headerData(1, Qt::Vertical).toString(), QString("2  @7  len 4"));
        m.setRun(RunResult{});
        QCOMPARE(m.rowCount(), 0);
        QCOMPARE(m.columnCount(), 0);
    }

    void outputTokenModel() {
        OutputTokenModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto run = handMadeRun();
        m.setRun(run, pieces(run));
        QCOMPARE(m.rowCount(), 12);
        for (int i = 0; i < 5; ++i) QCOMPARE(m.originOf(i), TokenOrigin::Prompt);
        QCOMPARE(m.originOf(5), TokenOrigin::Bonus);  // the prefill's anchor
        QCOMPARE(m.stepOf(5), -1);
        QCOMPARE(m.originOf(6), TokenOrigin::AcceptedDraft);
        QCOMPARE(m.stepOf(6), 0);
        QCOMPARE(m.originOf(7), TokenOrigin::Bonus);
        QCOMPARE(m.stepOf(7), 0);
        for (int i = 8; i <= 10; ++i) QCOMPARE(m.originOf(i), TokenOrigin::AcceptedDraft);
        QCOMPARE(m.originOf(11), TokenOrigin::Bonus);
        QCOMPARE(m.stepOf(11), 1);
        QCOMPARE(m.index(9, OutputTokenModel::PieceColumn).data().toString(), QString("t21"));
        m.clear();
        QCOMPARE(m.rowCount(), 0);
    }

    void linkedSelection() {
        StepSelection sel;
        BlockAgreementView grid(&sel);
        OutputStripView strip(&sel);
        AcceptancePlots plots(&sel);
        const auto run = handMadeRun();
        grid.model()->setRun(run, piece);
        strip.setRun(run, pieces(run));
        plots.setRun(run);
        QSignalSpy spy(&sel, &StepSelection::changed);
        // Clicking a token in the strip selects the step that committed it.
        strip.activateToken(9);
        QCOMPARE(sel.step(), 1);
        QCOMPARE(sel.position(), 2);
        QCOMPARE(grid.table()->currentIndex(), grid.model()->index(1, 2));
        QVERIFY(strip.browser()->toHtml().contains("font-weight:700") || strip.browser()->toHtml().contains("font-weight:600") ||
                strip.browser()->toHtml().contains("bold"));
        // Prompt tokens belong to no step: no change.
        strip.activateToken(2);
        QCOMPARE(sel.step(), 1);
        // Selecting a cell in the grid moves the selection.
        grid.table()->setCurrentIndex(grid.model()->index(0, 3));
        QCOMPARE(sel.step(), 0);
        QCOMPARE(sel.position(), 3);
        QCOMPARE(spy.count(), 2);
        // The histogram highlights the selected step's acceptance length (2).
        QCOMPARE(plots.histogramPlot()->plottableCount(), 2);
        auto* selBar = qobject_cast<QCPBars*>(plots.histogramPlot()->plottable(1));
        QVERIFY(selBar);
        QCOMPARE(selBar->data()->begin()->key, 2.0);
        // A click on a step's row header selects that step at the position shown.
        grid.resize(600, 300);
        grid.show();
        QVERIFY(QTest::qWaitForWindowExposed(&grid));
        auto* header = grid.table()->verticalHeader();
        QTest::mouseClick(header->viewport(), Qt::LeftButton, {},
                          QPoint(header->width() / 2, header->sectionViewportPosition(1) + header->sectionSize(1) / 2));
        QCOMPARE(sel.step(), 1);
        QCOMPARE(sel.position(), 3);
        QCOMPARE(grid.table()->currentIndex(), grid.model()->index(1, 3));
    }

    void acceptancePlotData() {
        StepSelection sel;
        AcceptancePlots plots(&sel);
        plots.setRun(handMadeRun());
        auto* g = plots.ratePlot()->graph(0);
        QCOMPARE(g->data()->size(), 3);
        const double expected[] = {1.0, 0.5, 0.5};
        int i = 0;
        for (auto it = g->data()->begin(); it != g->data()->end(); ++it, ++i) {
            QCOMPARE(it->key, double(i + 1));
            QCOMPARE(it->value, expected[i]);
        }
        auto* bars = qobject_cast<QCPBars*>(plots.histogramPlot()->plottable(0));
        QVERIFY(bars);
        QMap<double, double> counts;
        for (auto it = bars->data()->begin(); it != bars->data()->end(); ++it) counts[it->key] = it->value;
        QCOMPARE(counts.value(2), 1.0);
        QCOMPARE(counts.value(4), 1.0);
        QCOMPARE(counts.value(3), 0.0);
        QVERIFY(plots.ratePlot()->toolTip().contains("accepted drafted tokens >= j"));
        QVERIFY(plots.histogramPlot()->toolTip().contains("bonus token"));
    }

    void drafterComparisonLogic() {
        const auto a = handMadeRun(), b = handMadeRunB();
        const auto by = acceptedBy(a, b);
        QCOMPARE(by.size(), std::size_t(12));
        for (int i = 0; i <= 5; ++i) QCOMPARE(by[static_cast<std::size_t>(i)], AcceptedBy::Prompt);
        const AcceptedBy expected[] = {AcceptedBy::Both, AcceptedBy::BOnly, AcceptedBy::AOnly, AcceptedBy::Both,
                                       AcceptedBy::AOnly, AcceptedBy::BOnly};
        for (int i = 6; i <= 11; ++i) QCOMPARE(by[static_cast<std::size_t>(i)], expected[i - 6]);
        // The reverse comparison swaps A only and B only.
        const auto rev = acceptedBy(b, a);
        QCOMPARE(rev[7], AcceptedBy::AOnly);
        QCOMPARE(rev[8], AcceptedBy::BOnly);
        // Deciding drafts: A's position 11 is its step 1's bonus at block position 4 (no draft).
        const auto da = decidingDrafts(a);
        QCOMPARE(da[11].step, 1);
        QCOMPARE(da[11].blockPosition, 4);
        QCOMPARE(da[11].drafted, std::int64_t(-1));
        QVERIFY(!da[11].accepted);
        // Step mapping: absolute position 9 is covered by A's step 1 and B's step 1.
        QCOMPARE(chainStepCovering(a, 9), 1);
        QCOMPARE(chainStepCovering(b, 9), 1);
        QCOMPARE(chainStepCovering(b, 7), 0);
        QCOMPARE(chainStepCovering(b, 11), 2);
        // Names: last component, or the last two when those are equal.
        QCOMPARE(drafterNames("/m/drafter-good", "/n/drafter-anchor-leak"),
                 (std::pair<QString, QString>("drafter-good", "drafter-anchor-leak")));
        QCOMPARE(drafterNames("/ckpt/step20000/dflash/", "/ckpt/step40000/dflash"),
                 (std::pair<QString, QString>("step20000/dflash", "step40000/dflash")));
    }

    void blockAgreementDifferenceMarks() {
        BlockAgreementModel ma, mb;
        QAbstractItemModelTester tester(&ma, QAbstractItemModelTester::FailureReportingMode::QtTest);
        ma.setRun(handMadeRun(), piece);
        mb.setRun(handMadeRunB(), piece);
        QVERIFY(!ma.hasComparison());
        ma.setComparison(handMadeRunB(), "B (leak)");
        mb.setComparison(handMadeRun(), "A (good)");
        auto marked = [](const BlockAgreementModel& m) {
            QList<QPair<int, int>> cells;
            for (int r = 0; r < m.rowCount(); ++r)
                for (int c = 0; c < m.columnCount(); ++c)
                    if (m.index(r, c).data(BlockAgreementModel::DiffersRole).toBool()) cells << qMakePair(r, c);
            return cells;
        };
        // Only step 1 starts from the same anchor in both runs (position 5; A's step 2 starts at
        // 7, B's at 8 and 10: other inputs). There A accepted 1 and B 2: they part at block
        // position 2, A's rejection (t12) and B's accepted t99. Cells where B's differently
        // placed blocks accepted or rejected (positions 8, 10, 11) are not marked: their
        // inputs differ, so they say nothing the taus do not.
        QCOMPARE(marked(ma), (QList<QPair<int, int>>{{0, 2}}));
        QCOMPARE(ma.differingCellCount(), 1);
        QCOMPARE(marked(mb), (QList<QPair<int, int>>{{0, 2}}));
        QCOMPARE(partingPosition(handMadeRun(), handMadeRunB(), 0), 2);
        QCOMPARE(partingPosition(handMadeRun(), handMadeRunB(), 1), 0);
        const QString tip = ma.index(0, 2).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains("B (leak): accepted 't99' at its step 1") && tip.contains("the drafters part here"), qPrintable(tip));
        QVERIFY(ma.index(1, 1).data(Qt::ToolTipRole).toString().contains("drafted 't50', rejected at its step 1"));
        QVERIFY(!ma.index(1, 1).data(Qt::ToolTipRole).toString().contains("part here"));
        QVERIFY(!ma.index(0, 1).data(Qt::ToolTipRole).toString().contains("part here"));
        // The same acceptance from the same anchor: no mark, whatever was drafted after the cut.
        auto b2 = handMadeRunB();
        b2.steps[0].drafted = {11, 77, 13};
        b2.steps[0].acceptedCount = 1;
        ma.setComparison(b2, "B");
        QCOMPARE(ma.differingCellCount(), 0);
        // B accepting all three from the same anchor: they part at A's rejection, position 2.
        b2.steps[0].acceptedCount = 3;
        ma.setComparison(b2, "B");
        QCOMPARE(marked(ma), (QList<QPair<int, int>>{{0, 2}}));
        // A different committed prefix (sampling): not the same input, no mark.
        b2.outputIds[2] = 77;
        ma.setComparison(b2, "B");
        QCOMPARE(ma.differingCellCount(), 0);
        ma.setComparison(RunResult{}, {});
        QCOMPARE(ma.differingCellCount(), 0);
        // The grid view's figure and step records carry the caption and the marks.
        QTemporaryDir dir;
        StepSelection sel;
        BlockAgreementView grid(&sel);
        grid.model()->setRun(handMadeRun(), piece);
        grid.model()->setComparison(handMadeRunB(), "B");
        grid.setCaption("Drafter A: good");
        grid.setExportName("block_agreement_b");
        QString err;
        const auto written = grid.exportAll(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(written.size(), 7);
        for (const auto& p : written) verifyFigure(p);
        QVERIFY(head(dir.filePath("block_agreement_b.svg"), 100000).contains("Drafter A: good"));
        QFile steps(dir.filePath("verify_steps_b.csv"));
        QVERIFY(steps.open(QIODevice::ReadOnly));
        QVERIFY(steps.readLine().trimmed().endsWith("target_rank_in_draft_topk,differs_from_other_drafter"));
        steps.readLine();
        steps.readLine();
        QVERIFY(steps.readLine().trimmed().endsWith(",1"));  // step 1 position 2
        // A clipped last block (the current loop): the cells past it are blank in the figure,
        // as on screen, not filled black (no 6x6 square of pure black anywhere).
        auto clipped = handMadeRun();
        {  // block of 2 at the end of max-new: one drafted token, accepted, then the bonus
            auto& last = clipped.steps.back();
            last.drafted.resize(1);
            last.targetTokens.resize(2);
            last.acceptedCount = 1;
            last.bonusToken = last.targetTokens[1];
            for (auto* v : {&last.draftProb, &last.targetProbOfDraft, &last.targetProbOfTarget}) v->resize(1);
            last.targetRankInDraft.resize(1);
            last.draftTopIds.resize(1);
            last.draftTopProbs.resize(1);
        }
        grid.model()->setComparison(RunResult{}, {});
        grid.model()->setRun(clipped, piece);
        QVERIFY(!grid.model()->index(1, 3).data(Qt::BackgroundRole).isValid());
        QTemporaryDir clippedDir;
        grid.exportAll(clippedDir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        const QImage png(clippedDir.filePath("block_agreement_b.png"));
        QVERIFY(!png.isNull());
        bool blackSquare = false;
        for (int y = 0; y + 6 <= png.height() && !blackSquare; ++y)
            for (int x = 0; x + 6 <= png.width() && !blackSquare; ++x) {
                bool all = true;
                for (int dy = 0; dy < 6 && all; ++dy)
                    for (int dx = 0; dx < 6 && all; ++dx) all = (png.pixel(x + dx, y + dy) & 0xffffff) == 0;
                blackSquare = all;
            }
        QVERIFY(!blackSquare);
    }

    void outputStripAcceptedBy() {
        StepSelection sel;
        OutputStripView strip(&sel);
        QAbstractItemModelTester tester(strip.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto a = handMadeRun();
        strip.setRun(a, pieces(a));
        QCOMPARE(strip.model()->columnCount(), int(OutputTokenModel::ColumnCount));
        strip.setComparison(handMadeRunB(), "good", "leak");
        QCOMPARE(strip.model()->columnCount(), int(OutputTokenModel::ColumnCount) + 1);
        const QString expected[] = {"prompt", "A and B", "B only", "A only", "A and B", "A only", "B only"};
        for (int i = 5; i <= 11; ++i)
            QCOMPARE(strip.model()->index(i, OutputTokenModel::AcceptedByColumn).data().toString(), expected[i - 5]);
        QCOMPARE(strip.model()->acceptedByOf(7), AcceptedBy::BOnly);
        QCOMPARE(strip.model()->headerData(OutputTokenModel::AcceptedByColumn, Qt::Horizontal).toString(), QString("accepted_by"));
        const QString html = strip.browser()->toHtml();
        QVERIFY(html.contains(colorOf(AcceptedBy::BOnly).name()) && html.contains(colorOf(AcceptedBy::AOnly).name()));
        QVERIFY(html.contains("A: good, B: leak"));  // the legend is in the (exported) document
        // A new run alone drops the comparison.
        strip.setRun(a, pieces(a));
        QVERIFY(!strip.model()->hasComparison());
        QCOMPARE(strip.model()->columnCount(), int(OutputTokenModel::ColumnCount));
    }

    void acceptancePlotsOverlay() {
        StepSelection sel;
        AcceptancePlots plots(&sel);
        plots.setRun(handMadeRun());
        QCOMPARE(plots.ratePlot()->graphCount(), 1);
        plots.setComparison(handMadeRunB(), "good", "leak");
        QVERIFY(plots.hasComparison());
        QCOMPARE(plots.ratePlot()->graphCount(), 2);
        auto values = [](QCPGraph* g) {
            QVector<double> v;
            for (auto it = g->data()->begin(); it != g->data()->end(); ++it) v << it->value;
            return v;
        };
        auto keys = [](QCPGraph* g) {
            QVector<double> v;
            for (auto it = g->data()->begin(); it != g->data()->end(); ++it) v << it->key;
            return v;
        };
        QCOMPARE(values(plots.ratePlot()->graph(0)), (QVector<double>{1.0, 0.5, 0.5}));
        QCOMPARE(values(plots.ratePlot()->graph(1)), (QVector<double>{1.0, 1.0 / 3.0, 0.0}));
        QCOMPARE(plots.ratePlot()->graph(0)->name(), QString("A: good (tau 3.000)"));
        QCOMPARE(plots.ratePlot()->graph(1)->name(), QString("B: leak (tau 2.333)"));
        QVERIFY(plots.ratePlot()->legend->visible());
        auto* barsA = qobject_cast<QCPBars*>(plots.histogramPlot()->plottable(0));
        auto* barsB = qobject_cast<QCPBars*>(plots.histogramPlot()->plottable(1));
        QVERIFY(barsA && barsB);
        QMap<double, double> countsB;
        for (auto it = barsB->data()->begin(); it != barsB->data()->end(); ++it) countsB[it->key] = it->value;
        QCOMPARE(countsB.value(2), 2.0);
        QCOMPARE(countsB.value(3), 1.0);
        QCOMPARE(countsB.value(4), 0.0);
        QCOMPARE(barsB->name(), QString("B: leak (tau 2.333)"));
        // Per step: x = anchor position - prompt length, y = acceptance length.
        QCOMPARE(keys(plots.perStepPlot()->graph(0)), (QVector<double>{0, 2}));
        QCOMPARE(values(plots.perStepPlot()->graph(0)), (QVector<double>{2, 4}));
        QCOMPARE(keys(plots.perStepPlot()->graph(1)), (QVector<double>{0, 3, 5}));
        QCOMPARE(values(plots.perStepPlot()->graph(1)), (QVector<double>{3, 2, 2}));
        // Selecting A's step still highlights its length; the table names each drafter.
        sel.select(1, 0);
        QCOMPARE(plots.histogramPlot()->plottableCount(), 3);
        int bRows = 0;
        for (int r = 0; r < plots.table()->rowCount(); ++r) bRows += plots.table()->item(r, 4)->text() == "B: leak";
        QCOMPARE(bRows, 3 + 4 + 1);  // rates j=1..3, lengths 1..4, tau
        plots.setRun(handMadeRun());
        QCOMPARE(plots.ratePlot()->graphCount(), 1);
        QVERIFY(!plots.ratePlot()->legend->visible());
    }

    void budgetSweepOverlay() {
        auto tree = [](int budget, double tau) {
            TreeRunResult t;
            t.budget = budget;
            t.tau = tau;
            t.promptIds = {1, 2};
            t.outputIds = {1, 2, 3, 4};
            return t;
        };
        BudgetSweepPlot sweep;
        sweep.setRuns(handMadeRun(), {tree(8, 4.0), tree(4, 3.5)});
        sweep.setComparison(handMadeRunB(), {tree(4, 2.5), tree(8, 3.0)}, "good", "leak");
        QCOMPARE(sweep.budgets(), (QVector<double>{4, 8}));
        QCOMPARE(sweep.taus(), (QVector<double>{3.5, 4.0}));
        QCOMPARE(sweep.budgetsB(), (QVector<double>{4, 8}));
        QCOMPARE(sweep.tausB(), (QVector<double>{2.5, 3.0}));
        QCOMPARE(sweep.chainTau(), 3.0);
        QCOMPARE(sweep.chainTauB(), 7.0 / 3.0);
        QCOMPARE(sweep.plot()->graphCount(), 4);  // A tree, A chain, B tree, B chain
        QCOMPARE(sweep.plot()->graph(2)->name(), QString("B (leak): DDTree tau"));
        QCOMPARE(sweep.table()->rowCount(), 6);
        QCOMPARE(sweep.table()->item(5, 0)->text(), QString("chain"));
        QCOMPARE(sweep.table()->item(5, 5)->text(), QString("leak"));
        sweep.setRuns(handMadeRun(), {});
        QVERIFY(std::isnan(sweep.chainTauB()));
        QCOMPARE(sweep.table()->columnCount(), 5);
    }

    void comparisonSummaryTable() {
        ModelSummary da, db;
        da.directory = "/m/good";
        db.directory = "/m/leak";
        da.blockSize = db.blockSize = 4;
        da.targetLayerIds = {1, 2};
        db.targetLayerIds = {1, 3};
        da.maskTokenId = db.maskTokenId = 7;
        da.numLayers = db.numLayers = 1;
        TreeRunResult ta, tb;
        ta.budget = tb.budget = 8;
        ta.tau = 4.0;
        tb.tau = 3.0;
        ComparisonSummaryView view;
        view.setComparison({"good", da, handMadeRun(), {ta}}, {"leak", db, handMadeRunB(), {tb}});
        auto row = [&](const QString& q) {
            const int r = view.rowOf(q);
            QStringList cells;
            if (r < 0) return cells;
            for (int c = 0; c < 5; ++c) cells << view.table()->item(r, c)->text();
            return cells;
        };
        QCOMPARE(row("tau"), (QStringList{"tau", "3.0000", "2.3333", "-0.6667", "yes"}));
        QCOMPARE(row("verify steps"), (QStringList{"verify steps", "2", "3", "1", "yes"}));
        QCOMPARE(row("outputs identical"), (QStringList{"outputs identical", "yes", "yes", "", ""}));
        QCOMPARE(row("mean draft prob (all drafted positions)").mid(1, 2), (QStringList{"0.6000", "0.6000"}));
        QCOMPARE(row("mean draft prob (accepted positions)").mid(1, 2), (QStringList{"0.6750", "0.8250"}));
        QCOMPARE(row("acceptance rate at position 2").mid(1), (QStringList{"0.5000", "0.3333", "-0.1667", "yes"}));
        QCOMPARE(row("acceptance rate at position 1").at(4), QString());
        QCOMPARE(row("DDTree tau, budget 8").mid(1, 2), (QStringList{"4.0000", "3.0000"}));
        QCOMPARE(row("tapped target layers"), (QStringList{"tapped target layers", "[1, 2]", "[1, 3]", "", "yes"}));
        QCOMPARE(row("block size").at(4), QString());
        QCOMPARE(row("mask token id").mid(1, 2), (QStringList{"7", "7"}));
        QVERIFY(view.table()->horizontalHeaderItem(1)->text().contains("good"));
        {
            // In a dock as narrow as the right-hand views (and with long drafter names), the
            // value columns stay whole in view; the quantity column elides.
            ComparisonSummaryView narrow;
            narrow.resize(380, 500);
            narrow.setComparison({"a drafter with a very long checkpoint name", da, handMadeRun(), {ta}},
                                 {"another drafter with a long name", db, handMadeRunB(), {tb}});
            narrow.show();
            QVERIFY(QTest::qWaitForWindowExposed(&narrow));
            QTableView* t = narrow.tableView();
            QCOMPARE(t->horizontalScrollBar()->maximum(), 0);
            for (int c = 1; c < 5; ++c) {
                QVERIFY2(t->columnViewportPosition(c) + t->columnWidth(c) <= t->viewport()->width(), qPrintable(QString::number(c)));
                for (int r = 0; r < narrow.table()->rowCount(); ++r)
                    QVERIFY2(t->fontMetrics().horizontalAdvance(narrow.table()->item(r, c)->text()) < t->columnWidth(c),
                             qPrintable(narrow.table()->item(r, c)->text()));
            }
            QVERIFY2(t->columnWidth(0) >= 50, qPrintable(QString::number(t->columnWidth(0))));
        }
        QTemporaryDir dir;
        QString err;
        const auto written = view.exportAll(dir.path(), &err);
        QCOMPARE(written.size(), 2);
        QFile csv(dir.filePath("ab_summary.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readLine().trimmed(), QByteArray("quantity,A: good,B: leak,B - A,differs"));
        QCOMPARE(csv.readLine().trimmed(), QByteArray("tau,3.0000,2.3333,-0.6667,yes"));
        // Long directories: the last two components on screen (narrow columns), the whole path
        // in the tooltip and the export; paths that end alike still differ.
        da.directory = "/data/runs/exp1/drafters/ckpt";
        db.directory = "/data/runs/exp2/drafters/ckpt";
        view.setComparison({"A", da, handMadeRun(), {}}, {"B", db, handMadeRunB(), {}});
        QCOMPARE(row("directory"), (QStringList{"directory", "\u2026/drafters/ckpt", "\u2026/drafters/ckpt", "", "yes"}));
        const int dirRow = view.rowOf("directory");
        QCOMPARE(view.table()->item(dirRow, 1)->toolTip(), QString("/data/runs/exp1/drafters/ckpt"));
        QVERIFY(view.exportAll(dir.path(), &err).size() == 2 && err.isEmpty());
        QFile csv2(dir.filePath("ab_summary.csv"));
        QVERIFY(csv2.open(QIODevice::ReadOnly));
        QVERIFY(csv2.readAll().contains("directory,/data/runs/exp1/drafters/ckpt,/data/runs/exp2/drafters/ckpt,,yes"));
    }

    void selectorViewSummarisesAndExports() {
        // Two drafted positions; step 0 kept the argmax, step 1 changed position 1 and gained
        // 2 (accepted 2 where the argmax token was not the target's).
        RunResult run;
        run.blockSize = 3;
        VerifyStep kept, gained;
        kept.drafted = kept.drafterArgmax = {5, 6};
        kept.targetTokens = {5, 9, 1};
        kept.acceptedCount = 1;
        gained.drafted = {7, 8};
        gained.drafterArgmax = {3, 8};
        gained.targetTokens = {7, 8, 2};
        gained.acceptedCount = 2;
        run.steps = {kept, gained};
        SelectorView view;
        view.setSeries({{"A: dflash2", 0, selectorStats(run), proposerOf("DFlash2"), {}},
                        {"B: dflash", 1, selectorStats(RunResult{}), proposerOf("DFlash"), {}}});
        QVERIFY2(view.summaryText().contains(
                     "A: dflash2 (candidate selector): changed 1 of 2 steps; gained 1 (+2 tokens), lost 0, neutral 0"),
                 qPrintable(view.summaryText()));
        QVERIFY(view.summaryText().contains("B: dflash: no candidate selector or Markov bias"));
        QVERIFY(!view.calibration()->hasData());
        SelectorStats none = selectorStats(run);
        none.gained = none.tokensGained = 0;
        QCOMPARE(describeSelectorStats(none), QString("changed 1 of 2 steps; gained 0, lost 0, neutral 0"));
        QCOMPARE(view.table()->rowCount(), 2);  // A's two positions; B has none
        QCOMPARE(view.table()->item(0, 4)->data(Qt::DisplayRole).toDouble(), 50.0);
        QCOMPARE(view.table()->item(1, 4)->data(Qt::DisplayRole).toDouble(), 0.0);
        QTemporaryDir dir;
        QString err;
        const auto written = view.exportAll(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(written.size(), 5);
        for (const auto& f : written) verifyFigure(f);
        QFile csv(dir.filePath("selector.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readLine().trimmed(), QByteArray("drafter,block position,steps drafted,steps changed,changed %"));
        QCOMPARE(csv.readLine().trimmed(), QByteArray("A: dflash2,1,2,1,50"));
        view.clear();
        QVERIFY(view.summaryText().contains("Run a DFlash2 or DSpark drafter"));
        QCOMPARE(view.table()->rowCount(), 0);
    }

    void calibrationCountsTestedSlotsAndExports() {
        // Greedy steps of 3 drafted tokens with the head's confidence (bins of 0.5):
        //  step 0: accepted, accepted, rejected -> slots (0.9,1) (0.8,1) (0.3,0)
        //  step 1: rejected at 0 -> slot (0.7,0); its later slots were not tested
        //  step 2 (sampled-style record): tested 1, -1 -> slot (0.2,1) only
        RunResult run;
        VerifyStep a, b, c;
        a.drafted = {1, 2, 3};
        a.targetTokens = {1, 2, 9, 4};
        a.confidence = {0.9f, 0.8f, 0.3f};
        b.drafted = {5, 6, 7};
        b.targetTokens = {8, 6, 7, 1};
        b.confidence = {0.7f, 0.6f, 0.6f};
        c.drafted = {1, 1, 1};
        c.targetTokens = {1, 2, 3, 4};
        c.rejectionTested = {1, -1, -1};
        c.confidence = {0.2f, 0.9f, 0.9f};
        run.steps = {a, b, c};
        const auto cal = confidenceCalibration(run, 2);
        QVERIFY(cal.available);
        QCOMPARE(cal.tested, 5);
        QCOMPARE(cal.bins[0].tested, 2);  // 0.3 (rejected), 0.2 (accepted)
        QCOMPARE(cal.bins[1].tested, 3);  // 0.9, 0.8 (accepted), 0.7 (rejected)
        QVERIFY(std::abs(cal.bins[0].meanConfidence - 0.25) < 1e-6);
        QCOMPARE(cal.bins[0].acceptedRate, 0.5);
        QVERIFY(std::abs(cal.bins[1].meanConfidence - 0.8) < 1e-6);
        QVERIFY(std::abs(cal.bins[1].acceptedRate - 2.0 / 3) < 1e-12);
        // Brier: (0.01 + 0.04 + 0.09 + 0.49 + 0.64) / 5; ECE: (2 * 0.25 + 3 * (0.8 - 2/3)) / 5.
        QVERIFY(std::abs(cal.brier - 1.27 / 5) < 1e-6);
        QVERIFY(std::abs(cal.ece - (0.5 + 3 * (0.8 - 2.0 / 3)) / 5) < 1e-6);
        QVERIFY(!confidenceCalibration(RunResult{}).available);

        SelectorView view;
        RunResult withArgmax = run;
        for (auto& st : withArgmax.steps) st.drafterArgmax = st.drafted;
        withArgmax.blockSize = 4;
        view.setSeries({{"A: dspark", 0, selectorStats(withArgmax), proposerOf("DSpark"), cal}});
        QVERIFY(view.calibration()->hasData());
        QVERIFY2(view.summaryText().contains("A: dspark (Markov bias): changed 0 of 3 steps"), qPrintable(view.summaryText()));
        QVERIFY2(view.calibration()->summaryText().contains(
                     "5 tested slots: mean confidence 0.58, accepted 0.60; Brier 0.254, ECE 0.180 (greedy run: accepted = "
                     "argmax match)"),
                 qPrintable(view.calibration()->summaryText()));
        QCOMPARE(view.calibration()->table()->rowCount(), 2);
        QTemporaryDir dir;
        QString err;
        const auto written = view.exportAll(dir.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(written.size(), 10);  // selector.{png,svg,pdf,csv,json} + calibration.{...}
        for (const auto& f : written) verifyFigure(f);
        QFile csv(dir.filePath("calibration.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readLine().trimmed(),
                 QByteArray("drafter,bin from,bin to,tested slots,mean confidence,accepted share"));
        QVERIFY(csv.readLine().startsWith("A: dspark,0,0.5,2,0.25"));
    }

    void exportsAreValid() {
        QTemporaryDir dir;
        StepSelection sel;
        BlockAgreementView grid(&sel);
        OutputStripView strip(&sel);
        AcceptancePlots plots(&sel);
        const auto run = handMadeRun();
        grid.model()->setRun(run, piece);
        strip.setRun(run, pieces(run));
        plots.setRun(run);
        strip.resize(600, 200);
        plots.resize(600, 500);
        QString err;
        QStringList all;
        for (ExportableView* v : std::initializer_list<ExportableView*>{&grid, &strip, &plots}) {
            all += v->exportAll(dir.path(), &err);
            QVERIFY2(err.isEmpty(), qPrintable(err));
        }
        QCOMPARE(all.size(), 7 + 5 + 11);  // acceptance: rate, histogram, per step (3 formats each) + table
        for (const auto& p : all) verifyFigure(p);
        QFile csv(dir.filePath("block_agreement.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readLine().trimmed(), QByteArray("anchor,1,2,3"));
        QCOMPARE(csv.readLine().trimmed(), QByteArray("t10,t11,t12,t13"));
        QFile steps(dir.filePath("verify_steps.csv"));
        QVERIFY(steps.open(QIODevice::ReadOnly));
        QCOMPARE(steps.readLine().trimmed(), QByteArray("step,position,absolute_position,drafted_id,drafted_piece,target_id,"
                                                        "status,draft_prob,target_prob_of_draft,target_rank_in_draft_topk"));
        QCOMPARE(steps.readLine().trimmed(), QByteArray("1,0,5,10,t10,,anchor,,,"));
        QCOMPARE(steps.readLine().trimmed(), QByteArray("1,1,6,11,t11,11,accepted,0.9,0.8,0"));
        QCOMPARE(steps.readLine().trimmed(), QByteArray("1,2,7,12,t12,99,rejected,0.6,0.05,2"));
        QFile json(dir.filePath("output_strip.json"));
        QVERIFY(json.open(QIODevice::ReadOnly));
        const auto doc = QJsonDocument::fromJson(json.readAll());
        QCOMPARE(doc.array().size(), 12);
        QCOMPARE(doc.array()[7].toObject()["origin"].toString(), QString("bonus (target)"));
        // A selected step is an on-screen state: the figures are the same without it.
        QTemporaryDir selected;
        sel.select(1, 1);
        QVERIFY(strip.browser()->toHtml().contains("font-weight:700") || strip.browser()->toHtml().contains("font-weight:bold"));
        for (ExportableView* v : std::initializer_list<ExportableView*>{&grid, &strip, &plots}) {
            v->exportAll(selected.path(), &err);
            QVERIFY2(err.isEmpty(), qPrintable(err));
        }
        for (const auto& f : {"block_agreement.png", "block_agreement.svg", "output_strip.png", "output_strip.svg",
                              "acceptance_histogram.png", "acceptance_histogram.svg", "acceptance_rate.svg"}) {
            QFile a(dir.filePath(f)), b(selected.filePath(f));
            QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
            QVERIFY2(a.readAll() == b.readAll(), f);
        }
        QVERIFY(!strip.figureHtml().contains("font-weight:bold"));
        QVERIFY(strip.figureHtml().contains("accepted draft"));  // the legend is part of the figure
        QVERIFY(!strip.figureHtml().contains("Click a token"));
        // Unknown formats are refused with a message.
        QVERIFY(!exportPlot(plots.ratePlot(), dir.filePath("x.bmp"), &err));
        QVERIFY(err.contains("png, svg or pdf"));
        QVERIFY(!exportTable(grid.model(), dir.filePath("x.xls"), &err));
        QVERIFY(!exportTable(grid.model(), "/nonexistent-dir/x.csv", &err));
        QCOMPARE(err, QString("cannot write '/nonexistent-dir/x.csv': directory '/nonexistent-dir' does not exist"));
    }

    // Figure and table exports follow the output-file policy (docs/RELIABILITY.md "Output
    // files"): written through a temporary file, a symlink written through, a directory or
    // device refused by name, a failed export leaving the old file and nothing else.
    void exportsFollowTheOutputFilePolicy() {
        QTemporaryDir dir;
        StepSelection sel;
        AcceptancePlots plots(&sel);
        BlockAgreementView grid(&sel);
        const auto run = handMadeRun();
        plots.setRun(run);
        grid.model()->setRun(run, piece);
        plots.resize(600, 500);
        QString err;
        const auto names = [&] {
            QStringList n = QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot);
            n.sort();
            return n;
        };
        // A symlink (here to a file in a subdirectory) is written through; the link stays.
        QVERIFY(QDir(dir.path()).mkdir("real"));
        QFile old(dir.filePath("real/rate.png"));
        QVERIFY(old.open(QIODevice::WriteOnly) && old.write("old") == 3);
        old.close();
        QVERIFY(QFile::link("real/rate.png", dir.filePath("rate.png")));
        QVERIFY2(exportPlot(plots.ratePlot(), dir.filePath("rate.png"), &err), qPrintable(err));
        QVERIFY(QFileInfo(dir.filePath("rate.png")).isSymLink());
        QVERIFY(!QImage(dir.filePath("real/rate.png")).isNull());
        // A dangling symlink creates its target, for every writer (SVG, PDF, tables).
        QVERIFY(QFile::link("made.svg", dir.filePath("link.svg")));
        QVERIFY2(exportPlot(plots.ratePlot(), dir.filePath("link.svg"), &err), qPrintable(err));
        QVERIFY(QFileInfo(dir.filePath("made.svg")).size() > 0 && QFileInfo(dir.filePath("link.svg")).isSymLink());
        QVERIFY(QFile::link("made.pdf", dir.filePath("link.pdf")));
        QVERIFY2(exportPlot(plots.ratePlot(), dir.filePath("link.pdf"), &err), qPrintable(err));
        QVERIFY(QFileInfo(dir.filePath("made.pdf")).size() > 0);
        QVERIFY(QFile::link("made.csv", dir.filePath("link.csv")));
        QVERIFY2(exportTable(grid.model(), dir.filePath("link.csv"), &err), qPrintable(err));
        QVERIFY(QFileInfo(dir.filePath("made.csv")).size() > 0);
        const QStringList written = {"link.csv", "link.pdf", "link.svg", "made.csv", "made.pdf", "made.svg", "rate.png", "real"};
        QCOMPARE(names(), written);  // no temporary file left
        // A directory or a device at the path is refused by name and left as it is.
        QVERIFY(QDir(dir.path()).mkdir("figure.png"));
        QVERIFY(!exportPlot(plots.ratePlot(), dir.filePath("figure.png"), &err));
        QCOMPARE(err, "refusing to write '" + dir.filePath("figure.png") +
                          "': it is a directory, not a regular file; give a file name");
        QVERIFY(QFileInfo(dir.filePath("figure.png")).isDir());
        QVERIFY(QFile::link("/dev/null", dir.filePath("null.csv")) && QFile::link("/dev/null", dir.filePath("null.png")));
        QVERIFY(!exportTable(grid.model(), dir.filePath("null.csv"), &err));
        QCOMPARE(err, "refusing to write '" + dir.filePath("null.csv") +
                          "' (the target of the symlink, '/dev/null'): it is a character device, not a regular file; "
                          "give a file name");
        QVERIFY(!exportPainted(QSize(10, 10), [](QPainter&) {}, dir.filePath("null.png"), &err));
        QVERIFY(err.contains("it is a character device"));
        // A failed render (an empty canvas cannot be saved) keeps the old file, and nothing else.
        QVERIFY(!exportPainted(QSize(0, 0), [](QPainter&) {}, dir.filePath("rate.png"), &err));
        QCOMPARE(err, "could not write '" + dir.filePath("rate.png") + "'");
        QVERIFY(!QImage(dir.filePath("real/rate.png")).isNull());
        QStringList after = written + QStringList{"figure.png", "null.csv", "null.png"};
        after.sort();
        QCOMPARE(names(), after);
    }
};

QTEST_MAIN(TestViews)
#include "tst_views.moc"
