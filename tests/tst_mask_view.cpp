// MaskView and AttentionView: drawn cells match the inputs, tick labels, diff counts,
// error reporting and export. Run with QT_QPA_PLATFORM=offscreen.

#include "attention_heads_overview.h"
#include "attention_view.h"
#include "heatmap_plot.h"
#include "mask_figure.h"
#include "mask_view.h"

#include "draftscope/masks.h"
#include "draftscope/model_config.h"
#include "test_support.h"

#include <qcustomplot.h>

#include <QAbstractItemModel>
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QSpinBox>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>

using namespace draftscope;

namespace {

QByteArray readAll(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

/// Checks that every exported file exists and starts like its format.
void checkExports(const QStringList& written, const QString& dir, const QString& base) {
    QCOMPARE(written.size(), 5);
    const QByteArray png = readAll(dir + "/" + base + ".png");
    QVERIFY(png.startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)));
    const QByteArray svg = readAll(dir + "/" + base + ".svg");
    QVERIFY(svg.contains("<svg"));
    const QByteArray pdf = readAll(dir + "/" + base + ".pdf");
    QVERIFY(pdf.startsWith("%PDF"));
    QVERIFY(!readAll(dir + "/" + base + ".csv").isEmpty());
    QVERIFY(readAll(dir + "/" + base + ".json").trimmed().startsWith("["));
}

QString tickAt(QCPAxis* axis, double pos) {
    auto t = qSharedPointerDynamicCast<QCPAxisTickerText>(axis->ticker());
    return t ? t->ticks().value(pos) : QString();
}

/// Attention of a step whose block of `blockSize` rows starts at position `start`: 2 layers,
/// 2 heads, queries at start..start+B-1, keys 0..start+B-1, weight(l, h, q, k) per cell.
DrafterAttention stepAttention(int step, int start, int blockSize, const std::function<float(int, int, int, int)>& weight) {
    DrafterAttention a;
    a.step = step;
    a.numLayers = 2;
    a.numHeads = 2;
    a.numQueries = blockSize;
    a.numKeys = start + blockSize;
    for (int q = 0; q < blockSize; ++q) a.queryPositions.push_back(start + q);
    for (int k = 0; k < start + blockSize; ++k) a.keyPositions.push_back(k);
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 2; ++h)
            for (int q = 0; q < blockSize; ++q)
                for (int k = 0; k < start + blockSize; ++k) a.weights.push_back(weight(l, h, q, k));
    return a;
}

DrafterAttention makeAttention() {
    auto a = stepAttention(7, 2, 3, [](int l, int h, int q, int k) { return float(l * 1000 + h * 100 + q * 10 + k) / 10000.0f; });
    a.keyTokens = {11, 12, 13, 99, 99};
    return a;
}

}  // namespace

class TestMaskView : public QObject {
    Q_OBJECT

