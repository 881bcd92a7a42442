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
/// output token, and the models it ran with. When two drafters are loaded, this bundle is
/// drafter A's and `comparison` holds drafter B's analysis of the same prompt.
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
    /// Drafter B's analysis of the same prompt (null when one drafter is loaded): its own
    /// run, treeRuns, hiddenStats, pieces and drafter; requestId, prompt, target and
    /// tokenPieces (which cover both runs) equal this bundle's; its `comparison` is null.
    /// Code that shows one drafter ignores it.
    std::shared_ptr<const RunBundle> comparison;
};

using RunBundlePtr = std::shared_ptr<const RunBundle>;

}  // namespace draftscope

Q_DECLARE_METATYPE(draftscope::RunBundlePtr)
Q_DECLARE_METATYPE(draftscope::ModelSummary)
Q_DECLARE_METATYPE(draftscope::DrafterAttention)
