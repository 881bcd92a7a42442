#include "block_agreement_view.h"

#include "figure_export.h"
#include "step_selection.h"
#include "token_display.h"

#include <QDir>
#include <QHBoxLayout>
#include <QScrollBar>
#include <QToolButton>
#include <QWheelEvent>

#include <algorithm>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPainter>
#include <QStandardItemModel>
#include <QStyledItemDelegate>

#include <memory>
#include <QTableView>
#include <QVBoxLayout>

namespace draftscope {

namespace {
constexpr int kCellW = 78, kCellH = 20, kHeaderW = 120, kHeaderH = 20, kLegendH = 42, kCaptionH = 20;
const QColor kDiffMark(0x8e, 0x24, 0xaa);  // where the two drafters part from the same anchor

/// Default cell painting plus a purple frame on cells marked DiffersRole.
class DiffMarkDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        QStyledItemDelegate::paint(p, option, index);
        if (!index.data(BlockAgreementModel::DiffersRole).toBool()) return;
        p->save();
        p->setPen(QPen(kDiffMark, 2.5));
        p->drawRect(QRectF(option.rect).adjusted(1.5, 1.5, -1.5, -1.5));
        p->restore();
    }
};
}  // namespace

BlockAgreementView::BlockAgreementView(StepSelection* selection, QWidget* parent)
    : QWidget(parent), selection_(selection), model_(new BlockAgreementModel(this)), table_(new QTableView(this)),
      summary_(new QLabel(this)) {
    setObjectName("BlockAgreementView");
    table_->setModel(model_);
    table_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    table_->horizontalHeader()->setDefaultSectionSize(kCellW);
    table_->verticalHeader()->setDefaultSectionSize(kCellH);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setSelectionBehavior(QAbstractItemView::SelectItems);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setWordWrap(false);
    table_->setItemDelegate(new DiffMarkDelegate(table_));
    summary_->setText(tr("Rows: verify steps. Columns: block positions (0 = anchor). "
                         "Green accepted, red first rejection, grey drafted after the cut. ") + whitespaceLegend());
    summary_->setWordWrap(true);
    // The anchor column stays in view when the grid scrolls horizontally: a second view of
    // the same model, showing the step headers and column 0 only, laid over the left edge.
    frozen_ = new QTableView(table_);
    frozen_->setObjectName("frozenAnchorColumn");
    frozen_->setModel(model_);
    frozen_->setFont(table_->font());
    frozen_->setSelectionModel(table_->selectionModel());
    frozen_->setItemDelegate(new DiffMarkDelegate(frozen_));
    frozen_->setFocusPolicy(Qt::NoFocus);
    frozen_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    frozen_->setWordWrap(false);
    frozen_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    frozen_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    frozen_->verticalHeader()->setDefaultSectionSize(kCellH);
    frozen_->setFrameShape(QFrame::NoFrame);
    frozen_->setStyleSheet("QTableView { border-right: 2px solid #808080; }");
    frozen_->hide();
    connect(table_->verticalScrollBar(), &QScrollBar::valueChanged, frozen_->verticalScrollBar(), &QScrollBar::setValue);
    connect(frozen_->verticalScrollBar(), &QScrollBar::valueChanged, table_->verticalScrollBar(), &QScrollBar::setValue);
    connect(table_->horizontalScrollBar(), &QScrollBar::valueChanged, this, &BlockAgreementView::updateFrozenAnchor);
    connect(table_->horizontalScrollBar(), &QScrollBar::rangeChanged, this, &BlockAgreementView::updateFrozenAnchor);
    connect(model_, &QAbstractItemModel::modelReset, this, [this] {
        for (int c = 1; c < model_->columnCount(); ++c) frozen_->setColumnHidden(c, true);
        updateColumnWidths();
    });
    table_->viewport()->installEventFilter(this);

    // Zoom: compact cells that fit the view, or wider ones with a scrollbar.
    auto button = [this](const QString& text, const QString& tip, const QString& name) {
        auto* b = new QToolButton(this);
        b->setText(text);
        b->setToolTip(tip);
        b->setObjectName(name);
        b->setAutoRaise(true);
        return b;
    };
    auto* zoomOut = button(QStringLiteral("−"), tr("Narrower cells (Ctrl+wheel)"), "gridZoomOut");
    auto* zoomIn = button(QStringLiteral("+"), tr("Wider cells: the grid scrolls, the anchor column stays (Ctrl+wheel)"),
                          "gridZoomIn");
    auto* fit = button(tr("Fit"), tr("Fit every block position into the view's width"), "gridZoomFit");
    connect(zoomOut, &QToolButton::clicked, this, [this] { setZoom(zoom_ / 1.25); });
    connect(zoomIn, &QToolButton::clicked, this, [this] { setZoom(zoom_ * 1.25); });
    connect(fit, &QToolButton::clicked, this, [this] { setZoom(1.0); });
    auto* top = new QHBoxLayout;
    top->setContentsMargins(0, 0, 0, 0);
    top->addWidget(summary_, 1);
    top->addWidget(zoomOut, 0, Qt::AlignTop);
    top->addWidget(fit, 0, Qt::AlignTop);
    top->addWidget(zoomIn, 0, Qt::AlignTop);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(top);
    layout->addWidget(table_);

    connect(table_->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& cur) {
                if (cur.isValid()) selection_->select(cur.row(), cur.column());
            });
    connect(selection_, &StepSelection::changed, this, &BlockAgreementView::onSelectionChanged);
    // A click on a step's row header selects that step, keeping the block position shown
    // (the first drafted one when none is).
    for (QTableView* t : {table_, frozen_}) {
        t->verticalHeader()->setSectionsClickable(true);
        t->verticalHeader()->setToolTip(tr("Click a step to select it in every view"));
        connect(t->verticalHeader(), &QHeaderView::sectionClicked, this, [this](int row) {
            if (row < 0 || row >= model_->rowCount()) return;
            const int keep = selection_->position();
            selection_->select(row, keep >= 0 && keep < model_->columnCount() ? keep : std::min(1, model_->columnCount() - 1));
        });
    }
    connect(model_, &QAbstractItemModel::modelReset, this, &BlockAgreementView::updateSummary);
    installExportMenu(table_, exportName(), [this](const QString& p, QString* e) { return exportFigure(p, e); }, model_);
}

