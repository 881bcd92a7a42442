#pragma once
// What the Models panel and the log say about a finished load (ModelsLoaded).

#include "gui/analysis_controller.h"

#include <QString>
#include <QStringList>

namespace draftscope {

/// The Models panel's status text: "Target: <arch>, N layers (<layer types>), hidden H, vocab V"
/// and one line per drafter (A, and B "(compare)" when loaded): layers, layout, block size,
/// tapped target layers, mask token; then the placement (several devices) and how quantised
/// target weights are held (ModelSummary::quantization).
QString describeLoadedModels(const ModelsLoaded& loaded);

/// The log lines of a load, in order: what loaded, each drafter's warnings, and every
/// checkpoint's unexpected or ignored tensors.
QStringList loadLogLines(const ModelsLoaded& loaded);

}  // namespace draftscope
