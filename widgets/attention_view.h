#pragma once
// Heatmap of the DFlash drafter's attention weights of one verify step (one layer, one head
// or the mean over heads). Queries are the block rows, keys the context then the block.

#include "exportable_view.h"

#include "draftscope/attention_layout.h"
#include "draftscope/run_types.h"

#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <vector>

class QAbstractItemModel;
class QCheckBox;
class QCPColorMap;
class QCPColorScale;
class QLabel;
class QSpinBox;

namespace draftscope {

class AttentionHeadsOverview;
class HeatmapPlot;
class MatrixTableModel;

/// Shows DrafterAttention weights [layers, heads, queries, keys] for a chosen layer and head
/// (or averaged over heads) as a QCPColorMap with a colour scale (white = 0, dark = high).
/// Colour-map cell (column k, row q) = weight of query q on key k; rows top to bottom.
/// Query ticks: "b+q @pos 'piece'"; key ticks: "pos 'piece'" (block keys prefixed "b+k").
/// The exported table: column "query" (query tick label), then one column per key, headed
/// "key <pos>" (positions are unique within a step).
///
/// Cells the shown layer cannot see under the drafter's attention layout (a causal layer's
/// keys after the query, a sliding window's keys W or more positions away; DFLASH.md
/// section 9) are shaded grey and hatched, on screen and in exported figures: maskedCells()
/// is !layerVisibility(layout[layer]) over the step's query and key positions, the function
/// the drafter forward builds its mask with. A base-layout layer (bidirectional, no window)
/// masks nothing at inference, so nothing is shaded.
///
/// Below the heatmap (toggled by the "All heads" box, objectName "allHeadsCheck"), an
/// AttentionHeadsOverview shows every (layer, head) of the step; clicking a thumbnail shows
/// that layer and head here (and turns averaging off); the overview frames the shown head.
///
/// Malformed input (weights size != L*H*Q*K, position vectors of the wrong length) is
/// reported in an error label (errorText()) and nothing is drawn; it never throws.
class AttentionView : public QWidget, public draftscope::ExportableView {
    Q_OBJECT
public:
    explicit AttentionView(QWidget* parent = nullptr);
    ~AttentionView() override;

    /// Shows `attention`. `tokenPieces[k]` is the piece of key k (size numKeys, or empty for
    /// no pieces); a query's piece is that of its own block key (the last numQueries keys).
    /// `layout` is the per-layer attention layout of the drafter that computed it
    /// (ModelSummary::layout); empty, or a layer beyond it, is the base layout. Keeps the
    /// chosen layer/head when still in range.
    void setAttention(const draftscope::DrafterAttention& attention, const std::vector<QString>& tokenPieces,
                      const std::vector<draftscope::LayerAttention>& layout = {});
    /// Shows nothing ("no attention recorded").
    void clear();
    /// Shows nothing, with `reason` as the explanation (e.g. the models of a recorded run
    /// are not on this machine); it is also the title of exported figures.
    void setPlaceholder(const QString& reason);
    /// The explanation shown above the plot (placeholder or "no attention recorded").
    QString infoText() const;
    bool hasAttention() const { return attn_.numLayers > 0 && error_.isEmpty(); }

    void setLayer(int layer);
    int layer() const;
    void setHead(int head);
    int head() const;
    /// Shows the mean over heads of the chosen layer instead of one head.
    void setAverageHeads(bool on);
    bool averageHeads() const;
    /// Fixes the colour range to [0, 1] instead of [0, max of the shown matrix].
    void setFixedRange(bool on);

    /// The shown matrix, [numQueries * numKeys] row-major (empty when nothing is shown).
    const std::vector<float>& shownWeights() const { return shown_; }
    /// The shaded cells, [numQueries * numKeys] row-major like shownWeights(): 1 where the
    /// shown layer's layout hides key k from query q (!layerVisibility), else 0; all 0 for
    /// a base-layout layer; empty when nothing is shown.
    const std::vector<std::uint8_t>& maskedCells() const { return masked_; }
    /// The attention layout of the shown layer (the base layout if the drafter's layout
    /// does not cover it).
    draftscope::LayerAttention shownLayerAttention() const;
    HeatmapPlot* plot() const { return plot_; }
    /// The all-heads overview (an ExportableView of its own: drafter_attention_heads).
    AttentionHeadsOverview* headsOverview() const { return overview_; }
    /// Shows or hides the all-heads overview (hidden by default).
    void setShowAllHeads(bool on);
    QCPColorMap* colorMap() const;
    QCPColorScale* colorScale() const { return scale_; }
    const QAbstractItemModel* tableModel() const;
    const QStringList& keyTickLabels() const { return xLabels_; }
    const QStringList& queryTickLabels() const { return yLabels_; }
    QString errorText() const { return error_; }

    QString exportName() const override { return QStringLiteral("drafter_attention"); }
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    void buildUi();
    void validate();
    void recompute();
    void draw();
    void updateHover(int query, int key);

    draftscope::DrafterAttention attn_;
    std::vector<QString> pieces_;
    std::vector<draftscope::LayerAttention> layout_;
    std::vector<float> shown_;
    std::vector<std::uint8_t> masked_;
    QStringList xLabels_, yLabels_;
    QStringList yExportLabels_;  ///< yLabels_ with the raw, whole pieces (table exports)
    QString error_;
    bool updating_ = false;

    QSpinBox* layerSpin_ = nullptr;
    QSpinBox* headSpin_ = nullptr;
    QCheckBox* averageCheck_ = nullptr;
    QCheckBox* fixedCheck_ = nullptr;
    QCheckBox* allHeadsCheck_ = nullptr;
    AttentionHeadsOverview* overview_ = nullptr;
    QLabel* infoLabel_ = nullptr;
    QLabel* errorLabel_ = nullptr;
    QLabel* hoverLabel_ = nullptr;
    HeatmapPlot* plot_ = nullptr;  ///< draws shown_, with masked_ hatched over it
    QCPColorScale* scale_ = nullptr;
    MatrixTableModel* table_ = nullptr;
};

}  // namespace draftscope