void BlockAgreementView::setZoom(double zoom) {
    zoom_ = std::clamp(zoom, 1.0, 4.0);
    updateColumnWidths();
}

void BlockAgreementView::updateColumnWidths() {
    const int columns = model_->columnCount();
    if (columns == 0) return;
    // The anchor column keeps room for its header; the drafted positions share the rest.
    const int anchorW = std::max(kMinCellWidth, table_->horizontalHeader()->fontMetrics().horizontalAdvance(
                                                    model_->headerData(0, Qt::Horizontal).toString()) + 10);
    const int available = table_->viewport()->width() - anchorW;
    const int fitW = std::clamp(columns > 1 ? available / (columns - 1) : available, kMinCellWidth, kCellW);
    const int cellW = static_cast<int>(fitW * zoom_);
    table_->setColumnWidth(0, std::max(anchorW, cellW));
    frozen_->setColumnWidth(0, std::max(anchorW, cellW));
    for (int c = 1; c < columns; ++c) table_->setColumnWidth(c, cellW);
    updateFrozenAnchor();
}

void BlockAgreementView::updateFrozenAnchor() {
    const bool scrolled = table_->horizontalScrollBar()->value() > 0;
    frozen_->setVisible(scrolled && model_->columnCount() > 0);
    if (!scrolled) return;
    const int vh = table_->verticalHeader()->width();
    frozen_->verticalHeader()->setFixedWidth(vh);
    frozen_->horizontalHeader()->setFixedHeight(table_->horizontalHeader()->height());
    frozen_->setGeometry(table_->frameWidth(), table_->frameWidth(), vh + table_->columnWidth(0) + 2,
                         table_->viewport()->height() + table_->horizontalHeader()->height());
    frozen_->verticalScrollBar()->setValue(table_->verticalScrollBar()->value());
}

bool BlockAgreementView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == table_->viewport()) {
        if (event->type() == QEvent::Resize) {
            updateColumnWidths();
        } else if (event->type() == QEvent::Wheel) {
            auto* wheel = static_cast<QWheelEvent*>(event);
            if (wheel->modifiers() & Qt::ControlModifier) {
                setZoom(wheel->angleDelta().y() > 0 ? zoom_ * 1.25 : zoom_ / 1.25);
                return true;
            }
        }
    }
    return QWidget::eventFilter(watched, event);
}

