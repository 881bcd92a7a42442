#pragma once
// Pieces of MaskView's controls and colours: the selectors of one convention set, the
// colour gradient of the mask heatmap and its legend.

#include "draftscope/masks.h"

#include <qcustomplot.h>

#include <QString>

class QComboBox;
class QFormLayout;
class QWidget;

namespace draftscope {

/// The three selectors of one convention set (context strict / inclusive, block
/// bidirectional / causal, position offset 0 / 1), added as rows of `form`; object names
/// `<prefix>Context`, `<prefix>Block`, `<prefix>Offset`.
class MaskConventionBox {
public:
    MaskConventionBox(QWidget* parent, QFormLayout* form, const QString& prefix);
    MaskConventions get() const;
    void set(const MaskConventions& c);
    void setEnabled(bool on);

    QComboBox* context = nullptr;
    QComboBox* block = nullptr;
    QComboBox* offset = nullptr;
};

/// Colours of the mask values (MaskFigure::shown): plain 0 white (masked), 1 dark
/// (visible); diff 0 white, 1 grey (both), 2 red (only A), 3 blue (only B). Levels are
/// exact: use with the data range [0, 1] (plain) or [0, 3] (diff).
QCPColorGradient maskGradient(bool diff);

/// The legend line (HTML) naming those colours, plus the whitespace glyphs of pieces.
QString maskLegend(bool diff);

}  // namespace draftscope
