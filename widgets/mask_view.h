#pragma once
// Attention-mask view: draws the DFlash drafter's mask at inference (for the selected verify
// step) or the packed training mask, under selectable conventions, and diffs two convention
// sets cell by cell; or the target's tree-verify mask of a DDTree step. Semantics:
// draftscope/masks.h (DFLASH.md sections 3, 6 and 7) and tree_steps.h (section 5).

#include "exportable_view.h"
#include "mask_figure.h"

#include "draftscope/masks.h"
#include "draftscope/run_types.h"

#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QAbstractItemModel;
class QCheckBox;
class QComboBox;
class QCPColorMap;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QStackedWidget;

namespace draftscope {

class HeatmapPlot;
class MaskConventionBox;
class MatrixTableModel;

/// Heatmap of a MaskMatrix (rows = queries top to bottom, columns = keys left to right) with
/// its controls: mode (Inference | Training | Tree verify), the conventions of mask A (context strict /
/// inclusive, block bidirectional / causal, position offset 0 / 1) and an optional second
/// convention set B to diff against.
///
/// Colour-map cell values, data()->cell(column, row):
///  - plain mode: 1 = visible (dark), 0 = masked (white);
///  - diff mode: 0 = masked in both (white), 1 = visible in both (grey),
///    2 = visible only in A (red), 3 = visible only in B (blue).
/// Axis ticks show, per row/column, the block label and position id ("b+2 @17") or the
/// context position, plus the token piece where known; labels are thinned when crowded.
/// The exported table holds the same values: column "query" (row label) then one column
/// per key, headed by the key's label.
///
/// Tree verify mode draws treeVerifyMask() of the DDTree step given to setTreeStep(): rows
/// and columns are the root and the tree nodes ("n<i> @position 'piece'"), optionally
/// after one "past" column; conventions and diff do not apply there.
///
/// Bad user input (e.g. an anchor outside [0, S)) never throws: the backend's message is
/// shown in an error label (errorText()) and the plot is emptied.
///
/// The view gathers its inputs and controls into a MaskFigureInput and draws what
/// buildMaskFigure() computes (mask_figure.h: masks, values, labels, title, summary) on a
/// HeatmapPlot.
class MaskView : public QWidget, public draftscope::ExportableView {
    Q_OBJECT
public:
    using Mode = MaskMode;

    explicit MaskView(QWidget* parent = nullptr);
    ~MaskView() override;

    /// The selected verify step: anchor at absolute position `contextLength` (the step's
    /// start), block of `blockSize` rows. `tokenPieces[p]` is the piece at absolute position
    /// p (may be empty or shorter; the anchor's piece is tokenPieces[contextLength], block
    /// rows > 0 are shown as [M]). Redraws if the view is in Inference mode.
    void setInferenceContext(std::int64_t contextLength, std::int64_t blockSize,
                             const std::vector<QString>& tokenPieces);
    /// Forgets the step (Inference mode then shows "no verify step selected").
    void clearInferenceContext();
    /// The drafter's per-layer attention layout (ModelSummary::layout, DFLASH.md section 9).
    /// Inference mode draws the selected layer's real mask: the conventions' mask
    /// intersected with the layer's causal triangle and sliding-window band
    /// (inferenceMask(..., LayerAttention), the function the drafter forward uses). Training
    /// mode with a non-empty layout draws the selected layer's packed training mask
    /// (trainingMask(..., LayerAttention)); the Window control is then disabled. Empty: the
    /// base layout, the layer selector is shown in Inference mode only. Keeps the selected
    /// layer when it still exists.
    void setDrafterLayout(const std::vector<draftscope::LayerAttention>& layers);
    /// Selects drafter layer `layer` (clamped to the layout) for Inference and Training mode.
    void setSelectedLayer(int layer);
    /// The selected drafter layer (0 when the layout is empty).
    int selectedLayer() const;
    /// Fills the Training controls: context length S, block size B, anchors (each in [0, S);
    /// invalid ones are reported in the error label) and sliding window (0 = none).
    /// Does not change the mode.
    void setTrainingExample(std::int64_t contextLength, std::int64_t blockSize,
                            const std::vector<std::int64_t>& anchors, std::int64_t slidingWindow = 0);

