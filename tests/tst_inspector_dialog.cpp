// The checkpoint inspector window: tables filled from inspectCheckpoint / diffCheckpoints
// in the background, errors shown with the file name.

#include "draftscope/inspector.h"
#include "gui/inspector_dialog.h"
#include "test_support.h"

#include <QSignalSpy>
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
        }
        QVERIFY(d.configTable()->rowCount() > 10);
        QVERIFY(d.checkText().contains("Every tensor"));
        d.diffAgainst(QString::fromStdString(drafterDir("drafter-label-shift")));
        QVERIFY(done.wait(60000));
        QCOMPARE(d.diffTable()->rowCount(), static_cast<int>(expected.tensors.size()));
        const double cosine = d.diffTable()->item(0, 7)->data(Qt::UserRole).toDouble();
        QVERIFY(cosine < 1.0 && cosine > -1.0);
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
