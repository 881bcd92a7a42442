#include "mask_figure.h"

#include "token_display.h"
#include "tree_steps.h"

#include "draftscope/errors.h"

#include <QCoreApplication>

#include <algorithm>

namespace draftscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("draftscope::MaskView", text); }

/// The tick label of row/column `index` of figure `f` (masks already built).
QString tickLabel(const MaskFigureInput& in, const MaskFigure& f, bool isRow, std::int64_t index) {
    const auto& m = f.maskA;
    const auto i = static_cast<std::size_t>(index);
    const std::int64_t pos = isRow ? m.rowPositions[i] : m.colPositions[i];
    const QString label = QString::fromStdString(isRow ? m.rowLabels[i] : m.colLabels[i]);
    const bool context = !isRow && index < m.contextCols;

    QString piece;
    if (in.mode == MaskMode::TreeVerify) {
        if (context) return label;
        const std::int64_t node = isRow ? index : index - m.contextCols;
        QString text = label + QStringLiteral(" @") + QString::number(pos);
        if (node >= 0 && node < static_cast<std::int64_t>(in.treePieces.size()))
            text += QLatin1Char(' ') + quotedPiece(in.treePieces[static_cast<std::size_t>(node)], 12);
        return text;
    }
    if (in.mode == MaskMode::Inference) {
        // The token at a row/column: context j -> piece j; anchor feature -> the anchor's piece;
        // block row 0 -> the anchor's piece (at true position contextLength), rows > 0 -> MASK.
        std::int64_t tokenPos = -1;
        if (context) tokenPos = index < in.contextLength ? index : in.contextLength;
        else {
            const std::int64_t k = isRow ? index : index - m.contextCols;
            tokenPos = k == 0 ? in.contextLength : -2;
        }
        if (tokenPos == -2) piece = QStringLiteral("[M]");
        else if (tokenPos >= 0 && tokenPos < static_cast<std::int64_t>(in.pieces.size()))
            piece = quotedPiece(in.pieces[static_cast<std::size_t>(tokenPos)], 12);
    }

    QString text;
    if (context) {
        text = QString::number(pos);
        if (label.endsWith(QStringLiteral("(anchor feat)"))) text += tr(" anchor feat");
    } else {
        text = label + QStringLiteral(" @") + QString::number(pos);
        // Diff mode: show B's position id too where the conventions place the row elsewhere.
        if (f.isDiff) {
            const std::int64_t posB = isRow ? f.maskB.rowPositions[i] : f.maskB.colPositions[i];
            if (posB != pos) text += QStringLiteral(" (B @%1)").arg(posB);
        }
    }
    if (!piece.isEmpty()) text += QLatin1Char(' ') + piece;
    return text;
}

QString titleText(const MaskFigureInput& in, const MaskFigure& f) {
    if (in.mode == MaskMode::TreeVerify)
        return in.haveTree ? tr("Target's tree-verify mask, DDTree budget %1, step %2 (root at position %3)\n"
                                "each node sees its ancestors and itself%4")
                                     .arg(in.treeBudget).arg(in.treeStepIndex + 1).arg(in.tree.start)
                                     .arg(in.pastColumn ? tr(", plus all past positions") : QString()) +
                                 (f.error.isEmpty() ? QString() : QStringLiteral("\n") + f.error)
                           : tr("Target's tree-verify mask (no DDTree step selected)");
    QString what;
    if (in.mode == MaskMode::Inference)
        what = (in.haveStep ? tr("Drafter mask at inference (anchor at %1, block %2)").arg(in.contextLength).arg(in.blockSize)
                            : tr("Drafter mask at inference (no step selected)")) +
               QStringLiteral(", ") + tr("layer %1").arg(in.layerName);
    else
        what = tr("Training mask (S %1, B %2, anchors %3%4)")
                   .arg(in.trainingContext)
                   .arg(in.trainingBlock)
                   .arg(in.anchors.simplified())
                   .arg(in.trainsPerLayer() ? tr(", layer %1").arg(in.layerName)
                        : in.window > 0     ? tr(", window %1").arg(in.window)
                                            : QString());
    // What is drawn: the conventions as the selected layer (or the training window) applies them.
    const LayerAttention layer = in.mode == MaskMode::Inference || in.trainsPerLayer()
                                     ? in.selectedLayerAttention()
                                     : LayerAttention{in.window > 0, in.window > 0 ? std::optional<std::int64_t>(in.window) : std::nullopt};
    QString text = what + QStringLiteral("\nA: ") + describeDrawnMask(in.a, layer);
    if (f.isDiff)
        text += QStringLiteral("\nB: ") + describeDrawnMask(in.b, layer) +
                tr("\n%1 cells differ: red = only A sees (%2), blue = only B sees (%3), grey = both")
                    .arg(f.counts.total())
                    .arg(f.counts.onlyA)
                    .arg(f.counts.onlyB);
    if (!f.error.isEmpty()) text += QStringLiteral("\n") + f.error;
    return text;
}

}  // namespace

bool MaskFigureInput::trainsPerLayer() const {
    return std::any_of(layout.begin(), layout.end(), [](const LayerAttention& l) { return l.needsMask(); });
}

LayerAttention MaskFigureInput::selectedLayerAttention() const {
    return layer >= 0 && static_cast<std::size_t>(layer) < layout.size() ? layout[static_cast<std::size_t>(layer)]
                                                                         : LayerAttention{};
}

