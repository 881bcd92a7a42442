#include "gui/shortcuts_dialog.h"

#include "figure_export.h"

#include <QAction>
#include <QHeaderView>
#include <QMenu>
#include <QMenuBar>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

namespace draftscope {

namespace {
QString plainText(QString text) { return text.remove(QLatin1Char('&')); }

void addMenu(QStandardItemModel* m, const QMenu* menu, const QString& path) {
    for (QAction* a : menu->actions()) {
        if (a->isSeparator()) continue;
        const QString name = path + QStringLiteral(" > ") + plainText(a->text());
        if (a->menu()) {
            addMenu(m, a->menu(), name);
            continue;
        }
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
        if (keys.isEmpty()) continue;
        m->appendRow({new QStandardItem(name), new QStandardItem(a->toolTip() == plainText(a->text()) ? QString() : a->toolTip()),
                      new QStandardItem(keys.join(QStringLiteral(", ")))});
    }
}
}  // namespace

QStandardItemModel* shortcutsModel(const QMenuBar* bar, QObject* parent) {
    auto* m = new QStandardItemModel(parent);
    m->setHorizontalHeaderLabels({QObject::tr("where"), QObject::tr("what it does"), QObject::tr("keys")});
    if (bar)
        for (QAction* a : bar->actions())
            if (a->menu()) addMenu(m, a->menu(), plainText(a->text()));
    const struct {
        const char* where;
        const char* what;
        const char* keys;
    } gestures[] = {
        {"Block agreement", "zoom the cells", "Ctrl+wheel, the - + buttons"},
        {"Block agreement", "select a step everywhere", "click a cell or a step's row header"},
        {"Masks, Attention, plots", "zoom / pan / reset", "wheel / drag / double-click"},
        {"DDTree", "zoom / pan; fold or unfold a subtree", "wheel / drag; double-click a node off the path"},
        {"All prompts", "open a prompt", "click its point in the per-prompt tau plot"},
        {"Results", "show a prompt", "click its row; type in the search field to filter"},
        {"Diagnose", "open a finding's view", "double-click the finding, or Show"},
        {"Training run", "open a checkpoint as drafter A (B)", "click it (Shift+click)"},
        {"Any view", "maximise it / restore", "double-click its title bar"},
        {"Any figure or table", "export PNG/SVG/PDF, CSV/JSON", "right-click"},
    };
    for (const auto& g : gestures)
        m->appendRow({new QStandardItem(QObject::tr(g.where)), new QStandardItem(QObject::tr(g.what)),
                      new QStandardItem(QObject::tr(g.keys))});
    return m;
}

ShortcutsDialog::ShortcutsDialog(const QMenuBar* bar, QWidget* parent)
    : QDialog(parent), model_(shortcutsModel(bar, this)) {
    setObjectName("shortcutsDialog");
    setWindowTitle(tr("Keyboard shortcuts"));
    auto* view = new QTableView(this);
    view->setModel(model_);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->verticalHeader()->setVisible(false);
    view->horizontalHeader()->setStretchLastSection(true);
    view->setWordWrap(true);
    view->resizeColumnsToContents();
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(view);
    installExportMenu(view, QStringLiteral("keyboard_shortcuts"),
                      [view](const QString& p, QString* e) { return exportWidget(view, p, e); }, model_);
    resize(760, 480);
}

}  // namespace draftscope
