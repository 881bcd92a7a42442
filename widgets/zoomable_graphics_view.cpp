#include "zoomable_graphics_view.h"

#include <QGraphicsItem>
#include <QMouseEvent>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace draftscope {

ZoomableGraphicsView::ZoomableGraphicsView(QGraphicsScene* scene, QWidget* parent) : QGraphicsView(scene, parent) {
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    setBackgroundBrush(Qt::white);
}

double ZoomableGraphicsView::zoom() const { return transform().m11(); }

void ZoomableGraphicsView::wheelEvent(QWheelEvent* e) {
    const double steps = e->angleDelta().y() / 120.0;
    if (steps == 0) return;
    const double factor = std::pow(1.15, steps);
    const double z = zoom() * factor;
    if (z < 0.05 || z > 20) return;
    scale(factor, factor);
    e->accept();
    emit zoomedByUser();
}

void ZoomableGraphicsView::mouseDoubleClickEvent(QMouseEvent* e) {
    if (QGraphicsItem* item = itemAt(e->position().toPoint())) {
        emit itemDoubleClicked(item->topLevelItem());
        e->accept();
        return;
    }
    QGraphicsView::mouseDoubleClickEvent(e);
}

void ZoomableGraphicsView::resizeEvent(QResizeEvent* e) {
    QGraphicsView::resizeEvent(e);
    sizeMayHaveChanged();
}

void ZoomableGraphicsView::showEvent(QShowEvent* e) {
    QGraphicsView::showEvent(e);
    sizeMayHaveChanged();
}

void ZoomableGraphicsView::sizeMayHaveChanged() {
    // The viewport is resized when the scroll bars come or go, the view itself is not: only
    // the view's own size (first show included) asks the owner to refit.
    if (fitting_ || !isVisible() || size() == notifiedSize_) return;
    notifiedSize_ = size();
    emit viewportChanged();
}

double ZoomableGraphicsView::fitRect(const QRectF& r, double minZoom, double maxZoom) {
    if (fitting_ || r.isEmpty()) return zoom();
    fitting_ = true;
    // Measure the whole viewport: a scroll bar left over from the previous zoom would make
    // the fit smaller than the room there is.
    const auto hPolicy = horizontalScrollBarPolicy(), vPolicy = verticalScrollBarPolicy();
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    resetTransform();
    fitInView(r, Qt::KeepAspectRatio);
    const double z = std::clamp(zoom(), minZoom, maxZoom);
    setTransform(QTransform::fromScale(z, z));
    centerOn(r.center());
    setHorizontalScrollBarPolicy(hPolicy);
    setVerticalScrollBarPolicy(vPolicy);
    fitting_ = false;
    return z;
}

}  // namespace draftscope
