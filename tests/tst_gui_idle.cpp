// The window goes idle after a run: the state of a new user's first `draftscope --demo`
// (fresh settings, the default dock layout at 1600x1000, the DDTree tab never shown, a full
// run with the default DDTree budgets) must leave an event loop that is quiet, not one that
// resizes and refits a view without end. Also: the tree view fits on its first show and
// refits only when its size really changes.

#include "acceptance_tree_view.h"
#include "gui/headless_run.h"
#include "gui/main_window.h"
#include "gui/prompt_panel.h"
#include "test_support.h"

#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QtTest>

#include <map>

using namespace draftscope;
using namespace testsupport;

namespace {

/// Counts the layout-related events (resize, queued calls, layout requests, show/hide,
/// move) every object of the application receives while installed. A receiver past
/// `runawayCap` such events is a loop: its further layout events are swallowed so that the
/// loop ends and the test can fail with a message instead of hanging.
class EventCounter : public QObject {
public:
    explicit EventCounter(int runawayCap = 5000, QObject* parent = nullptr) : QObject(parent), cap_(runawayCap) {
        qApp->installEventFilter(this);
    }
    ~EventCounter() override { qApp->removeEventFilter(this); }
    void reset() {
        counts_.clear();
        perReceiver_.clear();
    }
    int total() const {
        int n = 0;
        for (const auto& [type, count] : counts_) n += count;
        return n;
    }
    /// "Class(objectName)" of the receivers that went past the cap since construction.
    QStringList runaways() const { return runaways_; }
    QString summary() const {
        QStringList parts;
        for (const auto& [type, count] : counts_) parts << QStringLiteral("type %1: %2").arg(type).arg(count);
        return parts.join(", ");
    }

protected:
    bool eventFilter(QObject* receiver, QEvent* e) override {
        switch (e->type()) {
        case QEvent::Resize:
        case QEvent::MetaCall:
        case QEvent::LayoutRequest:
        case QEvent::Show:
        case QEvent::Hide:
        case QEvent::Move: {
            ++counts_[static_cast<int>(e->type())];
            int& mine = perReceiver_[receiver];
            if (++mine == cap_)
                runaways_ << QStringLiteral("%1(%2)").arg(receiver->metaObject()->className(), receiver->objectName());
            return mine >= cap_;
        }
        default:
            return false;
        }
    }

private:
    int cap_;
    std::map<int, int> counts_;
    std::map<QObject*, int> perReceiver_;
    QStringList runaways_;
};

/// Layout events seen in `ms` milliseconds of event loop.
int layoutEventsIn(EventCounter& counter, int ms, QString* summary) {
    counter.reset();
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    *summary = counter.summary();
    return counter.total();
}

ModelRequest demoModels() {
    ModelRequest r;
    r.targetDir = QString::fromStdString(demoTarget());
    r.drafterDir = QString::fromStdString(demoDrafter());
    return r;
}

/// True when the view's visible region holds the whole scene item rectangle (a fit) or the
/// zoom sits at the tree view's readable minimum (large trees scroll instead).
bool fitsOrAtMinimum(const AcceptanceTreeView* tv) {
    const QRectF items = tv->scene()->itemsBoundingRect();
    const QRectF visible = tv->graphicsView()->mapToScene(tv->graphicsView()->viewport()->rect()).boundingRect();
    return visible.adjusted(-1, -1, 1, 1).contains(items) || tv->graphicsView()->zoom() <= 0.6 + 1e-9;
}

}  // namespace

