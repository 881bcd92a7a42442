#pragma once
// The window's scripted flows without a user: --demo's and --export-figures' "load, run,
// wait" and the two exports (a live run on given models, a recorded prompt of a results
// file). main.cpp parses the arguments and calls these.

#include "gui/analysis_controller.h"

#include <QString>

#include <optional>

namespace draftscope {

class MainWindow;

class HeadlessRun {
public:
    explicit HeadlessRun(MainWindow& window) : window_(window) {}

    /// Loads `models`, runs the prompt panel's request, then waits for the drafter attention
    /// of step 0 (showing a finished run selects it); blocks in a local event loop (the GUI
    /// stays live). Returns false and sets *error ("<failure kind>: <message>") if a stage
    /// failed or the analysis was cancelled; hidden-state and DDTree failures are only logged.
    bool loadAndRun(const ModelRequest& models, QString* error);

    /// --export-figures on models: loadAndRun(), then every view to `dir`. Prints the written
    /// paths and a summary on stdout, errors on stderr; returns the exit code (0 or 1).
    int exportLive(const ModelRequest& models, const QString& dir);

    /// --export-figures on a results file: opens `resultsPath`, shows drafter `drafter`
    /// (0-based) and the prompt with id `promptId` (nullopt: the panel's default, the worst
    /// by tau), writes every view and the cross-prompt plots to `dir`. Returns the exit code:
    /// 0, 1 (unreadable file, export error) or 2 (no such drafter or prompt).
    int exportRecorded(const QString& resultsPath, const QString& dir, const std::optional<QString>& promptId, int drafter);

private:
    /// Writes every view's figures and tables to `dir`, prints what it wrote; the exit code.
    int writeFigures(const QString& dir);

    MainWindow& window_;
};

}  // namespace draftscope
