#include "tree_scene.h"

#include "legend_html.h"
#include "tree_nodes_table.h"
#include "token_display.h"

#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QObject>
#include <QPainterPath>
#include <QPen>

#include <algorithm>

namespace draftscope {

namespace {

// Geometry of the layout (scene units = pixels at zoom 1).
constexpr double kBoxW = 124, kBoxH = 40, kColGap = 40, kRowH = 66, kTop = 76;

struct Style {
    QColor fill, border;
    double opacity;
};
const Style kAccepted{QColor(0xc7, 0xe9, 0xc0), QColor(0x23, 0x8b, 0x45), 1.0};
const Style kRoot{QColor(0xc6, 0xdb, 0xef), QColor(0x23, 0x8b, 0x45), 1.0};
const Style kRejected{QColor(0xfc, 0xbb, 0xa1), QColor(0xcb, 0x18, 0x1d), 0.45};
const Style kUnreached{QColor(0xf0, 0xf0, 0xf0), QColor(0x96, 0x96, 0x96), 0.35};
const QColor kBonusFill(0xff, 0xf3, 0xcd), kBonusBorder(0xe6, 0x55, 0x0d);
const QColor kPathEdge(0x23, 0x8b, 0x45), kOtherEdge(0x96, 0x96, 0x96);
constexpr double kPathEdgeWidth = 4.0, kOtherEdgeWidth = 1.2;

/// A piece as shown in a node: quoted, whitespace visible, at most 14 characters.
QString shownPiece(const QString& piece) { return quotedPiece(piece, 14); }

}  // namespace

TreeSceneItems drawTreeStep(QGraphicsScene* scene, const TreeStep& step, const std::vector<TreeNodeState>& states,
                            const TreeLayout& layout, const QString& title,
                            const std::function<QString(std::int64_t)>& piece, const QFont& font) {
    TreeSceneItems items;
    const int n = static_cast<int>(step.tokens.size());
    const int last = step.acceptedPath.empty() ? 0 : step.acceptedPath.back();
    const int bonus = layout.bonus;
    const auto& shown = layout.shown;
    const auto& hiddenBelow = layout.hiddenBelow;
    auto topLeft = [&](int v) {
        return QPointF(layout.column[static_cast<std::size_t>(v)] * (kBoxW + kColGap),
                       kTop + layout.row[static_cast<std::size_t>(v)] * kRowH);
    };

    QFont small = font;
    small.setPointSizeF(std::max(7.0, font.pointSizeF() - 1));
    QFont bold = font;
    bold.setBold(true);

    // Title and legend (part of the exported figure), in short lines.
    const int len = step.acceptanceLength();
    auto* titleItem = scene->addSimpleText(title, bold);
    titleItem->setPos(0, 0);
    auto* sub = scene->addSimpleText(QObject::tr("root at position %1; acceptance length %2 (root + %3 accepted); bonus %4\n"
                                         "column = depth; green = accepted path, red = rejected by the target,\n"
                                         "grey = below a rejection; p = drafter probability; +k = k nodes folded")
                                          .arg(step.start).arg(len).arg(len - 1).arg(shownPiece(piece(step.bonusToken))),
                                      small);
    sub->setBrush(Qt::darkGray);
    sub->setPos(0, 20);

    // Edges first so the boxes cover their ends.
    items.edges.assign(static_cast<std::size_t>(n), nullptr);
    auto edge = [&](int from, int to, const QPen& pen) {
        const QPointF a = topLeft(from) + QPointF(kBoxW, kBoxH / 2);
        const QPointF b = topLeft(to) + QPointF(0, kBoxH / 2);
        QPainterPath path(a);
        const double mid = (a.x() + b.x()) / 2;
        path.cubicTo(QPointF(mid, a.y()), QPointF(mid, b.y()), b);
        auto* e = scene->addPath(path, pen);
        e->setZValue(-1);
        return e;
    };
    for (int i = 1; i < n; ++i) {
        const int p = step.parents[static_cast<std::size_t>(i)];
        if (p < 0 || p >= n || !shown[static_cast<std::size_t>(i)]) continue;
        const bool onPath = states[static_cast<std::size_t>(i)] == TreeNodeState::Accepted;
        QPen pen(onPath ? kPathEdge : kOtherEdge, onPath ? kPathEdgeWidth : kOtherEdgeWidth);
        auto* e = edge(p, i, pen);
        if (!onPath) e->setOpacity(states[static_cast<std::size_t>(i)] == TreeNodeState::Rejected ? 0.6 : 0.4);
        items.edges[static_cast<std::size_t>(i)] = e;
    }
    edge(last, bonus, QPen(kBonusBorder, 2, Qt::DashLine));

    auto box = [&](int v, const Style& s, Qt::PenStyle penStyle, double penWidth) {
        QPainterPath path;
        path.addRoundedRect(QRectF(topLeft(v), QSizeF(kBoxW, kBoxH)), 6, 6);
        auto* item = scene->addPath(path, QPen(s.border, penWidth, penStyle), QBrush(s.fill));
        item->setOpacity(s.opacity);
        return item;
    };
    auto text = [&](QGraphicsItem* parent, const QString& line, const QFont& f, QPointF at, const QColor& c) {
        auto* t = new QGraphicsSimpleTextItem(line, parent);
        t->setFont(f);
        t->setBrush(c);
        t->setPos(at);
        return t;
    };
    items.targetLabels.assign(static_cast<std::size_t>(n), nullptr);
    items.nodes.assign(static_cast<std::size_t>(n), nullptr);
    for (int i = 0; i < n; ++i) {
        if (!shown[static_cast<std::size_t>(i)]) continue;
        const auto state = states[static_cast<std::size_t>(i)];
        const Style& s = i == 0 ? kRoot : state == TreeNodeState::Accepted ? kAccepted
                                        : state == TreeNodeState::Rejected ? kRejected : kUnreached;
        auto* item = box(i, s, Qt::SolidLine, state == TreeNodeState::Accepted ? 2.5 : 1.0);
        item->setData(0, i);
        const QPointF tl = topLeft(i);
        text(item, shownPiece(piece(step.tokens[static_cast<std::size_t>(i)])), font, tl + QPointF(6, 3), Qt::black);
        const QString second = i == 0 ? QObject::tr("root (anchor)")
                                      : QObject::tr("p %1   #%2").arg(step.drafterProbs[static_cast<std::size_t>(i)], 0, 'f', 3).arg(i);
        text(item, second, small, tl + QPointF(6, 22), QColor(0x40, 0x40, 0x40));
        item->setToolTip(QObject::tr("node %1 (%2): token %3 %4, depth %5 (position %6), parent %7, drafter probability %8%9")
                             .arg(i).arg(treeNodeStateName(state)).arg(step.tokens[static_cast<std::size_t>(i)])
                             .arg(shownPiece(piece(step.tokens[static_cast<std::size_t>(i)])))
                             .arg(step.depths[static_cast<std::size_t>(i)])
                             .arg(step.start + step.depths[static_cast<std::size_t>(i)])
                             .arg(step.parents[static_cast<std::size_t>(i)])
                             .arg(step.drafterProbs[static_cast<std::size_t>(i)], 0, 'f', 4)
                             .arg(state == TreeNodeState::Accepted
                                      ? QObject::tr("; target's choice after it: %1")
                                            .arg(shownPiece(piece(step.targetChoice[static_cast<std::size_t>(i)])))
                                      : QString()));
        items.nodes[static_cast<std::size_t>(i)] = item;
        if (const int k = hiddenBelow[static_cast<std::size_t>(i)]; k > 0) {
            auto* badge = text(item, QObject::tr("+%1").arg(k), bold, tl + QPointF(kBoxW + 4, kBoxH / 2 - 9), kOtherEdge.darker(150));
            badge->setToolTip(QObject::tr("%n node(s) folded below; double-click the node to unfold", "", k));
        }
        if (state == TreeNodeState::Accepted && i < static_cast<int>(step.targetChoice.size())) {
            auto* t = text(nullptr, QObject::tr("target \u2192 %1").arg(shownPiece(piece(step.targetChoice[static_cast<std::size_t>(i)]))),
                           small, tl + QPointF(2, kBoxH + 2), kPathEdge.darker(130));
            scene->addItem(t);
            items.targetLabels[static_cast<std::size_t>(i)] = t;
        }
    }
    items.bonus = box(bonus, Style{kBonusFill, kBonusBorder, 1.0}, Qt::DashLine, 2.0);
    const QPointF btl = topLeft(bonus);
    items.bonusLabel = text(items.bonus, QObject::tr("bonus %1").arg(shownPiece(piece(step.bonusToken))), font, btl + QPointF(6, 3), Qt::black);
    text(items.bonus, QObject::tr("next step's root"), small, btl + QPointF(6, 22), QColor(0x40, 0x40, 0x40));
    items.bonus->setToolTip(QObject::tr("Bonus token %1 %2: the target's choice after the last accepted node; it is committed and "
                              "becomes the next step's root").arg(step.bonusToken).arg(shownPiece(piece(step.bonusToken))));

    return items;
}

QString treeLegendHtml() {
    return legendLine({legendSwatch(kAccepted.border, QObject::tr("accepted path")),
                       legendSwatch(kRoot.fill, QObject::tr("root (anchor)")),
                       legendSwatch(kRejected.border, QObject::tr("rejected by the target")),
                       legendSwatch(kUnreached.border, QObject::tr("below a rejection")),
                       legendSwatch(kBonusBorder, QObject::tr("bonus token")),
                       legendText(QObject::tr("+k: k nodes folded (double-click to unfold)"))}) +
           "<br/>" + whitespaceLegendLine();
}

}  // namespace draftscope
