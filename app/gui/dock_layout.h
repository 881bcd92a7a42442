#pragma once
// The window's dock layout: the first-start layout to go back to, one view maximised at a
// time (and restored), and which view the user worked in last.

#include <QByteArray>
#include <QObject>
#include <QPointer>

class QMainWindow;
class QWidget;

namespace draftscope {

class DockLayout : public QObject {
    Q_OBJECT
public:
    /// Follows the keyboard focus in `window`'s docks and central widget from now on.
    explicit DockLayout(QMainWindow* window);

    /// Remembers the window's present layout as the one restoreDefault() goes back to.
    void captureDefault();
    /// Leaves a maximised view and restores the remembered first-start layout.
    void restoreDefault();
    /// `view` (a dock, or the central widget; null = the one with the focus, else the last
    /// one used) fills the window; called again, the layout before comes back.
    void toggleMaximised(QWidget* view = nullptr);
    bool isMaximised() const { return !maximised_.isEmpty(); }
    /// The dock (or the central widget) with the keyboard focus, else the last one used.
    QWidget* currentView() const;

private:
    QMainWindow* window_;
    QByteArray default_;    ///< saveState() of the first-start layout
    QByteArray maximised_;  ///< layout to restore while a view is maximised (empty: none)
    QPointer<QWidget> lastView_;
};

}  // namespace draftscope
