#pragma once
// Interface of every view the main window can export in one go (File > Export all,
// `draftscope --export-figures DIR`).

#include <QString>
#include <QStringList>

namespace draftscope {

/// A view that writes its figure (PNG, SVG, PDF) and, if it shows a table, the table (CSV,
/// JSON) into a directory.
class ExportableView {
public:
    virtual ~ExportableView() = default;
    /// Stable file base name, e.g. "block_agreement".
    virtual QString exportName() const = 0;
    /// Writes `<dir>/<exportName()>.{png,svg,pdf}` (plus .csv/.json for tables). Returns the
    /// written paths; on failure returns what was written and sets *error.
    virtual QStringList exportAll(const QString& dir, QString* error) = 0;

    /// A line naming what the figures belong to (e.g. "prompt fibonacci, drafter A:
    /// demo-drafter"), drawn above every figure exportAll() writes; empty = none. Tables
    /// are not changed.
    void setFigureTitle(const QString& title) { figureTitle_ = title; }
    const QString& figureTitle() const { return figureTitle_; }

private:
    QString figureTitle_;
};

}  // namespace draftscope
