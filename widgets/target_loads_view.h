#pragma once
// The same target loaded two ways (Tools > Compare target loads; draftscope-cli
// compare-targets): per-layer cosine of the hidden states, the numbers per layer and a
// one-paragraph verdict.

#include "draftscope/engine.h"
#include "draftscope/target_comparison.h"
#include "exportable_view.h"

#include <QWidget>

class QCustomPlot;
class QLabel;
class QStandardItemModel;

namespace draftscope {

/// Minimum cosine (any layer, any position) the verdict calls "close": rounding-level
/// differences as float32 vs bfloat16 or CPU vs CUDA kernels give. A reading aid only; the
/// numbers are in the table.
inline constexpr double kTargetLoadsCloseCosine = 0.99;

/// The verdict on two loads: "identical" (every hidden state and logit equal), "close"
/// (every layer's minimum cosine >= kTargetLoadsCloseCosine; the argmax agreement is
/// reported, a near-tie can flip under rounding) or "different" (naming the first hidden
/// state below the threshold), with the worst layer's minimum cosine and the argmax
/// agreement. Empty for a comparison without layers.
QString targetLoadsVerdict(const TargetLoadComparison& c);

/// "dir (architecture, device, dtype)" of one load.
QString describeTargetLoad(const ModelSummary& model, const LoadOptions& load);

/// A QCustomPlot of the minimum and mean cosine over positions per hidden-state index (0 =
/// embeddings, L = after the final norm), the verdict above it and a table (index, max
/// |A-B|, relative, min cosine, mean cosine). Exports target_loads.{png,svg,pdf,csv,json}.
class TargetLoadsView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit TargetLoadsView(QWidget* parent = nullptr);
    void setComparison(const TargetLoadComparison& c, const QString& loadA, const QString& loadB);
    void clear();
    /// The verdict shown (targetLoadsVerdict(); empty when nothing is shown).
    QString verdict() const { return verdictText_; }
    QCustomPlot* plot() const { return plot_; }
    QStandardItemModel* table() const { return table_; }

    QString exportName() const override { return QStringLiteral("target_loads"); }
    QStringList exportAll(const QString& dir, QString* error) override;

private:
    QLabel* verdict_;
    QCustomPlot* plot_;
    QStandardItemModel* table_;
    QString verdictText_;
};

}  // namespace draftscope
