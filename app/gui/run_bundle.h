#pragma once
// What one analysis run hands from the worker thread to the GUI: plain structs only.

#include "draftscope/engine.h"
#include "draftscope/run_types.h"

#include <QMetaType>
#include <QString>
#include <QVector>

#include <map>
#include <memory>

namespace draftscope {

/// A finished analysis: the DFlash (chain) run, the DDTree runs (one per requested budget,
/// in budget order), the hidden-state statistics of the prompt, the display piece of every
/// output token, and the models it ran with.
struct RunBundle {
    quint64 requestId = 0;
    PromptSpec prompt;
    RunResult run;
    std::vector<TreeRunResult> treeRuns;
    HiddenStateStats hiddenStats;
    std::vector<QString> pieces;  ///< per output id (prompt + generated)
    /// Display piece of every token id the runs mention (outputs, drafts, target tokens,
    /// top-k; every DDTree node token, target choice and bonus token).
    std::map<std::int64_t, QString> tokenPieces;
    QString pieceOf(std::int64_t id) const {
        const auto it = tokenPieces.find(id);
        return it == tokenPieces.end() ? QStringLiteral("#%1").arg(id) : it->second;
    }
    ModelSummary target;
    ModelSummary drafter;
};

using RunBundlePtr = std::shared_ptr<const RunBundle>;

}  // namespace draftscope

Q_DECLARE_METATYPE(draftscope::RunBundlePtr)
Q_DECLARE_METATYPE(draftscope::ModelSummary)
Q_DECLARE_METATYPE(draftscope::DrafterAttention)
