#include "gui/loaded_models.h"

#include "draftscope/attention_layout.h"

#include <QCoreApplication>

namespace draftscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("draftscope::LoadedModels", text); }

/// "<family>: N layers (<layout>), block B, tapped layers [i, j]( (derived)), mask token M(; <parts>)".
QString describeDrafter(const ModelSummary& d) {
    QString ids;
    for (auto id : d.targetLayerIds) ids += (ids.isEmpty() ? "" : ", ") + QString::number(id);
    return tr("%7: %1 layers (%6), block %2, tapped layers [%3]%4, mask token %5%8")
        .arg(d.numLayers).arg(d.blockSize).arg(ids)
        .arg(d.targetLayerIdsDerived ? tr(" (derived)") : QString()).arg(d.maskTokenId)
        .arg(QString::fromStdString(describeLayout(d.layout)))
        .arg(QString::fromStdString(d.family.empty() ? std::string("DFlash") : d.family))
        .arg(d.familyDetail.empty() ? QString() : "; " + QString::fromStdString(d.familyDetail));
}

}  // namespace

QString describeLoadedModels(const ModelsLoaded& loaded) {
    const ModelSummary& t = loaded.target;
    // Layer types in order, run-length encoded: "3 x linear_attention, 1 x full_attention".
    QStringList runs;
    for (std::size_t i = 0; i < t.layerTypes.size();) {
        std::size_t j = i;
        while (j < t.layerTypes.size() && t.layerTypes[j] == t.layerTypes[i]) ++j;
        runs << QStringLiteral("%1 x %2").arg(j - i).arg(QString::fromStdString(t.layerTypes[i]));
        i = j;
    }
    QString text = tr("Target: %1, %2 layers (%5), hidden %3, vocab %4\nDrafter: ")
                       .arg(QString::fromStdString(t.architecture)).arg(t.numLayers).arg(t.hiddenSize)
                       .arg(t.vocabSize).arg(runs.join(", ")) +
                   describeDrafter(loaded.drafter);
    if (loaded.drafterB) text += tr("\nDrafter B (compare): ") + describeDrafter(*loaded.drafterB);
    if (t.devices.size() > 1) text += tr("\nPlacement: ") + QString::fromStdString(t.placement);
    if (!t.quantization.empty()) text += tr("\nTarget weights: ") + QString::fromStdString(t.quantization);
    return text;
}

QStringList loadLogLines(const ModelsLoaded& loaded) {
    QStringList lines;
    const ModelSummary& t = loaded.target;
    const ModelSummary& d = loaded.drafter;
    if (loaded.drafterB) {
        lines << tr("loaded drafter B %1").arg(QString::fromStdString(loaded.drafterB->directory));
        for (const auto& w : loaded.drafterB->warnings) lines << tr("warning: drafter B: %1").arg(QString::fromStdString(w));
    }
    lines << tr("loaded target %1 and drafter %2").arg(QString::fromStdString(t.directory), QString::fromStdString(d.directory));
    for (const auto& w : d.warnings) lines << tr("warning: drafter: %1").arg(QString::fromStdString(w));
    for (const auto* m : {&t, &d}) {
        const QString who = m == &t ? tr("target") : tr("drafter");
        if (!m->unexpectedTensors.empty())
            lines << tr("warning: %1 checkpoint has %2 unexpected tensor(s), e.g. %3")
                         .arg(who).arg(m->unexpectedTensors.size())
                         .arg(QString::fromStdString(m->unexpectedTensors.front()));
        if (!m->ignoredTensors.empty())
            lines << tr("%1 checkpoint: %2 tensor(s) outside the language model ignored (e.g. %3)")
                         .arg(who).arg(m->ignoredTensors.size())
                         .arg(QString::fromStdString(m->ignoredTensors.front()));
    }
    return lines;
}

}  // namespace draftscope