class TestGuiIdle : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("draftscope-tests");
        QCoreApplication::setApplicationName("tst_gui_idle");
    }

    void idleAfterARunWithTheTreeTabNeverShown() {
        EventCounter guard;
        MainWindow w(/*showErrorDialogs=*/false);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto* treeDock = w.findChild<QDockWidget*>("ddtreeDock");
        QVERIFY(treeDock);
        QTest::qWait(200);
        // A background tab, as on first start: Qt parks it out of sight (still "visible").
        QVERIFY(treeDock->visibleRegion().isEmpty());
        w.promptPanel()->setPromptText(QString::fromStdString(goldens()["prompts"]["0"].get<std::string>()));
        w.promptPanel()->setMaxNewTokens(96);  // the demo's default; the default budgets 4, 8, 16, 32
        QString err;
        QVERIFY2(HeadlessRun(w).loadAndRun(demoModels(), &err), qPrintable(err));
        QCOMPARE(w.lastResult()->treeRuns.size(), std::size_t(4));
        QVERIFY(treeDock->visibleRegion().isEmpty());
        QTest::qWait(300);  // queued work of the result settles
        QVERIFY2(guard.runaways().isEmpty(), qPrintable("layout loop in " + guard.runaways().join(", ")));
        QString summary;
        const int events = layoutEventsIn(guard, 1000, &summary);
        // A quiet window sees a handful (attention arriving, status bar); the refit loop
        // saw thousands per second.
        QVERIFY2(events < 50, qPrintable(QString("%1 layout events in 1 s after the run: %2").arg(events).arg(summary)));

        // Showing the tree for the first time fits it, and leaves the loop idle too.
        treeDock->raise();
        QTRY_VERIFY(!treeDock->visibleRegion().isEmpty());
        QTest::qWait(200);
        QVERIFY(fitsOrAtMinimum(w.treeView()));
        const int afterShow = layoutEventsIn(guard, 1000, &summary);
        QVERIFY2(afterShow < 50, qPrintable(QString("%1 layout events in 1 s after showing the tree: %2")
                                                .arg(afterShow).arg(summary)));
    }

    void treeRefitsOnlyOnARealSizeChange() {
        // A 32-node tree as the demo's budget 32 draws it: scroll bars come and go with the zoom.
        TreeRunResult run;
        run.budget = 32;
        TreeStep st;
        st.start = 10;
        st.tokens.push_back(100);
        st.parents.push_back(-1);
        st.depths.push_back(0);
        st.drafterProbs.push_back(1.0f);
        for (int i = 1; i <= 32; ++i) {
            st.tokens.push_back(100 + i);
            st.parents.push_back(i <= 4 ? i - 1 : (i % 4));  // a chain of 4, then bushes hanging off it
            st.depths.push_back(i <= 4 ? i : st.depths[static_cast<std::size_t>(i % 4)] + 1);
            st.drafterProbs.push_back(0.5f);
        }
        st.acceptedPath = {0, 1, 2};
        st.targetChoice.assign(st.tokens.size(), 5);
        st.targetChoice[0] = 101;
        st.targetChoice[1] = 102;
        st.targetChoice[2] = 7;
        st.bonusToken = 7;
        run.steps.push_back(st);
        EventCounter guard;
        AcceptanceTreeView tv;
        tv.setRuns({run}, {});
        QCOMPARE(tv.drawnNodeCount(), 33);
        // Sizes around the point where the scroll bars appear: none may start a loop.
        for (const QSize size : {QSize(700, 500), QSize(520, 420), QSize(900, 700), QSize(400, 300), QSize(1200, 520)}) {
            tv.resize(size);
            tv.show();
            QVERIFY(QTest::qWaitForWindowExposed(&tv));
            QTest::qWait(100);
            QVERIFY2(guard.runaways().isEmpty(), qPrintable("layout loop in " + guard.runaways().join(", ")));
            QVERIFY2(fitsOrAtMinimum(&tv), qPrintable(QString("not fitted at %1x%2").arg(size.width()).arg(size.height())));
            QString summary;
            const int events = layoutEventsIn(guard, 400, &summary);
            QVERIFY2(events < 20, qPrintable(QString("%1x%2: %3 layout events in 400 ms: %4")
                                                 .arg(size.width()).arg(size.height()).arg(events).arg(summary)));
        }
        // Filled while parked outside its window, as a background dock tab is (visible, but
        // moved out of sight with a stale size): the state of the trial's freeze.
        {
            QWidget window;
            window.resize(1600, 1000);
            AcceptanceTreeView parked(&window);
            parked.setGeometry(-794, -903, 294, 403);
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            parked.setRuns({run}, {});
            QTest::qWait(300);
            QVERIFY2(guard.runaways().isEmpty(), qPrintable("layout loop in " + guard.runaways().join(", ")));
            parked.setGeometry(0, 0, 700, 600);  // the tab comes to the front
            QTest::qWait(100);
            QVERIFY(fitsOrAtMinimum(&parked));
        }
        // A zoom by the user is kept on resize; Fit takes the tree back.
        const double fitted = tv.graphicsView()->zoom();
        tv.graphicsView()->scale(1.5, 1.5);
        emit tv.graphicsView()->zoomedByUser();
        tv.resize(tv.size() + QSize(50, 30));
        QTest::qWait(100);
        QCOMPARE(tv.graphicsView()->zoom(), fitted * 1.5);
        tv.fitTree();
        QVERIFY(fitsOrAtMinimum(&tv));
        // First show fits: a view built and filled while hidden fits when it appears.
        AcceptanceTreeView hidden;
        hidden.setRuns({run}, {});
        hidden.resize(800, 600);
        hidden.show();
        QVERIFY(QTest::qWaitForWindowExposed(&hidden));
        QTest::qWait(100);
        QVERIFY(fitsOrAtMinimum(&hidden));
    }
};

int main(int argc, char** argv) {
    // Fresh settings: no saved window state or layout from an earlier start.
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
    QApplication app(argc, argv);
    TestGuiIdle t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_gui_idle.moc"