void BlockAgreementView::setCaption(const QString& caption) {
    caption_ = caption;
    updateSummary();
}

void BlockAgreementView::updateSummary() {
    const auto& r = model_->run();
    if (r.steps.empty()) {  // nothing shown: no stale numbers above an empty grid
        summary_->setText(caption_.isEmpty() ? tr("No run shown.") : QStringLiteral("<b>%1</b>").arg(caption_.toHtmlEscaped()));
        return;
    }
    QString text = tr("%1 verify steps, tau %2 (mean acceptance length, bonus token included). "
                      "Green accepted, red first rejection, grey drafted after the cut.")
                       .arg(r.steps.size()).arg(r.tau, 0, 'f', 3);
    if (model_->hasComparison())  // the caption names the drafter and its tau
        text = tr("Green accepted, red first rejection, grey after the cut. Purple frame: where the two drafters "
                  "part from the same anchor (one drafted the target's token, the other did not; %1 cells).")
                   .arg(model_->differingCellCount());
    text += QLatin1Char(' ') + whitespaceLegend();
    summary_->setText(caption_.isEmpty() ? text : QStringLiteral("<b>%1</b><br/>%2").arg(caption_.toHtmlEscaped(), text));
}

void BlockAgreementView::onSelectionChanged(int step, int position) {
    if (step < 0 || step >= model_->rowCount()) return;
    const auto idx = model_->index(step, std::clamp(position, 0, std::max(0, model_->columnCount() - 1)));
    if (table_->currentIndex() != idx) table_->setCurrentIndex(idx);
    table_->scrollTo(idx);
}

QSize BlockAgreementView::gridSize() const {
    const int caption = caption_.isEmpty() ? 0 : kCaptionH;
    return QSize(std::max(kHeaderW + model_->columnCount() * kCellW, 5 * 130 + 8),
                 caption + kLegendH + kHeaderH + model_->rowCount() * kCellH);
}

QSize BlockAgreementView::paintGrid(QPainter* p) const {
    const QSize size = gridSize();
    p->fillRect(QRect(QPoint(0, 0), size), Qt::white);
    QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    font.setPointSize(8);
    p->setFont(font);
    const int top = caption_.isEmpty() ? 0 : kCaptionH;
    if (!caption_.isEmpty()) {
        QFont bold = font;
        bold.setBold(true);
        p->setFont(bold);
        p->setPen(Qt::black);
        p->drawText(QRect(4, 0, size.width() - 8, kCaptionH), Qt::AlignVCenter | Qt::AlignLeft, caption_);
        p->setFont(font);
    }
    p->translate(0, top);
    // Legend.
    const std::pair<CellStatus, QString> legend[] = {{CellStatus::Anchor, tr("anchor")},
                                                     {CellStatus::Accepted, tr("accepted")},
                                                     {CellStatus::Rejected, tr("first rejection")},
                                                     {CellStatus::AfterCut, tr("after the cut")}};
    int x = 4;
    for (const auto& [st, text] : legend) {
        p->fillRect(QRect(x, 4, 14, 14), BlockAgreementModel::colorOf(st));
        p->setPen(Qt::black);
        p->drawRect(QRect(x, 4, 14, 14));
        p->drawText(QRect(x + 18, 2, 120, 18), Qt::AlignVCenter | Qt::AlignLeft, text);
        x += 130;
    }
    if (model_->hasComparison()) {
        p->setPen(QPen(kDiffMark, 2.5));
        p->drawRect(QRect(x, 4, 14, 14));
        p->setPen(Qt::black);
        p->drawText(QRect(x + 18, 2, 220, 18), Qt::AlignVCenter | Qt::AlignLeft, tr("drafters part (same anchor)"));
    }
    p->drawText(QRect(4, 21, size.width() - 8, 18), Qt::AlignVCenter | Qt::AlignLeft, whitespaceLegend());
    const int y0 = kLegendH;
    for (int c = 0; c < model_->columnCount(); ++c)
        p->drawText(QRect(kHeaderW + c * kCellW, y0, kCellW, kHeaderH), Qt::AlignCenter,
                    model_->headerData(c, Qt::Horizontal).toString());
    for (int r = 0; r < model_->rowCount(); ++r) {
        const int y = y0 + kHeaderH + r * kCellH;
        p->setPen(Qt::black);
        p->drawText(QRect(2, y, kHeaderW - 4, kCellH), Qt::AlignVCenter | Qt::AlignLeft,
                    model_->headerData(r, Qt::Vertical).toString());
        for (int c = 0; c < model_->columnCount(); ++c) {
            const auto idx = model_->index(r, c);
            const QRect cell(kHeaderW + c * kCellW, y, kCellW, kCellH);
            // Cells past a clipped last block (current loop) have no data: paper, not black.
            const QVariant background = idx.data(Qt::BackgroundRole);
            p->fillRect(cell, background.isValid() ? background.value<QColor>() : QColor(Qt::white));
            p->setPen(QColor(0xbb, 0xbb, 0xbb));
            p->drawRect(cell);
            p->setPen(idx.data(Qt::ForegroundRole).value<QColor>());
            p->drawText(cell.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft,
                        p->fontMetrics().elidedText(idx.data().toString(), Qt::ElideRight, kCellW - 6));
            if (idx.data(BlockAgreementModel::DiffersRole).toBool()) {
                p->setPen(QPen(kDiffMark, 2.5));
                p->drawRect(QRectF(cell).adjusted(1.5, 1.5, -1.5, -1.5));
            }
        }
    }
    p->translate(0, -top);
    return size;
}

