#include "target_loads_view.h"

#include "figure_export.h"
#include "plot_legend.h"

#include <qcustomplot.h>

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace draftscope {

QString targetLoadsVerdict(const TargetLoadComparison& c) {
    if (c.layers.empty()) return {};
    bool identical = c.logitsMaxAbs == 0;
    const LayerDifference* worst = &c.layers.front();
    const LayerDifference* firstBelow = nullptr;
    for (const auto& l : c.layers) {
        identical = identical && l.maxAbs == 0;
        if (l.minCosine < worst->minCosine) worst = &l;
        if (!firstBelow && l.minCosine < kTargetLoadsCloseCosine) firstBelow = &l;
    }
    const QString agreement = QObject::tr("argmax agreement %1%").arg(100 * c.argmaxAgreement, 0, 'f', 1);
    if (identical)
        return QObject::tr("Identical: every hidden state and logit of the two loads is equal (%1 tokens).").arg(c.ids.size());
    const QString worstText = QObject::tr("lowest cosine %1 at hidden state %2").arg(worst->minCosine, 0, 'f', 6).arg(worst->index);
    if (!firstBelow)
        return QObject::tr("Close: rounding-level differences (every hidden state's cosine >= %1; %2; %3, logits max "
                           "|A-B| %4), as float32 vs bfloat16 or CPU vs CUDA kernels give (an argmax near a tie can "
                           "flip under rounding).")
            .arg(kTargetLoadsCloseCosine).arg(worstText, agreement).arg(c.logitsMaxAbs, 0, 'g', 4);
    return QObject::tr("Different: %1; %2. A target loaded through the wrong class or with the wrong kernels looks "
                       "like this.")
        .arg(QObject::tr("hidden states diverge from index %1 on (cosine %2 < %3)")
                 .arg(firstBelow->index).arg(firstBelow->minCosine, 0, 'f', 6).arg(kTargetLoadsCloseCosine),
             agreement);
}

QString describeTargetLoad(const ModelSummary& model, const LoadOptions& load) {
    return QStringLiteral("%1 (%2, %3, %4)")
        .arg(QString::fromStdString(model.directory), QString::fromStdString(model.architecture),
             QString::fromStdString(load.device), QString::fromStdString(load.dtype));
}

TargetLoadsView::TargetLoadsView(QWidget* parent)
    : QWidget(parent), verdict_(new QLabel(this)), plot_(new QCustomPlot(this)), table_(new QStandardItemModel(this)) {
    setObjectName("TargetLoadsView");
    verdict_->setObjectName("targetLoadsVerdict");
    verdict_->setWordWrap(true);
    verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    plot_->setObjectName(exportName());
    plot_->setMinimumHeight(240);
    plot_->xAxis->setLabel(tr("hidden state index (0 = embeddings, L = after the final norm)"));
    plot_->yAxis->setLabel(tr("cosine(A, B) over positions"));
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, tr("Target loads A vs B: cosine per hidden state")));
    plot_->legend->setFont(QFont(font().family(), 8));
    placeLegendBelow(plot_);
    plot_->legend->setWrap(2);
    auto* tableView = new QTableView(this);
    tableView->setObjectName("targetLoadsTable");
    tableView->setModel(table_);
    tableView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    tableView->verticalHeader()->setVisible(false);
    tableView->horizontalHeader()->setStretchLastSection(true);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(plot_);
    split->addWidget(tableView);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(verdict_);
    layout->addWidget(split, 1);
    const auto render = [this](const QString& p, QString* e) { return exportPlot(plot_, p, e, 0, 0, figureTitle()); };
    installExportMenu(plot_, exportName(), render, table_);
    installExportMenu(tableView, exportName(), render, table_);
    clear();
}

void TargetLoadsView::clear() { setComparison({}, {}, {}); }

void TargetLoadsView::setComparison(const TargetLoadComparison& c, const QString& loadA, const QString& loadB) {
    table_->clear();
    table_->setHorizontalHeaderLabels({tr("index"), tr("max |A-B|"), tr("relative"), tr("min cosine"), tr("mean cosine")});
    plot_->clearPlottables();
    QVector<double> x, minCos, meanCos;
    for (const auto& l : c.layers) {
        x << static_cast<double>(l.index);
        minCos << l.minCosine;
        meanCos << l.meanCosine;
        QList<QStandardItem*> row;
        for (const QVariant& v : {QVariant(static_cast<qlonglong>(l.index)), QVariant(l.maxAbs), QVariant(l.relativeMaxAbs),
                                  QVariant(l.minCosine), QVariant(l.meanCosine)}) {
            auto* it = new QStandardItem;
            it->setData(v, Qt::DisplayRole);
            row << it;
        }
        table_->appendRow(row);
    }
    auto* gMin = plot_->addGraph();
    gMin->setName(tr("min cosine over positions"));
    gMin->setData(x, minCos, true);
    gMin->setPen(QPen(QColor(0xc6, 0x28, 0x28), 2));
    gMin->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(0xc6, 0x28, 0x28), 6));
    auto* gMean = plot_->addGraph();
    gMean->setName(tr("mean cosine over positions"));
    gMean->setData(x, meanCos, true);
    gMean->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 1.5, Qt::DashLine));
    gMean->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, QColor(0x1f, 0x77, 0xb4), 5));
    double lo = minCos.isEmpty() ? 0.0 : 1.0;  // nothing shown: the whole range
    for (double v : minCos) lo = std::min(lo, v);
    const double pad = std::max(1e-6, (1 - lo) * 0.1);
    plot_->yAxis->setRange(lo - pad, 1 + pad);
    plot_->xAxis->setRange(-0.5, x.isEmpty() ? 1 : x.back() + 0.5);
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    ticker->setTickStep(1);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    plot_->xAxis->setTicker(ticker);
    plot_->replot();
    verdictText_ = targetLoadsVerdict(c);
    verdict_->setText(c.layers.empty()
                          ? tr("Tools > Compare target loads: the loaded target (load A) against another load of the same model "
                               "(load B: its other layout's directory, another dtype or device).")
                          : tr("<b>A</b>: %1<br><b>B</b>: %2<br>%3 tokens. %4")
                                .arg(loadA.toHtmlEscaped(), loadB.toHtmlEscaped())
                                .arg(c.ids.size())
                                .arg(verdictText_.toHtmlEscaped()));
}

QStringList TargetLoadsView::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.plot(exportName(), plot_, 720, 420, figureTitle()) && set.table(exportName(), table_);
    return set.written();
}

}  // namespace draftscope
