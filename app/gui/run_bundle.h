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
    /// What figure titles call the prompt: promptLabelOf() its id (a results file's prompt
    /// id, the chosen prompt-set entry of a live run) or its first line.
    QString promptLabel;
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

/// The drafter's directory name (the last path component).
inline QString drafterNameOf(const RunBundle& b) {
    return QString::fromStdString(b.drafter.directory).section(QLatin1Char('/'), -1, -1, QString::SectionSkipEmpty);
}

/// The name a prompt goes by in figure titles: `id` when it has one (a results file's
/// prompt id, the prompt-set entry a live run was started from, e.g. a bundled sample
/// prompt); else its first non-empty line in double quotes, elided to 40 characters
/// ("…" last); a token-id prompt without an id: "ids[n]".
inline QString promptLabelOf(const PromptSpec& p, const QString& id) {
    if (!id.isEmpty()) return id;
    if (p.kind == PromptSpec::Kind::Ids) return QStringLiteral("ids[%1]").arg(p.ids.size());
    QString line = QString::fromStdString(p.text).trimmed().section(QLatin1Char('\n'), 0, 0).trimmed();
    if (line.size() > 40) line = line.left(39) + QChar(0x2026);
    return QLatin1Char('"') + line + QLatin1Char('"');
}

/// The title line of an exported figure: "prompt <promptLabel>, drafter <letter>:
/// <drafter directory name>" (no letter: "drafter <name>").
inline QString figureTitleOf(const RunBundle& b, const QString& letter) {
    const QString prompt = b.promptLabel.isEmpty() ? promptLabelOf(b.prompt, {}) : b.promptLabel;
    return QStringLiteral("prompt %1, drafter %2%3").arg(prompt, letter.isEmpty() ? QString() : letter + ": ", drafterNameOf(b));
}

}  // namespace draftscope

Q_DECLARE_METATYPE(draftscope::RunBundlePtr)
Q_DECLARE_METATYPE(draftscope::ModelSummary)
Q_DECLARE_METATYPE(draftscope::DrafterAttention)