    /// Colour-map cells must equal the view's shown values, which must follow the matrix.
    static void checkCells(MaskView& v, const MaskMatrix& m) {
        auto* d = v.colorMap()->data();
        QCOMPARE(d->keySize(), int(m.cols));
        QCOMPARE(d->valueSize(), int(m.rows));
        for (std::int64_t r = 0; r < m.rows; ++r)
            for (std::int64_t c = 0; c < m.cols; ++c)
                QCOMPARE(d->cell(int(c), int(r)), m.at(r, c) ? 1.0 : 0.0);
    }

private slots:
    void exportedHeatmapsAreReportReady_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::newRow("small 4x8") << 4 << 8;       // a tree step: used to fill 200 of 480 px
        QTest::newRow("block 16x40") << 16 << 40;   // an inference mask
        QTest::newRow("long 16x300") << 16 << 300;  // a long context: labels thinned
    }
    void exportedHeatmapsAreReportReady() {
        // The exported PNG is measured: the matrix fills most of the figure whatever the dock's
        // size, and no two tick labels are closer than a label's height.
        QFETCH(int, rows);
        QFETCH(int, cols);
        HeatmapPlot plot;
        plot.resize(330, 250);  // a small dock
        QCPColorGradient red;
        red.clearColorStops();
        red.setColorStopAt(0, QColor(255, 0, 0));
        red.setColorStopAt(1, QColor(255, 0, 0));
        plot.colorMap()->setGradient(red);
        plot.colorMap()->setDataRange(QCPRange(0, 1));
        HeatmapCells cells;
        cells.rows = rows;
        cells.cols = cols;
        cells.values.assign(static_cast<std::size_t>(rows * cols), 1.0);
        for (int c = 0; c < cols; ++c) cells.columnLabels << QString("ctx %1 'token'").arg(c);
        for (int r = 0; r < rows; ++r) cells.rowLabels << QString("b+%1 @%2 [M]").arg(r).arg(100 + r);
        plot.setCells(cells);
        plot.setTitle("a mask");
        plot.setAxisLabels("key (position, token)", "query (block row @ position)");
        QTemporaryDir dir;
        const QString png = dir.filePath("m.png");
        QString err;
        QVERIFY2(plot.exportFigure(png, &err, "prompt p, drafter d"), qPrintable(err));
        QImage img(png);
        QVERIFY(!img.isNull());
        int x0 = img.width(), y0 = img.height(), x1 = -1, y1 = -1;
        for (int y = 0; y < img.height(); ++y)
            for (int x = 0; x < img.width(); ++x)
                if (img.pixel(x, y) == qRgb(255, 0, 0)) {
                    x0 = std::min(x0, x);
                    y0 = std::min(y0, y);
                    x1 = std::max(x1, x);
                    y1 = std::max(y1, y);
                }
        QVERIFY(x1 > x0 && y1 > y0);
        const double fw = double(x1 - x0 + 1) / img.width(), fh = double(y1 - y0 + 1) / img.height();
        qInfo("%dx%d: image %dx%d, matrix %dx%d px (%.0f%% x %.0f%%)", rows, cols, img.width(), img.height(), x1 - x0 + 1,
              y1 - y0 + 1, fw * 100, fh * 100);
        QVERIFY2(fw >= 0.5, qPrintable(QString::number(fw)));
        QVERIFY2(fh >= 0.3, qPrintable(QString::number(fh)));
        // The axis titles and labels sit outside the matrix, within the image: the matrix does
        // not touch the border.
        QVERIFY(x0 > 10 && y0 > 10 && x1 < img.width() - 5 && y1 < img.height() - 10);
        // Labels at least 13 px apart (about a 7 pt line) along each axis of the figure.
        const auto t = plot.lastExportTicks();
        QVERIFY2(t[0] >= 1 && t[0] * 13 <= t[2] + 13, qPrintable(QString("%1 labels on %2 px").arg(t[0]).arg(t[2])));
        QVERIFY2(t[1] >= 1 && t[1] * 13 <= t[3] + 13, qPrintable(QString("%1 labels on %2 px").arg(t[1]).arg(t[3])));
        // The on-screen thinning comes back after the export.
        QVERIFY(plot.shownTickCount(Qt::Horizontal) <= t[0] || cols < 20);
    }

    void heatmapTickThinningAndHatchRuns() {
        // 100 labels over 260 px: room for 20 (13 px each), so every 5th; 10 fit at once.
        const auto every5 = thinnedTicks(100, -0.5, 99.5, 260);
        QCOMPARE(every5.size(), std::size_t(20));
        QCOMPARE(every5[1], 5);
        QCOMPARE(thinnedTicks(10, -0.5, 9.5, 260), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
        // Zoomed in to 10 cells: all labelled again; before the first layout room for 48.
        QCOMPARE(thinnedTicks(100, 20, 29, 260).size(), std::size_t(100));
        QCOMPARE(thinnedTicks(100, -0.5, 99.5, 0)[1], 3);
        QVERIFY(thinnedTicks(0, 0, 1, 300).empty());
        // Runs of hatched cells per row: row 0 cols 1..2, row 1 cols 0 and 3.
        const std::vector<std::uint8_t> hatched{0, 1, 1, 0, 1, 0, 0, 1};
        QCOMPARE(hatchRuns(hatched, 2, 4), (std::vector<HatchRun>{{0, 1, 2}, {1, 0, 0}, {1, 3, 3}}));
        QVERIFY(hatchRuns(hatched, 3, 4).empty());  // too few cells: nothing, no overread
    }

    void maskFigureWithoutAView() {
        // Training S 4, B 2, one block at anchor 1, reference conventions: each block row sees
        // context 0 (kv < 1) and both block columns (bidirectional): 6 of 12 cells.
        MaskFigureInput in;
        in.mode = MaskMode::Training;
        in.trainingContext = 4;
        in.trainingBlock = 2;
        in.anchors = "1";
        MaskFigure f = buildMaskFigure(in);
        QVERIFY2(f.error.isEmpty(), qPrintable(f.error));
        QCOMPARE(f.shown, (std::vector<std::uint8_t>{1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1}));
        QCOMPARE(f.columnLabels, (QStringList{"0", "1", "2", "3", "b0+0 @1", "b0+1 @2"}));
        QCOMPARE(f.rowLabels, (QStringList{"b0+0 @1", "b0+1 @2"}));
        QCOMPARE(f.summary, QString("2 queries x 6 keys, 6 visible cells"));
        QVERIFY2(f.title.startsWith("Training mask (S 4, B 2, anchors 1)\nA: kv < anchor, bidirectional block"),
                 qPrintable(f.title));
        // Diff against the inclusive context: B also sees context 1 (the anchor), in both rows.
        in.diff = true;
        in.b.context = MaskConventions::Context::Inclusive;
        f = buildMaskFigure(in);
        QVERIFY(f.isDiff);
        QCOMPARE(f.counts.onlyA, std::int64_t(0));
        QCOMPARE(f.counts.onlyB, std::int64_t(2));
        QCOMPARE(f.shown, (std::vector<std::uint8_t>{1, 3, 0, 0, 1, 1, 1, 3, 0, 0, 1, 1}));
        QCOMPARE(f.summary, QString("2 cells differ: 0 visible only in A (red), 2 visible only in B (blue)"));
        // An anchor outside [0, S): the backend's message, nothing drawn, never a throw.
        in.anchors = "7";
        f = buildMaskFigure(in);
        QVERIFY(f.error.contains("7"));
        QVERIFY(f.shown.empty() && f.columnLabels.isEmpty());
        QVERIFY(f.title.endsWith(f.error));
    }

    void tableModelsPassTheModelTester() {
        MaskView mask;
        QAbstractItemModelTester maskTester(const_cast<QAbstractItemModel*>(mask.tableModel()),
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
        mask.setTrainingExample(6, 3, {1, 4});
        mask.setMode(MaskView::Mode::Training);
        QCOMPARE(mask.tableModel()->rowCount(), 6);
        mask.setInferenceContext(5, 4, {});
        mask.setMode(MaskView::Mode::Inference);
        QCOMPARE(mask.tableModel()->rowCount(), 4);
        mask.clearInferenceContext();
        AttentionView attn;
        QAbstractItemModelTester attnTester(const_cast<QAbstractItemModel*>(attn.tableModel()),
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
        attn.setAttention(makeAttention(), {});
        QVERIFY(attn.tableModel()->rowCount() > 0);
        attn.setAverageHeads(true);
        attn.clear();
        QCOMPARE(attn.tableModel()->rowCount(), 0);
    }

    void trainingCellsMatchMatrix() {
        MaskView v;
        v.setMode(MaskView::Mode::Training);
        v.setTrainingExample(6, 3, {1, 4});
        const auto ref = trainingMask(6, 3, {1, 4}, MaskConventions{});
        QCOMPARE(v.matrix().visible, ref.visible);
        checkCells(v, ref);
        QVERIFY(v.errorText().isEmpty());
        QVERIFY(v.summaryText().contains("6 queries x 12 keys"));

        MaskConventions causal;
        causal.block = MaskConventions::Block::Causal;
        v.setConventions(causal);
        checkCells(v, trainingMask(6, 3, {1, 4}, causal));

        // Table: "query" then one column per key, the same 0/1 values.
        const QAbstractItemModel* t = v.tableModel();
        QCOMPARE(t->rowCount(), 6);
        QCOMPARE(t->columnCount(), 13);
        QCOMPARE(t->headerData(0, Qt::Horizontal).toString(), QString("query"));
        QCOMPARE(t->headerData(7, Qt::Horizontal).toString(), QString("b0+0"));
        QCOMPARE(t->index(1, 0).data().toString(), QString("b0+1"));
        QCOMPARE(t->index(0, 8).data().toInt(), 0);  // b0+0 -> b0+1 is masked when causal
        QCOMPARE(t->index(1, 8).data().toInt(), 1);
    }

    void tickLabelsShowPositions() {
        MaskView v;
        v.setMode(MaskView::Mode::Training);
        v.setTrainingExample(6, 3, {1, 4});
        QCOMPARE(v.keyTickLabels().size(), 12);
        QCOMPARE(v.keyTickLabels()[5], QString("5"));
        QCOMPARE(v.keyTickLabels()[6], QString("b0+0 @1"));
        QCOMPARE(v.queryTickLabels()[3], QString("b1+0 @4"));
        QCOMPARE(tickAt(v.plot()->xAxis, 6), QString("b0+0 @1"));
        QCOMPARE(tickAt(v.plot()->yAxis, 5), QString("b1+2 @6"));
        // The off-by-one convention shows in the labels.
        MaskConventions off;
        off.positionOffset = 1;
        v.setConventions(off);
        QCOMPARE(tickAt(v.plot()->xAxis, 6), QString("b0+0 @2"));
        QCOMPARE(tickAt(v.plot()->yAxis, 3), QString("b1+0 @5"));
        checkCells(v, trainingMask(6, 3, {1, 4}, MaskConventions{}));
    }

    void manyColumnsAreThinned() {
        MaskView v;
        v.resize(900, 700);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setInferenceContext(400, 16, {});
        const int labels = v.keyTickLabels().size();
        QCOMPARE(labels, 416);
        auto t = qSharedPointerDynamicCast<QCPAxisTickerText>(v.plot()->xAxis->ticker());
        QVERIFY(t->ticks().size() < 100);
        QVERIFY(t->ticks().size() >= 10);
        QCOMPARE(t->ticks().value(0), QString("0"));
    }

    void inferenceWithPieces() {
        MaskView v;
        QVERIFY(v.matrix().rows == 0);  // no step yet
        v.setInferenceContext(3, 2, {"The", " cat", "\nsat", "!"});
        QCOMPARE(v.matrix().rows, std::int64_t(2));
        QCOMPARE(v.matrix().cols, std::int64_t(5));
        checkCells(v, inferenceMask(3, 2, MaskConventions{}));
        QCOMPARE(v.keyTickLabels(),
                 (QStringList{"0 'The'", QString("1 '\u00b7cat'"), QString("2 '\u21b5sat'"), "b+0 @3 '!'", "b+1 @4 [M]"}));
        QCOMPARE(v.queryTickLabels(), (QStringList{"b+0 @3 '!'", "b+1 @4 [M]"}));

        MaskConventions inc;
        inc.context = MaskConventions::Context::Inclusive;
        v.setConventions(inc);
        QCOMPARE(v.matrix().cols, std::int64_t(6));
        QCOMPARE(v.keyTickLabels()[3], QString("3 anchor feat '!'"));
        checkCells(v, inferenceMask(3, 2, inc));

        v.clearInferenceContext();
        QCOMPARE(v.matrix().rows, std::int64_t(0));
        QCOMPARE(v.colorMap()->data()->keySize(), 0);
    }

    void perLayerInferenceMask() {
        // drafter-swa's layout: layer 0 causal + window 24, layer 1 full bidirectional.
        MaskView v;
        QCOMPARE(v.findChild<QComboBox*>("layerCombo")->count(), 1);  // base layout
        v.setInferenceContext(40, 16, {});
        checkCells(v, inferenceMask(40, 16, MaskConventions{}));
        const std::vector<LayerAttention> layout = {{true, 24}, {false, std::nullopt}};
        v.setDrafterLayout(layout);
        auto* combo = v.findChild<QComboBox*>("layerCombo");
        QCOMPARE(combo->count(), 2);
        QCOMPARE(combo->itemText(0), QString("0: sliding 24 causal"));
        QCOMPARE(v.selectedLayer(), 0);
        // Layer 0: block row o (position 40+o) sees context 17+o..39 and block rows 0..o.
        const auto& m = v.matrix();
        checkCells(v, inferenceMask(40, 16, MaskConventions{}, false, layout[0]));
        for (std::int64_t o = 0; o < 16; ++o)
            for (std::int64_t c = 0; c < m.cols; ++c)
                QCOMPARE(m.at(o, c), c <= 40 + o && c >= 17 + o);
        const auto* title = v.plot()->findChild<QCPTextElement*>("maskTitle");
        QVERIFY(title);
        QVERIFY2(title->text().contains("layer 0: sliding 24 causal"), qPrintable(title->text()));
        // The conventions line says what is drawn: the layer makes the block causal and windowed
        // whatever the Block setting says (it says bidirectional here).
        QVERIFY2(title->text().contains("A: kv < anchor, causal block (the layer is causal), block at anchor+0, keys within "
                                        "the last 24 positions"),
                 qPrintable(title->text()));
        QVERIFY(!title->text().contains("bidirectional block"));
        // Layer 1 is the reference mask: everything visible.
        v.setSelectedLayer(1);
        QVERIFY2(title->text().contains("A: kv < anchor, bidirectional block, block at anchor+0"), qPrintable(title->text()));
        QCOMPARE(v.matrix().visibleCount(), std::int64_t(16 * 56));
        // A new drafter with one layer keeps a valid selection.
        v.setDrafterLayout({{false, 20}});
        QCOMPARE(v.selectedLayer(), 0);
        checkCells(v, inferenceMask(40, 16, MaskConventions{}, false, LayerAttention{false, 20}));
    }

    void perLayerTrainingMask() {
        // Training mode draws the selected layer's packed mask (DFLASH.md 6 + 9).
        MaskView v;
        v.setMode(MaskView::Mode::Training);
        v.setTrainingExample(6, 4, {2, 4});
        auto* combo = v.findChild<QComboBox*>("layerCombo");
        auto* window = v.findChild<QSpinBox*>("windowSpin");
        QVERIFY(combo && window);
        QVERIFY(!combo->isVisibleTo(&v));  // no layout: the Window control decides
        QVERIFY(window->isEnabled());
        const std::vector<LayerAttention> layout = {{true, 3}, {false, std::nullopt}};
        v.setDrafterLayout(layout);
        QVERIFY(combo->isVisibleTo(&v));
        QVERIFY(!window->isEnabled());
        checkCells(v, trainingMask(6, 4, {2, 4}, MaskConventions{}, layout[0]));
        // Hand-computed: b0+3 (position 5) does not see b0+0 (position 2) but sees b0+1;
        // b1+0 (position 4) sees ctx 2 and 3, not ctx 1; 24 visible cells in all.
        auto* d = v.colorMap()->data();
        QCOMPARE(d->cell(6, 3), 0.0);
        QCOMPARE(d->cell(7, 3), 1.0);
        QCOMPARE(d->cell(2, 4), 1.0);
        QCOMPARE(d->cell(3, 4), 1.0);
        QCOMPARE(d->cell(1, 4), 0.0);
        QCOMPARE(v.matrix().visibleCount(), std::int64_t(24));
        const auto* title = v.plot()->findChild<QCPTextElement*>("maskTitle");
        QVERIFY(title);
        QVERIFY2(title->text().contains("layer 0: sliding 3 causal"), qPrintable(title->text()));
        // Layer 1 (full bidirectional) is the plain training mask.
        v.setSelectedLayer(1);
        checkCells(v, trainingMask(6, 4, {2, 4}, MaskConventions{}));
        // Tree verify mode has no layers; Inference mode always shows the selector.
        v.setMode(MaskView::Mode::TreeVerify);
        QVERIFY(!combo->isVisibleTo(&v));
        v.setDrafterLayout({});
        v.setMode(MaskView::Mode::Inference);
        QVERIFY(combo->isVisibleTo(&v));
        v.setMode(MaskView::Mode::Training);
        QVERIFY(!combo->isVisibleTo(&v));
        QVERIFY(window->isEnabled());
    }

    void diffModeCountsAndColours() {
        MaskView v;
        v.setMode(MaskView::Mode::Training);
        v.setTrainingExample(6, 3, {1, 4});
        MaskConventions inc;
        inc.context = MaskConventions::Context::Inclusive;
        v.setDiffConventions(inc);
        v.setDiffEnabled(true);
        QCOMPARE(v.diffCounts().onlyA, std::int64_t(0));
        QCOMPARE(v.diffCounts().onlyB, std::int64_t(6));
        auto* summary = v.findChild<QLabel*>("summaryLabel");
        QVERIFY(summary);
        QVERIFY2(summary->text().contains("6 cells differ"), qPrintable(summary->text()));
        QVERIFY(summary->text().contains("0 visible only in A"));
        QVERIFY(summary->text().contains("6 visible only in B"));
        // Cells: 3 = only B (the anchor columns), 1 = both, 0 = neither.
        auto* d = v.colorMap()->data();
        QCOMPARE(d->cell(1, 0), 3.0);
        QCOMPARE(d->cell(4, 4), 3.0);
        QCOMPARE(d->cell(0, 0), 1.0);
        QCOMPARE(d->cell(2, 0), 0.0);
        QCOMPARE(d->cell(9, 0), 0.0);
        QCOMPARE(v.colorMap()->dataRange().upper, 3.0);

        // A causal vs B reference: red cells (2 = only A sees) never occur; blue ones do.
        MaskConventions causal;
        causal.block = MaskConventions::Block::Causal;
        v.setConventions(causal);
        v.setDiffConventions(MaskConventions{});
        QCOMPARE(v.diffCounts().onlyA, std::int64_t(0));
        QCOMPARE(v.diffCounts().onlyB, std::int64_t(6));
        QCOMPARE(d->cell(7, 0), 3.0);

        // Offset only: no cell differs but the position mismatch is reported.
        MaskConventions off;
        off.positionOffset = 1;
        v.setConventions(off);
        QCOMPARE(v.diffCounts().total(), std::int64_t(0));
        QVERIFY2(v.summaryText().contains("position ids differ in 12"), qPrintable(v.summaryText()));
        QCOMPARE(tickAt(v.plot()->xAxis, 6), QString("b0+0 @2 (B @1)"));
        QCOMPARE(tickAt(v.plot()->xAxis, 5), QString("5"));

        // Inference diff strict vs inclusive: both get the anchor-feature column.
        v.setMode(MaskView::Mode::Inference);
        v.setConventions(MaskConventions{});
        v.setDiffConventions(inc);
        v.setInferenceContext(4, 3, {});
        QVERIFY(v.errorText().isEmpty());
        QCOMPARE(v.matrix().cols, std::int64_t(8));
        QCOMPARE(v.diffCounts().onlyB, std::int64_t(3));
        QCOMPARE(v.colorMap()->data()->cell(4, 2), 3.0);
        QCOMPARE(v.colorMap()->data()->cell(3, 2), 1.0);
    }

    void legendHasItsOwnLineAndKeepsEntriesWhole() {
        // At the Masks dock's width (1600x1000): the legend spans the view, wraps between
        // entries only, and is shown whole; the summary follows on its own line.
        MaskView v;
        v.resize(520, 800);
        v.setMode(MaskView::Mode::Training);
        v.setTrainingExample(24, 4, {3, 10, 17});
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        auto* legend = v.findChild<QLabel*>("legendLabel");
        auto* summary = v.findChild<QLabel*>("summaryLabel");
        QVERIFY(legend && summary);
        for (bool diff : {false, true}) {
            v.setDiffEnabled(diff);
            QCoreApplication::processEvents();
            const QString text = legend->text();
            const QStringList entries = diff ? QStringList{"only&nbsp;A&nbsp;sees", "only&nbsp;B&nbsp;sees", "both&nbsp;see", "neither"}
                                             : QStringList{"may&nbsp;attend", "masked"};
            for (const QString& entry : entries) QVERIFY2(text.contains(entry), qPrintable(text));
            QVERIFY(text.contains("\u21b5&nbsp;newline"));
            QVERIFY2(legend->width() >= v.width() - 40, qPrintable(QString("legend %1 px of %2").arg(legend->width()).arg(v.width())));
            QVERIFY(legend->heightForWidth(legend->width()) <= legend->height());
            QVERIFY(summary->geometry().top() >= legend->geometry().bottom());
            QVERIFY(summary->heightForWidth(summary->width()) <= summary->height());
        }
    }

    void invalidAnchorsShowError() {
        MaskView v;
        v.setMode(MaskView::Mode::Training);
        v.setTrainingExample(6, 3, {1, 4});
        auto* edit = v.findChild<QLineEdit*>("anchorsEdit");
        auto* label = v.findChild<QLabel*>("errorLabel");
        QVERIFY(edit && label);
        edit->setText("1, 9");
        QVERIFY2(v.errorText().contains("anchor 9"), qPrintable(v.errorText()));
        QVERIFY(label->isVisibleTo(&v));
        QCOMPARE(label->text(), v.errorText());
        QCOMPARE(v.matrix().rows, std::int64_t(0));
        QCOMPARE(v.colorMap()->data()->keySize(), 0);
        edit->clear();
        QTest::keyClicks(edit, "2, zz");
        QVERIFY2(v.errorText().contains("'zz'"), qPrintable(v.errorText()));
        edit->setText("2,5");
        QVERIFY(v.errorText().isEmpty());
        QVERIFY(!label->isVisibleTo(&v));
        QCOMPARE(v.matrix().rows, std::int64_t(6));
        // Exporting an errored view does not crash either.
        edit->setText("-3");
        QTemporaryDir tmp;
        QString err;
        v.exportAll(tmp.path(), &err);
    }

    void maskExport() {
        MaskView v;
        v.setMode(MaskView::Mode::Training);
        v.setTrainingExample(6, 3, {1, 4});
        QCOMPARE(v.exportName(), QString("mask"));
        QTemporaryDir tmp;
        QString err;
        const QStringList written = v.exportAll(tmp.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        checkExports(written, tmp.path(), "mask");
        const QList<QByteArray> lines = readAll(tmp.path() + "/mask.csv").split('\n');
        QVERIFY(lines[0].startsWith("query,ctx 0,ctx 1"));
        QCOMPARE(lines[1].trimmed(), QByteArray("b0+0,1,0,0,0,0,0,1,1,1,0,0,0"));
        QCOMPARE(lines[4].trimmed(), QByteArray("b1+0,1,1,1,1,0,0,0,0,0,1,1,1"));
    }

    void attentionCells() {
        AttentionView v;
        QVERIFY(!v.hasAttention());
        QCOMPARE(v.exportName(), QString("drafter_attention"));
        const auto a = makeAttention();
        v.setAttention(a, {"A", "B", "C", "D", "[M]"});
        QVERIFY(v.hasAttention());
        v.setLayer(1);
        v.setHead(0);
        auto* d = v.colorMap()->data();
        QCOMPARE(d->keySize(), 5);
        QCOMPARE(d->valueSize(), 3);
        for (int q = 0; q < 3; ++q)
            for (int k = 0; k < 5; ++k) QCOMPARE(float(d->cell(k, q)), a.at(1, 0, q, k));
        v.setHead(1);
        QCOMPARE(float(d->cell(4, 2)), a.at(1, 1, 2, 4));
        v.setAverageHeads(true);
        for (int q = 0; q < 3; ++q)
            for (int k = 0; k < 5; ++k)
                QVERIFY(qAbs(d->cell(k, q) - double(1000 + 50 + q * 10 + k) / 10000.0) < 1e-6);
        v.setAverageHeads(false);
        v.setLayer(0);
        QCOMPARE(float(d->cell(2, 1)), a.at(0, 1, 1, 2));
        // Data range is 0..max of the shown matrix.
        QVERIFY(qAbs(v.colorMap()->dataRange().upper - double(a.at(0, 1, 2, 4))) < 1e-6);

        QCOMPARE(v.keyTickLabels(), (QStringList{"0 'A'", "1 'B'", "b+0 @2 'C'", "b+1 @3 'D'", "b+2 @4 '[M]'"}));
        QCOMPARE(v.queryTickLabels(), (QStringList{"b+0 @2 'C'", "b+1 @3 'D'", "b+2 @4 '[M]'"}));
        QCOMPARE(tickAt(v.plot()->yAxis, 1), QString("b+1 @3 'D'"));

        // Layer kept when the next step has the same shape; clear empties the plot.
        v.setAttention(a, {});
        QCOMPARE(v.layer(), 0);
        QCOMPARE(v.keyTickLabels()[0], QString("0"));
        v.clear();
        QVERIFY(!v.hasAttention());
        QCOMPARE(v.colorMap()->data()->keySize(), 0);
    }

    void attentionHeadsOverview() {
        AttentionView v;
        AttentionHeadsOverview* o = v.headsOverview();
        QVERIFY(o);
        QCOMPARE(o->exportName(), QString("drafter_attention_heads"));
        QCOMPARE(o->layers(), 0);
        QVERIFY(!o->message().isEmpty());
        QVERIFY(!o->isVisibleTo(&v));
        v.setShowAllHeads(true);
        QVERIFY(o->isVisibleTo(&v));
        const auto a = makeAttention();
        v.setAttention(a, {"A", "B", "C", "D", "[M]"});
        // layers x heads cells, each holding exactly that head's weights.
        QCOMPARE(o->layers(), 2);
        QCOMPARE(o->heads(), 2);
        QVERIFY(o->message().isEmpty());
        for (int l = 0; l < 2; ++l)
            for (int h = 0; h < 2; ++h) {
                const auto w = o->cellWeights(l, h);
                QCOMPARE(w.size(), std::size_t(15));
                for (int q = 0; q < 3; ++q)
                    for (int k = 0; k < 5; ++k) QCOMPARE(w[std::size_t(q * 5 + k)], a.at(l, h, q, k));
            }
        QCOMPARE(o->cellWeights(1, 1)[7], float(1000 + 100 + 10 + 2) / 10000.0f);  // by hand: l1 h1 q1 k2
        QVERIFY(o->cellWeights(2, 0).empty());
        // The drawn thumbnail: its largest weight (q2, k4) is the darkest colour, a zero weight white.
        o->resize(400, 300);
        const QImage img = o->grab().toImage();
        const QRect c00 = o->cellRect(0, 0);
        QVERIFY(!c00.isNull() && c00.width() > 20 && c00.height() > 20);
        QCPColorGradient ramp = attentionWeightGradient();
        const QColor darkest = QColor::fromRgb(ramp.color(1.0, QCPRange(0, 1)));
        QVERIFY(darkest.lightness() < 40);
        QCOMPARE(QColor(img.pixel(c00.right() - 2, c00.bottom() - 2)), darkest);
        QCOMPARE(QColor(img.pixel(c00.left() + 2, c00.top() + 2)), QColor(255, 255, 255));
        QVERIFY(!o->cellRect(0, 1).intersects(c00));
        QVERIFY(o->cellRect(1, 0).top() > c00.bottom());

        // The main view's head is framed; clicking a thumbnail shows that layer and head.
        v.setLayer(0);
        v.setHead(1);
        QCOMPARE(o->selectedLayer(), 0);
        QCOMPARE(o->selectedHead(), 1);
        v.setAverageHeads(true);
        QCOMPARE(o->selectedLayer(), -1);
        QSignalSpy clicked(o, &AttentionHeadsOverview::cellClicked);
        QTest::mouseClick(o, Qt::LeftButton, {}, o->cellRect(1, 0).center());
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.at(0).at(0).toInt(), 1);
        QCOMPARE(clicked.at(0).at(1).toInt(), 0);
        QCOMPARE(v.layer(), 1);
        QCOMPARE(v.head(), 0);
        QVERIFY(!v.averageHeads());
        QCOMPARE(o->selectedLayer(), 1);
        QCOMPARE(o->selectedHead(), 0);
        QCOMPARE(v.shownWeights(), o->cellWeights(1, 0));
        QTest::mouseClick(o, Qt::LeftButton, {}, QPoint(2, 2));  // the label margin: no cell
        QCOMPARE(clicked.count(), 1);

        // Export through exportPainted: png, svg, pdf.
        QTemporaryDir tmp;
        QString err;
        const QStringList written = o->exportAll(tmp.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(written.size(), 3);
        QVERIFY(readAll(tmp.path() + "/drafter_attention_heads.png").startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)));
        QVERIFY(readAll(tmp.path() + "/drafter_attention_heads.svg").contains("<svg"));
        QVERIFY(readAll(tmp.path() + "/drafter_attention_heads.pdf").startsWith("%PDF"));

        // Malformed attention: a message, no cells, no crash (also on export).
        auto bad = a;
        bad.weights.pop_back();
        o->setAttention(bad);
        QCOMPARE(o->layers(), 0);
        QVERIFY2(o->message().contains("malformed"), qPrintable(o->message()));
        QVERIFY(o->cellRect(0, 0).isNull());
        QCOMPARE(o->exportAll(tmp.path(), &err).size(), 3);
        v.clear();
        QCOMPARE(v.headsOverview()->layers(), 0);
    }

    void attentionShadesTheCellsTheLayerCannotSee() {
        // drafter-swa: layer 0 sliding 24 causal, layer 1 full bidirectional (DFLASH.md section 9).
        const auto layout = loadDrafterConfig(testsupport::drafterDir("drafter-swa")).layers;
        QCOMPARE(layout.size(), std::size_t(2));
        QCOMPARE(layout[0], (LayerAttention{true, 24}));
        QCOMPARE(layout[1], LayerAttention{});
        // A step whose block starts at 30: queries at 30..45, keys 0..29 (context) + 30..45.
        // Weight 0 on the layer-0 cells that are masked by hand (below), and on key 29 (visible).
        const auto maskedByHand = [](int q, int k) { return k < 7 + q || k > 30 + q; };
        const auto a = stepAttention(3, 30, 16, [&](int, int h, int q, int k) {
            return maskedByHand(q, k) || k == 29 ? 0.0f : 0.01f * float(1 + (k + h) % 5);
        });
        AttentionView v;
        v.setAttention(a, {}, layout);
        v.setLayer(0);
        v.setHead(1);
        QCOMPARE(v.shownLayerAttention(), layout[0]);
        // The query at p = 30 + q sees keys p-23..p (window 24, causal): keys 7+q..30+q.
        const auto& m = v.maskedCells();
        QCOMPARE(m.size(), std::size_t(16 * 46));
        int masked = 0;
        for (int q = 0; q < 16; ++q)
            for (int k = 0; k < 46; ++k) {
                QCOMPARE(int(m[std::size_t(q * 46 + k)]), maskedByHand(q, k) ? 1 : 0);
                masked += m[std::size_t(q * 46 + k)];
            }
        QCOMPARE(masked, 16 * (46 - 24));
        QCOMPARE(int(m[6]), 1);             // q0 (position 30) -> key 6: 24 positions back
        QCOMPARE(int(m[7]), 0);             // q0 -> key 7: 23 back, inside the window
        QCOMPARE(int(m[30]), 0);            // q0 -> itself (the anchor)
        QCOMPARE(int(m[31]), 1);            // q0 -> block row 1: causal
        QCOMPARE(int(m[15 * 46 + 21]), 1);  // q15 (position 45) -> key 21
        QCOMPARE(int(m[15 * 46 + 22]), 0);
        QVERIFY(v.infoText().contains("layer 0 (sliding 24 causal)"));
        QVERIFY(v.infoText().contains("the 352 cells"));
        // Averaging over heads keeps the layer's mask; layer 1 (full bidirectional) masks nothing.
        v.setAverageHeads(true);
        QCOMPARE(v.maskedCells(), m);
        v.setAverageHeads(false);
        v.setLayer(1);
        QCOMPARE(v.maskedCells(), std::vector<std::uint8_t>(16 * 46, 0));
        QVERIFY(v.infoText().contains("layer 1 (full bidirectional)"));
        // The base layout (no layout given) masks nothing either.
        v.setAttention(a, {});
        v.setLayer(0);
        QCOMPARE(v.maskedCells(), std::vector<std::uint8_t>(16 * 46, 0));

        // Exported figures carry the shading: its fill colour is in the SVG, and the PNG holds
        // a large area of white under the translucent grey fill (186, 186, 186); the same
        // export without the layout has neither.
        QTemporaryDir tmp;
        QString err;
        checkExports(v.exportAll(tmp.path() + "/base", &err), tmp.path() + "/base", "drafter_attention");
        v.setAttention(a, {}, layout);
        checkExports(v.exportAll(tmp.path() + "/shaded", &err), tmp.path() + "/shaded", "drafter_attention");
        QVERIFY(readAll(tmp.path() + "/shaded/drafter_attention.svg").contains("#606060"));
        QVERIFY(!readAll(tmp.path() + "/base/drafter_attention.svg").contains("#606060"));
        const auto shadePixels = [](const QString& path) {
            const QImage img(path);
            int n = 0;
            for (int y = 0; y < img.height(); ++y)
                for (int x = 0; x < img.width(); ++x) {
                    const QColor c(img.pixel(x, y));
                    n += c.red() == c.green() && c.green() == c.blue() && qAbs(c.red() - 186) <= 2;
                }
            return n;
        };
        const int shaded = shadePixels(tmp.path() + "/shaded/drafter_attention.png");
        const int base = shadePixels(tmp.path() + "/base/drafter_attention.png");
        QVERIFY2(shaded > base + 20000, qPrintable(QString("shade pixels %1 vs %2 unshaded").arg(shaded).arg(base)));

        // On screen: a masked zero-weight cell is shaded, a visible zero-weight cell stays white.
        v.resize(900, 700);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.plot()->replot();
        const QImage img = v.plot()->toPixmap().toImage();
        const auto pixel = [&](int q, int k) {
            return QColor(img.pixel(int(v.plot()->xAxis->coordToPixel(k)), int(v.plot()->yAxis->coordToPixel(q))));
        };
        QCOMPARE(pixel(0, 29), QColor(255, 255, 255));
        QVERIFY2(pixel(0, 3).lightness() < 200, qPrintable(pixel(0, 3).name()));   // outside the window
        QVERIFY2(pixel(2, 40).lightness() < 200, qPrintable(pixel(2, 40).name()));  // block row 8: causal
    }

    void attentionBadInputAndExport() {
        AttentionView v;
        auto bad = makeAttention();
        bad.weights.pop_back();
        v.setAttention(bad, {});
        QVERIFY2(v.errorText().contains("expected 60 weights"), qPrintable(v.errorText()));
        QVERIFY(v.findChild<QLabel*>("errorLabel")->isVisibleTo(&v));
        QCOMPARE(v.colorMap()->data()->keySize(), 0);

        v.setAttention(makeAttention(), {});
        QVERIFY(v.errorText().isEmpty());
        QTemporaryDir tmp;
        QString err;
        const QStringList written = v.exportAll(tmp.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        checkExports(written, tmp.path(), "drafter_attention");
        const QList<QByteArray> lines = readAll(tmp.path() + "/drafter_attention.csv").split('\n');
        QCOMPARE(lines[0].trimmed(), QByteArray("query,key 0,key 1,key 2,key 3,key 4"));
        QVERIFY(lines[1].startsWith("b+0 @2,0,"));
    }
};

QTEST_MAIN(TestMaskView)
#include "tst_mask_view.moc"
