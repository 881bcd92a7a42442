// The block agreement grid, the output strip and the acceptance plots fed a hand-made run
// whose every number is known; item models under QAbstractItemModelTester; exports.

#include "acceptance_plots.h"
#include "block_agreement_view.h"
#include "figure_export.h"
#include "output_strip_view.h"
#include "step_selection.h"

#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QTableView>
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
        // Unknown formats are refused with a message.
        QVERIFY(!exportPlot(plots.ratePlot(), dir.filePath("x.bmp"), &err));
        QVERIFY(err.contains("png, svg or pdf"));
        QVERIFY(!exportTable(grid.model(), dir.filePath("x.xls"), &err));
        QVERIFY(!exportTable(grid.model(), "/nonexistent-dir/x.csv", &err));
        QVERIFY(err.contains("could not write"));
    }
};

QTEST_MAIN(TestViews)
#include "tst_views.moc"
