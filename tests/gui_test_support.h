#pragma once
// Waiting on signals that the analysis worker thread emits, and starting the GUI binary
// headless, for the GUI suites.
//
// QSignalSpy records a signal in the emitting thread (a direct connection). The window's own
// slots for the same signal are queued to the GUI thread: when the spy has counted the signal,
// the window may not have handled it yet. The window connects before any spy does, so its
// queued events are already posted by then; these helpers deliver them before returning, so a
// test that checks the window right after a wait sees the state the window is in once it has
// handled the signal.

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSignalSpy>
#include <QTest>

namespace testsupport {

/// Delivers the events posted to this thread so far (queued slot calls included).
inline void deliverQueuedSlots() {
    QCoreApplication::sendPostedEvents();
    QCoreApplication::processEvents();
}

/// Waits up to `timeoutMs` for one more emission of `spy`'s signal, then delivers the queued
/// slots. Returns false on timeout.
[[nodiscard]] inline bool waitForSignal(QSignalSpy& spy, int timeoutMs) {
    const bool ok = spy.wait(timeoutMs);
    deliverQueuedSlots();
    return ok;
}

/// Waits up to `timeoutMs` until `spy` holds at least `count` emissions, then delivers the
/// queued slots. Returns false on timeout.
[[nodiscard]] inline bool waitForCount(QSignalSpy& spy, int count, int timeoutMs) {
    const QDeadlineTimer deadline(timeoutMs);
    while (spy.count() < count && !deadline.hasExpired()) QTest::qWait(10);
    deliverQueuedSlots();
    return spy.count() >= count;
}

/// Starts `program` (the draftscope binary) with `arguments` on Qt's offscreen platform, as a
/// headless run on a server would; the caller waits for it.
inline void startOffscreen(QProcess& process, const QString& program, const QStringList& arguments) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    process.setProcessEnvironment(env);
    process.start(program, arguments);
}

}  // namespace testsupport