    /// The DDTree step whose tree-verify mask Tree verify mode draws; `nodePieces[i]` is
    /// node i's piece; `budget` and 0-based `stepIndex` go into the title. Redraws if the
    /// view is in Tree verify mode.
    void setTreeStep(const draftscope::TreeStep& step, int budget, int stepIndex, const std::vector<QString>& nodePieces);
    /// Forgets the tree step (Tree verify mode then shows "no DDTree step selected").
    void clearTreeStep();
    bool hasTreeStep() const { return in_.haveTree; }
    /// Tree verify mode: draw the one column standing for all past positions (default on).
    void setPastColumnShown(bool shown);

    void setMode(Mode mode);
    Mode mode() const;
    /// Conventions of mask A (the one drawn).
    void setConventions(const draftscope::MaskConventions& conventions);
    draftscope::MaskConventions conventions() const;
    /// Conventions of mask B (the one A is diffed against).
    void setDiffConventions(const draftscope::MaskConventions& conventions);
    draftscope::MaskConventions diffConventions() const;
    void setDiffEnabled(bool enabled);
    bool diffEnabled() const;

    /// Mask A as currently built (empty 0x0 when there is nothing to draw or on error). In
    /// diff mode at inference, A and B both carry the anchor-feature column when either is
    /// inclusive, so that their shapes agree.
    const draftscope::MaskMatrix& matrix() const { return fig_.maskA; }
    /// Mask B (empty unless diff mode is on).
    const draftscope::MaskMatrix& diffMatrix() const { return fig_.maskB; }
    /// Counts of the last diff (zero unless diff mode is on).
    draftscope::MaskDiffCounts diffCounts() const { return fig_.counts; }
    /// The values drawn, [rows * cols] row-major (see the class comment for their meaning).
    const std::vector<std::uint8_t>& shownValues() const { return fig_.shown; }

    HeatmapPlot* plot() const { return plot_; }
    QCPColorMap* colorMap() const;
    /// The shown matrix as a table (what exportAll writes as CSV/JSON).
    const QAbstractItemModel* tableModel() const;
    /// Tick labels of the key (x) and query (y) axes, one per column/row (before thinning).
    const QStringList& keyTickLabels() const { return fig_.columnLabels; }
    const QStringList& queryTickLabels() const { return fig_.rowLabels; }
    /// Error shown to the user ("" if none), e.g. the backend's message on a bad anchor.
    QString errorText() const { return fig_.error; }
    /// One-line summary: shape and visible count, or the diff counts in diff mode.
    QString summaryText() const { return fig_.summary; }

    QString exportName() const override { return QStringLiteral("mask"); }
    QStringList exportAll(const QString& dir, QString* error) override;

signals:
    /// Emitted after every rebuild (inputs or conventions changed).
    void maskChanged();

private:
    void buildUi();
    void rebuild();
    void draw();
    void updateHover(int row, int col);

    MaskFigureInput in_;  ///< the inputs; rebuild() adds the controls' values
    MaskFigure fig_;      ///< what is drawn
    bool updating_ = false;

    // Widgets.
    QComboBox* modeCombo_ = nullptr;
    QStackedWidget* modeStack_ = nullptr;
    QLabel* stepLabel_ = nullptr;
    QWidget* layerBox_ = nullptr;  ///< "Layer" label + layerCombo_
    QComboBox* layerCombo_ = nullptr;
    QSpinBox* sSpin_ = nullptr;
    QSpinBox* bSpin_ = nullptr;
    QLineEdit* anchorsEdit_ = nullptr;
    QSpinBox* windowSpin_ = nullptr;
    QLabel* treeLabel_ = nullptr;
    QCheckBox* pastCheck_ = nullptr;
    QGroupBox* boxA_ = nullptr;
    QGroupBox* boxB_ = nullptr;
    std::unique_ptr<MaskConventionBox> convA_, convB_;
    QCheckBox* diffCheck_ = nullptr;
    QLabel* legendLabel_ = nullptr;
    QLabel* summaryLabel_ = nullptr;
    QLabel* errorLabel_ = nullptr;
    QLabel* hoverLabel_ = nullptr;
    HeatmapPlot* plot_ = nullptr;
    MatrixTableModel* table_ = nullptr;
};

}  // namespace draftscope
