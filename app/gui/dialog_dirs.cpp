#include "gui/dialog_dirs.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace draftscope {

QString lastDialogDir(const QString& kind, const QString& fallback) {
    const QString dir = QSettings().value("dialogs/" + kind).toString();
    return !dir.isEmpty() && QFileInfo(dir).isDir() ? dir : fallback;
}

void rememberDialogPath(const QString& kind, const QString& path) {
    if (path.isEmpty()) return;
    const QFileInfo fi(path);
    QSettings().setValue("dialogs/" + kind, fi.isDir() ? fi.absoluteFilePath() : fi.absolutePath());
}

QString lastDialogFile(const QString& kind, const QString& name) {
    const QString dir = lastDialogDir(kind);
    return dir.isEmpty() ? name : QDir(dir).filePath(name);
}

}  // namespace draftscope
