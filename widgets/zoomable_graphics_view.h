#pragma once
// The DDTree view's canvas: a QGraphicsView that zooms with the wheel and fits without
// feeding back into itself.

#include <QGraphicsView>

namespace draftscope {

/// QGraphicsView with wheel zoom (plain or Ctrl+wheel, anchored under the cursor), drag to
/// pan, and a fit that cannot feed back into itself.
///
/// viewportChanged() fires on the first show and when the view's own size changes, never
/// for a viewport resize that only follows the scroll bars coming or going (a fit changes
/// the scroll ranges, which shows or hides the scroll bars, which resizes the viewport: an
/// owner that refits on every viewport resize loops without end).
class ZoomableGraphicsView : public QGraphicsView {
    Q_OBJECT
public:
    explicit ZoomableGraphicsView(QGraphicsScene* scene, QWidget* parent = nullptr);
    /// Current zoom factor (1 = one scene unit per pixel).
    double zoom() const;
    /// Scales so that scene rectangle `r` fits the whole viewport (measured without scroll
    /// bars), keeping the aspect ratio, with the zoom clamped to [minZoom, maxZoom]; centres
    /// on `r`. Returns the zoom set. Resizes it causes emit nothing.
    double fitRect(const QRectF& r, double minZoom, double maxZoom);

signals:
    /// The user zoomed with the wheel (the owner stops fitting on resize).
    void zoomedByUser();
    /// The user double-clicked `item` (the top-level item under the cursor).
    void itemDoubleClicked(QGraphicsItem* item);
    /// First show, or the view's own size changed (the owner refits).
    void viewportChanged();

protected:
    void wheelEvent(QWheelEvent* e) override;
    void mouseDoubleClickEvent(QMouseEvent* e) override;
    void resizeEvent(QResizeEvent* e) override;
    void showEvent(QShowEvent* e) override;

private:
    void sizeMayHaveChanged();
    bool fitting_ = false;  ///< inside fitRect(): resizes are its own
    QSize notifiedSize_;    ///< the view's size at the last viewportChanged()
};

}  // namespace draftscope
