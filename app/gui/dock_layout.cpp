#include "gui/dock_layout.h"

#include <QApplication>
#include <QDockWidget>
#include <QMainWindow>

namespace draftscope {

DockLayout::DockLayout(QMainWindow* window) : QObject(window), window_(window) {
    // Remember the last view the user worked in (focus), for "Maximise current view".
    connect(qApp, &QApplication::focusChanged, this, [this](QWidget*, QWidget* now) {
        for (QWidget* w = now; w; w = w->parentWidget()) {
            if (qobject_cast<QDockWidget*>(w) || w == window_->centralWidget()) {
                lastView_ = w;
                return;
            }
        }
    });
}

void DockLayout::captureDefault() { default_ = window_->saveState(); }

void DockLayout::restoreDefault() {
    maximised_.clear();
    window_->restoreState(default_);
}

QWidget* DockLayout::currentView() const {
    for (QWidget* w = QApplication::focusWidget(); w; w = w->parentWidget()) {
        if (auto* dock = qobject_cast<QDockWidget*>(w)) return dock;
        if (w == window_->centralWidget()) return w;
    }
    return lastView_ ? lastView_.data() : window_->centralWidget();
}

void DockLayout::toggleMaximised(QWidget* view) {
    if (!maximised_.isEmpty()) {  // back to the layout before
        window_->restoreState(maximised_);
        maximised_.clear();
        return;
    }
    if (!view) view = currentView();
    maximised_ = window_->saveState();
    auto* keep = qobject_cast<QDockWidget*>(view);
    // The view keeps the window to itself: every other dock hides (a dock: the grid too, by
    // floating the dock over the whole window).
    for (auto* dock : window_->findChildren<QDockWidget*>())
        if (dock != keep && dock->isVisible()) dock->hide();
    if (keep) {
        keep->show();
        keep->setFloating(true);
        keep->setGeometry(QRect(window_->mapToGlobal(QPoint(0, 0)), window_->size()));
        keep->raise();
    }
}

}  // namespace draftscope
