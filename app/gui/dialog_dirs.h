#pragma once
// File dialogs open where the user last was: one remembered directory per kind of file
// (models, prompt sets, results files, exports, checkpoints), kept in QSettings.

#include <QString>

namespace draftscope {

/// The directory a file dialog for `kind` (e.g. "results") should open in: the directory
/// last remembered for it (QSettings key "dialogs/<kind>") if it still exists, else `fallback`.
QString lastDialogDir(const QString& kind, const QString& fallback = {});

/// Remembers where `path` lies for dialogs of `kind`: a directory itself, a file its folder.
/// An empty path is ignored.
void rememberDialogPath(const QString& kind, const QString& path);

/// `name` (e.g. "run.json") inside lastDialogDir(kind): the default of a save dialog.
QString lastDialogFile(const QString& kind, const QString& name);

}  // namespace draftscope
