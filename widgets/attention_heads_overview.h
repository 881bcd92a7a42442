#pragma once
// All-heads overview of the drafter's attention at one verify step (bertviz "model view"):
// a grid of small heatmaps, one per (layer, head).

#include "exportable_view.h"

#include "draftscope/run_types.h"

#include <QRect>
#include <QWidget>

#include <vector>

class QCPColorGradient;
class QPainter;

namespace draftscope {

/// The attention colour ramp: white (0) through blue to near-black (1), readable in print
/// and monotone in lightness; 256 levels. Shared by AttentionView and the overview.
QCPColorGradient attentionWeightGradient();

/// Grid of thumbnails of DrafterAttention weights [layers, heads, queries, keys]: row = drafter
/// layer (top = 0), column = head (left = 0). Thumbnail (layer, head) draws that head's
/// [queries x keys] matrix, query rows top to bottom and keys left to right, white (0) to dark
/// blue (the thumbnail's own largest weight, so every head's pattern is visible). The cell
/// chosen with setSelected() is framed. A left click on a thumbnail selects it and emits
/// cellClicked(layer, head). Malformed attention (weights size != L*H*Q*K or a non-positive
/// dimension) shows a message instead; nothing throws.
/// exportName() is "drafter_attention_heads"; exportAll() writes its .png/.svg/.pdf at a size
/// that gives each thumbnail at least 64 x 48 pixels (exportPainted).
class AttentionHeadsOverview : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit AttentionHeadsOverview(QWidget* parent = nullptr);

    /// Shows `attention` (copied). Keeps the selection when it is still in range.
    void setAttention(const DrafterAttention& attention);
    /// Shows nothing.
    void clear();

    int layers() const;
    int heads() const;
    /// The [numQueries * numKeys] row-major weights drawn in thumbnail (layer, head); empty
    /// when out of range or nothing is shown.
    std::vector<float> cellWeights(int layer, int head) const;
    /// Widget rectangle of thumbnail (layer, head) at the current size (null when out of range).
    QRect cellRect(int layer, int head) const;
    /// Frames thumbnail (layer, head); -1 for none. Emits nothing.
    void setSelected(int layer, int head);
    int selectedLayer() const { return selLayer_; }
    int selectedHead() const { return selHead_; }
    /// Message shown instead of the grid (no attention, or what is malformed); empty when the
    /// grid is drawn.
    QString message() const;

    QString exportName() const override { return QStringLiteral("drafter_attention_heads"); }
    QStringList exportAll(const QString& dir, QString* error) override;
    /// Writes the overview at its export size to `path` (png, svg or pdf by suffix).
    bool exportFigure(const QString& path, QString* error);

    QSize sizeHint() const override { return {420, 260}; }

signals:
    /// The user clicked thumbnail (layer, head).
    void cellClicked(int layer, int head);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    bool valid() const;
    QRect gridCell(const QSize& canvas, int layer, int head) const;
    void paint(QPainter& painter, const QSize& canvas) const;
    QSize exportSize() const;

    DrafterAttention attn_;
    int selLayer_ = -1, selHead_ = -1;
};

}  // namespace draftscope
