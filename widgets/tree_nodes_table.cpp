#include "tree_nodes_table.h"

#include "figure_export.h"
#include "token_display.h"

namespace draftscope {

QString treeNodeStateName(TreeNodeState s) {
    switch (s) {
    case TreeNodeState::Accepted: return QStringLiteral("accepted");
    case TreeNodeState::Rejected: return QStringLiteral("rejected");
    case TreeNodeState::Unreached: return QStringLiteral("unreached");
    }
    return {};
}

TreeNodesTable::TreeNodesTable(QObject* parent) : QStandardItemModel(parent) { showStep(nullptr, {}, {}); }

void TreeNodesTable::showStep(const TreeStep* st, const std::vector<TreeNodeState>& states, const PieceFn& piece) {
    clear();
    setHorizontalHeaderLabels({tr("index"), tr("token id"), tr("piece"), tr("depth"), tr("parent"), tr("draft prob"),
                               tr("target choice id"), tr("target choice piece"), tr("on path"), tr("state")});
    if (!st) return;
    auto item = [](const QVariant& v) {
        auto* it = new QStandardItem;
        it->setData(v, Qt::DisplayRole);
        return it;
    };
    auto pieceItem = [&piece](std::int64_t id) {  // glyphs on screen, the raw text in exports
        const QString raw = piece ? piece(id) : QStringLiteral("#%1").arg(id);
        auto* it = new QStandardItem(displayPiece(raw));
        it->setData(raw, kExportRole);
        return it;
    };
    for (std::size_t i = 0; i < st->tokens.size() && i < states.size(); ++i) {
        const bool hasChoice = i < st->targetChoice.size();
        const auto state = states[i];
        appendRow({item(static_cast<int>(i)), item(static_cast<qlonglong>(st->tokens[i])), pieceItem(st->tokens[i]),
                   item(st->depths[i]), item(st->parents[i]), item(static_cast<double>(st->drafterProbs[i])),
                   item(hasChoice ? QVariant(static_cast<qlonglong>(st->targetChoice[i])) : QVariant()),
                   hasChoice ? pieceItem(st->targetChoice[i]) : item(QString()), item(state == TreeNodeState::Accepted),
                   item(treeNodeStateName(state))});
    }
}

}  // namespace draftscope
