#include "attention_heads_overview.h"

#include "figure_export.h"

#include <qcustomplot.h>

#include <QDir>
#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace draftscope {

QCPColorGradient attentionWeightGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setLevelCount(256);
    g.setColorStopAt(0.0, QColor(255, 255, 255));
    g.setColorStopAt(0.25, QColor(189, 215, 238));
    g.setColorStopAt(0.55, QColor(66, 146, 198));
    g.setColorStopAt(0.8, QColor(8, 69, 148));
    g.setColorStopAt(1.0, QColor(12, 22, 48));
    return g;
}

namespace {

constexpr int kLeftMargin = 34;  // "L<n>" row labels
constexpr int kTopMargin = 18;   // "H<n>" column labels
constexpr int kGap = 3;          // between thumbnails

}  // namespace

AttentionHeadsOverview::AttentionHeadsOverview(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("attentionHeadsOverview"));
    setMinimumSize(160, 100);
    setToolTip(tr("All heads of every drafter layer at this step (row = layer, column = head; each thumbnail "
                  "scaled to its own largest weight). Click one to show it above."));
    installExportMenu(this, exportName(), [this](const QString& path, QString* err) { return exportFigure(path, err); });
}

void AttentionHeadsOverview::setAttention(const DrafterAttention& attention) {
    attn_ = attention;
    if (selLayer_ >= layers() || selHead_ >= heads()) selLayer_ = selHead_ = -1;
    update();
}

void AttentionHeadsOverview::clear() { setAttention({}); }

bool AttentionHeadsOverview::valid() const {
    const auto& a = attn_;
    return a.numLayers > 0 && a.numHeads > 0 && a.numQueries > 0 && a.numKeys > 0 &&
           static_cast<std::int64_t>(a.weights.size()) == a.numLayers * a.numHeads * a.numQueries * a.numKeys;
}

int AttentionHeadsOverview::layers() const { return valid() ? static_cast<int>(attn_.numLayers) : 0; }
int AttentionHeadsOverview::heads() const { return valid() ? static_cast<int>(attn_.numHeads) : 0; }

QString AttentionHeadsOverview::message() const {
    if (attn_.numLayers == 0) return tr("No drafter attention for the selected step.");
    if (!valid())
        return tr("Drafter attention is malformed (%1 weights for layers %2 x heads %3 x queries %4 x keys %5).")
            .arg(attn_.weights.size()).arg(attn_.numLayers).arg(attn_.numHeads).arg(attn_.numQueries).arg(attn_.numKeys);
    return {};
}

std::vector<float> AttentionHeadsOverview::cellWeights(int layer, int head) const {
    if (layer < 0 || layer >= layers() || head < 0 || head >= heads()) return {};
    const auto n = attn_.numQueries * attn_.numKeys;
    const auto begin = attn_.weights.begin() + (static_cast<std::int64_t>(layer) * attn_.numHeads + head) * n;
    return {begin, begin + n};
}

QRect AttentionHeadsOverview::gridCell(const QSize& canvas, int layer, int head) const {
    if (layer < 0 || layer >= layers() || head < 0 || head >= heads()) return {};
    const double w = double(canvas.width() - kLeftMargin) / heads();
    const double h = double(canvas.height() - kTopMargin) / layers();
    const int x0 = kLeftMargin + int(std::floor(head * w)), x1 = kLeftMargin + int(std::floor((head + 1) * w)) - kGap;
    const int y0 = kTopMargin + int(std::floor(layer * h)), y1 = kTopMargin + int(std::floor((layer + 1) * h)) - kGap;
    return QRect(QPoint(x0, y0), QPoint(std::max(x0, x1 - 1), std::max(y0, y1 - 1)));
}

QRect AttentionHeadsOverview::cellRect(int layer, int head) const { return gridCell(size(), layer, head); }

void AttentionHeadsOverview::setSelected(int layer, int head) {
    const bool in = layer >= 0 && layer < layers() && head >= 0 && head < heads();
    selLayer_ = in ? layer : -1;
    selHead_ = in ? head : -1;
    update();
}

void AttentionHeadsOverview::paint(QPainter& p, const QSize& canvas) const {
    p.fillRect(QRect(QPoint(0, 0), canvas), Qt::white);
    if (!valid()) {
        p.setPen(Qt::darkGray);
        p.drawText(QRect(QPoint(0, 0), canvas), Qt::AlignCenter | Qt::TextWordWrap, message());
        return;
    }
    QFont f(QStringLiteral("DejaVu Sans"), 7);
    p.setFont(f);
    const auto Q = attn_.numQueries, K = attn_.numKeys;
    QCPColorGradient gradient = attentionWeightGradient();  // color() fills its level buffer
    for (int l = 0; l < layers(); ++l) {
        const QRect first = gridCell(canvas, l, 0);
        p.setPen(Qt::black);
        p.drawText(QRect(0, first.top(), kLeftMargin - 4, first.height()), Qt::AlignRight | Qt::AlignVCenter,
                   QStringLiteral("L%1").arg(l));
        for (int h = 0; h < heads(); ++h) {
            const QRect cell = gridCell(canvas, l, h);
            if (l == 0)
                p.drawText(QRect(cell.left(), 0, cell.width(), kTopMargin - 2), Qt::AlignHCenter | Qt::AlignBottom,
                           QStringLiteral("H%1").arg(h));
            const auto w = cellWeights(l, h);
            float mx = 0;
            for (float v : w) mx = std::isfinite(v) ? std::max(mx, v) : mx;
            const double cw = double(cell.width() + 1) / double(K), ch = double(cell.height() + 1) / double(Q);
            for (std::int64_t q = 0; q < Q; ++q)
                for (std::int64_t k = 0; k < K; ++k) {
                    const double v = w[static_cast<std::size_t>(q * K + k)];
                    const QRectF r(cell.left() + k * cw, cell.top() + q * ch, cw, ch);
                    const double t = mx > 0 && std::isfinite(v) ? v / mx : 0.0;  // 1 exactly at the maximum
                    p.fillRect(r, QColor::fromRgb(gradient.color(t, QCPRange(0, 1))));
                }
            const bool sel = l == selLayer_ && h == selHead_;
            p.setPen(sel ? QPen(QColor(220, 60, 20), 2.0) : QPen(QColor(170, 170, 170), 0.6));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRectF(cell).adjusted(-0.5, -0.5, 0.5, 0.5));
            p.setPen(Qt::black);
        }
    }
}

void AttentionHeadsOverview::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paint(p, size());
}

void AttentionHeadsOverview::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
    const QPoint pos = event->position().toPoint();
    for (int l = 0; l < layers(); ++l)
        for (int h = 0; h < heads(); ++h)
            if (cellRect(l, h).contains(pos)) {
                setSelected(l, h);
                emit cellClicked(l, h);
                return;
            }
}

QSize AttentionHeadsOverview::exportSize() const {
    if (!valid()) return {600, 200};
    return {kLeftMargin + std::max(600 - kLeftMargin, heads() * (64 + kGap)),
            kTopMargin + std::max(200 - kTopMargin, layers() * (48 + kGap))};
}

bool AttentionHeadsOverview::exportFigure(const QString& path, QString* error) {
    const QSize s = exportSize();
    return exportPainted(s, [this, s](QPainter& p) { paint(p, s); }, path, error, figureTitle());
}

QStringList AttentionHeadsOverview::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.figure(exportName(), [this](const QString& path, QString* e) { return exportFigure(path, e); });
    return set.written();
}

}  // namespace draftscope