QString describeConventions(const MaskConventions& c) {
    return QStringLiteral("%1, %2, block at anchor+%3")
        .arg(c.context == MaskConventions::Context::Inclusive ? "kv <= anchor" : "kv < anchor",
             c.block == MaskConventions::Block::Causal ? "causal block" : "bidirectional block")
        .arg(c.positionOffset);
}

QString describeDrawnMask(const MaskConventions& c, const LayerAttention& layer) {
    if (!layer.needsMask()) return describeConventions(c);
    const bool causalSetting = c.block == MaskConventions::Block::Causal;
    QString block = causalSetting || layer.causal ? tr("causal block") : tr("bidirectional block");
    if (layer.causal && !causalSetting) block += tr(" (the layer is causal)");
    QString text = QStringLiteral("%1, %2, block at anchor+%3")
                       .arg(c.context == MaskConventions::Context::Inclusive ? "kv <= anchor" : "kv < anchor", block)
                       .arg(c.positionOffset);
    if (layer.window)
        text += layer.causal ? tr(", keys within the last %1 positions").arg(*layer.window)
                             : tr(", keys within %1 positions either side").arg(*layer.window);
    return text;
}

MaskFigure buildMaskFigure(const MaskFigureInput& in) {
    MaskFigure f;
    const bool tree = in.mode == MaskMode::TreeVerify;
    const bool diff = in.diff && !tree;  // conventions and diff describe the drafter's masks only
    const LayerAttention layer = in.selectedLayerAttention();
    try {
        if (tree) {
            if (in.haveTree) f.maskA = treeVerifyMask(in.tree, in.pastColumn);
            else f.summary = tr("No DDTree step selected: run with DDTree budgets (Prompt panel) and pick a step in the DDTree view.");
        } else if (in.mode == MaskMode::Inference) {
            if (in.haveStep) {
                const bool both = diff && (in.a.context == MaskConventions::Context::Inclusive ||
                                           in.b.context == MaskConventions::Context::Inclusive);
                f.maskA = inferenceMask(in.contextLength, in.blockSize, in.a, both, layer);
                if (diff) f.maskB = inferenceMask(in.contextLength, in.blockSize, in.b, both, layer);
            } else {
                f.summary = tr("No verify step selected: select a step, or switch to Training mode.");
            }
        } else {
            const auto anchors = parseIndexList(in.anchors.toStdString());
            const auto build = [&](const MaskConventions& c) {
                return !in.trainsPerLayer() ? trainingMask(in.trainingContext, in.trainingBlock, anchors, c, in.window)
                                            : trainingMask(in.trainingContext, in.trainingBlock, anchors, c, layer);
            };
            f.maskA = build(in.a);
            if (diff) f.maskB = build(in.b);
        }
        if (f.maskA.rows * f.maskA.cols > kMaxMaskCells)
            throw Error("the mask has " + std::to_string(f.maskA.rows) + " x " + std::to_string(f.maskA.cols) +
                        " cells, more than this view draws (" + std::to_string(kMaxMaskCells) + ")");
        if (diff && f.maskA.rows > 0) maskDifference(f.maskA, f.maskB, &f.counts);
    } catch (const std::exception& e) {
        f.maskA = {};
        f.maskB = {};
        f.counts = {};
        f.error = QString::fromStdString(e.what());
    }

    f.isDiff = diff && f.maskB.rows == f.maskA.rows && f.maskB.cols == f.maskA.cols;
    f.shown.resize(f.maskA.visible.size());
    for (std::size_t i = 0; i < f.shown.size(); ++i) {
        const bool va = f.maskA.visible[i] != 0;
        if (!f.isDiff) {
            f.shown[i] = va ? 1 : 0;
        } else {
            const bool vb = f.maskB.visible[i] != 0;
            f.shown[i] = va && vb ? 1 : va ? 2 : vb ? 3 : 0;
        }
    }

    if (f.error.isEmpty() && f.maskA.rows > 0) {
        if (f.isDiff) {
            f.summary = tr("%1 cells differ: %2 visible only in A (red), %3 visible only in B (blue)")
                            .arg(f.counts.total())
                            .arg(f.counts.onlyA)
                            .arg(f.counts.onlyB);
            if (f.counts.positionMismatches > 0)
                f.summary += tr("; position ids differ in %1 rows/columns").arg(f.counts.positionMismatches);
        } else {
            f.summary = tr("%1 queries x %2 keys, %3 visible cells")
                            .arg(f.maskA.rows)
                            .arg(f.maskA.cols)
                            .arg(f.maskA.visibleCount());
        }
        if (in.mode == MaskMode::Training && !in.trainsPerLayer() && in.window > 0)
            f.summary += tr(" (sliding window %1: block causal whatever the Block setting)").arg(in.window);
    } else if (f.error.isEmpty() && f.summary.isEmpty()) {
        f.summary = tr("Empty mask (no blocks).");
    }
    f.title = titleText(in, f);
    for (std::int64_t c = 0; c < f.maskA.cols; ++c) f.columnLabels << tickLabel(in, f, false, c);
    for (std::int64_t r = 0; r < f.maskA.rows; ++r) f.rowLabels << tickLabel(in, f, true, r);
    return f;
}

}  // namespace draftscope