bool BlockAgreementView::exportFigure(const QString& path, QString* error) const {
    return exportPainted(gridSize(), [this](QPainter& p) { paintGrid(&p); }, path, error, figureTitle());
}

namespace {
/// One row per (verify step, block position) with ids, pieces, status and probabilities:
/// the grid in a form scripts can read (the grid's own table holds display strings).
std::unique_ptr<QStandardItemModel> stepRecords(const BlockAgreementModel& m) {
    auto t = std::make_unique<QStandardItemModel>();
    t->setHorizontalHeaderLabels({"step", "position", "absolute_position", "drafted_id", "drafted_piece", "target_id",
                                  "status", "draft_prob", "target_prob_of_draft", "target_rank_in_draft_topk"});
    if (m.hasComparison()) t->setHorizontalHeaderItem(10, new QStandardItem("differs_from_other_drafter"));
    static const char* kStatus[] = {"anchor", "accepted", "rejected", "after_cut"};
    for (int r = 0; r < m.rowCount(); ++r)
        for (int c = 0; c < m.columnCount(); ++c) {
            const auto idx = m.index(r, c);
            auto num = [](const QVariant& v) {  // floats at float precision ("0.9", not "0.8999999761581421")
                if (!v.isValid()) return new QStandardItem(QString());
                if (v.typeId() == QMetaType::Float) return new QStandardItem(QString::number(v.toFloat(), 'g', 7));
                return new QStandardItem(v.toString());
            };
            QList<QStandardItem*> row = {new QStandardItem(QString::number(r + 1)), new QStandardItem(QString::number(c)),
                                         num(idx.data(BlockAgreementModel::AbsolutePositionRole)),
                                         num(idx.data(BlockAgreementModel::DraftTokenRole)),
                                         new QStandardItem(idx.data(kExportRole).toString()),  // raw text
                                         num(c == 0 ? QVariant() : idx.data(BlockAgreementModel::TargetTokenRole)),
                                         new QStandardItem(kStatus[idx.data(BlockAgreementModel::StatusRole).toInt()]),
                                         num(idx.data(BlockAgreementModel::DraftProbRole)),
                                         num(idx.data(BlockAgreementModel::TargetProbRole)),
                                         num(idx.data(BlockAgreementModel::TargetRankRole))};
            if (m.hasComparison())
                row << new QStandardItem(idx.data(BlockAgreementModel::DiffersRole).toBool() ? "1" : "0");
            t->appendRow(row);
        }
    return t;
}
}  // namespace

QStringList BlockAgreementView::exportAll(const QString& dir, QString* error) {
    const auto records = stepRecords(*model_);
    FigureSet set(dir, error);
    set.table(exportName_ == "block_agreement" ? QString("verify_steps") : "verify_steps" + exportName_.mid(15),
              records.get()) &&
        set.figure(exportName(), [this](const QString& path, QString* e) { return exportFigure(path, e); }) &&
        set.table(exportName(), model_);
    return set.written();
}

}  // namespace draftscope
