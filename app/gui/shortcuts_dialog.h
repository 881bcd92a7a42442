#pragma once
// Help > Keyboard shortcuts: every menu action that has a shortcut (read from the menu bar,
// so the list cannot drift from what the keys do) and the mouse and keyboard gestures of the
// views, in one table that exports like every other table.

#include <QDialog>

class QMenuBar;
class QStandardItemModel;

namespace draftscope {

/// Rows (menu path or view, what it does, keys): one per action of `bar` with a shortcut,
/// in menu order ("File > Open Results...", "Ctrl+O"), then the views' gestures (wheel
/// zoom, drag, double-clicks, clicks that select). Parented to `parent`.
QStandardItemModel* shortcutsModel(const QMenuBar* bar, QObject* parent);

/// A non-modal dialog showing shortcutsModel(bar) (CSV/JSON from its context menu).
class ShortcutsDialog : public QDialog {
    Q_OBJECT
public:
    ShortcutsDialog(const QMenuBar* bar, QWidget* parent = nullptr);
    QStandardItemModel* model() const { return model_; }

private:
    QStandardItemModel* model_;
};

}  // namespace draftscope
