#include "mask_controls.h"

#include "legend_html.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QFormLayout>

#include <algorithm>

namespace draftscope {

namespace {

// Colours: white = masked, dark = visible; diff: red = only A, blue = only B.
const QColor kMasked(255, 255, 255);
const QColor kVisible(38, 50, 82);
const QColor kBothVisible(178, 184, 196);
const QColor kOnlyA(214, 39, 40);
const QColor kOnlyB(31, 119, 230);

QString tr(const char* text) { return QCoreApplication::translate("draftscope::MaskView", text); }

}  // namespace

MaskConventionBox::MaskConventionBox(QWidget* parent, QFormLayout* form, const QString& prefix) {
    context = new QComboBox(parent);
    context->setObjectName(prefix + "Context");
    context->addItem(QObject::tr("kv < anchor (strict, reference)"));
    context->addItem(QObject::tr("kv \u2264 anchor (inclusive: anchor leak)"));
    block = new QComboBox(parent);
    block->setObjectName(prefix + "Block");
    block->addItem(QObject::tr("bidirectional (reference)"));
    block->addItem(QObject::tr("causal"));
    offset = new QComboBox(parent);
    offset->setObjectName(prefix + "Offset");
    offset->addItem(QObject::tr("anchor + 0 (reference)"));
    offset->addItem(QObject::tr("anchor + 1 (off by one)"));
    for (auto* c : {context, block, offset}) {  // may narrow in a narrow dock (full text in the list)
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(10);
    }
    form->addRow(QObject::tr("Context"), context);
    form->addRow(QObject::tr("Block"), block);
    form->addRow(QObject::tr("Block positions"), offset);
}

MaskConventions MaskConventionBox::get() const {
    MaskConventions c;
    c.context = context->currentIndex() == 1 ? MaskConventions::Context::Inclusive : MaskConventions::Context::Strict;
    c.block = block->currentIndex() == 1 ? MaskConventions::Block::Causal : MaskConventions::Block::Bidirectional;
    c.positionOffset = offset->currentIndex();
    return c;
}

void MaskConventionBox::set(const MaskConventions& c) {
    context->setCurrentIndex(c.context == MaskConventions::Context::Inclusive ? 1 : 0);
    block->setCurrentIndex(c.block == MaskConventions::Block::Causal ? 1 : 0);
    offset->setCurrentIndex(std::clamp(c.positionOffset, 0, 1));
}

void MaskConventionBox::setEnabled(bool on) {
    context->setEnabled(on);
    block->setEnabled(on);
    offset->setEnabled(on);
}

QCPColorGradient maskGradient(bool diff) {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    if (diff) {
        g.setLevelCount(4);
        g.setColorStopAt(0.0, kMasked);
        g.setColorStopAt(1.0 / 3.0, kBothVisible);
        g.setColorStopAt(2.0 / 3.0, kOnlyA);
        g.setColorStopAt(1.0, kOnlyB);
    } else {
        g.setLevelCount(2);
        g.setColorStopAt(0.0, kMasked);
        g.setColorStopAt(1.0, kVisible);
    }
    return g;
}

QString maskLegend(bool diff) {
    if (diff)
        return legendLine({legendSwatch(kOnlyA, tr("only A sees")), legendSwatch(kOnlyB, tr("only B sees")),
                           legendSwatch(kBothVisible, tr("both see")), legendHollow(tr("neither")), whitespaceLegendLine()});
    return legendLine({legendSwatch(kVisible, tr("may attend")), legendHollow(tr("masked")), whitespaceLegendLine()});
}

}  // namespace draftscope
