// The checkpoint inspector window: tables filled from inspectCheckpoint / diffCheckpoints
// in the background, errors shown with the file name.

#include "draftscope/inspector.h"
#include "gui/inspector_dialog.h"
#include "test_support.h"

#include <QComboBox>
#include <QHeaderView>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QStandardItemModel>
#include <QtTest>

using namespace draftscope;
using namespace testsupport;

class TestInspectorDialog : public QObject {
    Q_OBJECT
private slots:
    void showsTensorsConfigAndDiff() {
        InspectorDialog d;
        QSignalSpy done(&d, &InspectorDialog::finished);
        d.inspect(QString::fromStdString(demoDrafter()));
        QVERIFY(done.wait(60000));
        QCOMPARE(done.takeFirst().at(0).toBool(), true);
        const auto expected = inspectCheckpoint(demoDrafter());
        QCOMPARE(d.tensorTable()->rowCount(), static_cast<int>(expected.tensors.size()));
        for (int r = 0; r < d.tensorTable()->rowCount(); ++r) {
            const auto name = d.tensorTable()->item(r, 0)->text().toStdString();
            const auto it = std::find_if(expected.tensors.begin(), expected.tensors.end(),
                                         [&](const TensorStats& t) { return t.name == name; });
            QVERIFY(it != expected.tensors.end());
            QCOMPARE(d.tensorTable()->item(r, 6)->data(Qt::UserRole).toDouble(), it->rms);
            // numel is an integer, written out in full.
            QCOMPARE(d.tensorTable()->item(r, 3)->text(), QString::number(qlonglong(it->numel)));
            QCOMPARE(d.tensorTable()->item(r, 3)->data(Qt::UserRole).toLongLong(), qlonglong(it->numel));
        }
        QVERIFY(d.configTable()->rowCount() > 10);
        QVERIFY(d.checkText().contains("Every tensor"));
        d.diffAgainst(QString::fromStdString(drafterDir("drafter-label-shift")));
        QVERIFY(done.wait(60000));
        QCOMPARE(d.diffTable()->rowCount(), static_cast<int>(expected.tensors.size()));
        // The diff is sorted by |A-B|/|B|, largest change first (the view's order).
        const auto* diffView = d.findChild<QTableView*>("diffView");
        QVERIFY(diffView);
        QCOMPARE(diffView->horizontalHeader()->sortIndicatorSection(), 6);
        QCOMPARE(diffView->horizontalHeader()->sortIndicatorOrder(), Qt::DescendingOrder);
        const auto expectedDiff = diffCheckpoints(demoDrafter(), drafterDir("drafter-label-shift"));
        double largest = 0;
        for (const auto& t : expectedDiff.common) largest = std::max(largest, t.relativeDiff);
        QCOMPARE(d.diffTable()->item(0, 6)->data(Qt::UserRole).toDouble(), largest);
        for (int r = 1; r < d.diffTable()->rowCount(); ++r)
            QVERIFY(d.diffTable()->item(r - 1, 6)->data(Qt::UserRole).toDouble() >=
                    d.diffTable()->item(r, 6)->data(Qt::UserRole).toDouble());
        const double cosine = d.diffTable()->item(0, 7)->data(Qt::UserRole).toDouble();
        QVERIFY(cosine < 1.0 && cosine > -1.0);
    }

    void offersTheLoadedCheckpoints() {
        InspectorDialog d;
        auto* box = d.findChild<QComboBox*>("loadedCheckpoints");
        QVERIFY(box);
        QVERIFY(box->parentWidget()->isHidden());  // nothing loaded: no row
        d.setLoadedCheckpoints({{"target", QString::fromStdString(demoTarget())},
                                {"drafter", QString::fromStdString(demoDrafter())}});
        QCOMPARE(d.loadedCheckpoints(), (QStringList{QString::fromStdString(demoTarget()), QString::fromStdString(demoDrafter())}));
        QVERIFY(!box->parentWidget()->isHidden());
        QCOMPARE(box->itemText(1), "drafter: " + QString::fromStdString(demoDrafter()));
        // Inspect the drafter from the selector.
        QSignalSpy done(&d, &InspectorDialog::finished);
        box->setCurrentIndex(1);
        QPushButton* inspect = nullptr;
        for (auto* b : box->parentWidget()->findChildren<QPushButton*>())
            if (b->text() == "Inspect") inspect = b;
        QVERIFY(inspect);
        inspect->click();
        QVERIFY(done.wait(60000));
        QCOMPARE(done.first().at(0).toBool(), true);
        QCOMPARE(d.tensorTable()->rowCount(), static_cast<int>(inspectCheckpoint(demoDrafter()).tensors.size()));
    }

    void badPathIsReported() {
        InspectorDialog d;
        QSignalSpy done(&d, &InspectorDialog::finished);
        d.inspect("/nonexistent/checkpoint");
        QVERIFY(done.wait(30000));
        const auto args = done.takeFirst();
        QCOMPARE(args.at(0).toBool(), false);
        QVERIFY(args.at(1).toString().contains("/nonexistent/checkpoint"));
    }
};

QTEST_MAIN(TestInspectorDialog)
#include "tst_inspector_dialog.moc"
