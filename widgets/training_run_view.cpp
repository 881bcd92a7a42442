#include "training_run_view.h"

#include "figure_export.h"
#include "heatmap_plot.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>
#include <map>

namespace draftscope {

namespace {

const QColor kChain(0x1f, 0x77, 0xb4), kTeacher(0x2c, 0xa0, 0x2c), kLog(0x7f, 0x7f, 0x7f);
const QColor kTree[] = {QColor(0xff, 0x7f, 0x0e), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                        QColor(0xe3, 0x77, 0xc2)};

QVector<double> vec(const std::vector<double>& v) { return QVector<double>(v.begin(), v.end()); }

QCPGraph* line(QCustomPlot* p, const std::vector<double>& x, const std::vector<double>& y, const QColor& color,
               const QString& name, Qt::PenStyle style = Qt::SolidLine, QCPAxis* valueAxis = nullptr) {
    auto* g = p->addGraph(p->xAxis, valueAxis ? valueAxis : p->yAxis);
    g->setData(vec(x), vec(y), /*alreadySorted=*/true);
    g->setPen(QPen(color, 1.8, style));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, Qt::white, 6));
    g->setName(name);
    return g;
}

}  // namespace

TrainingRunView::TrainingRunView(QWidget* parent)
    : QWidget(parent), model_(new TrainingRunModel(this)), findings_(new QStandardItemModel(this)) {
    setObjectName("TrainingRunView");
    summary_ = new QLabel(this);
    summary_->setObjectName("trainingRunSummary");
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tau_ = makePlot("training_run_tau", tr("tau over training steps"), tr("acceptance length"),
                    tr("Free-running tau (chain, and each DDTree budget) of every checkpoint on the run's prompt set, the "
                       "teacher-forced expected acceptance (training-style), and the trainer's logged metric (right "
                       "axis). Red lines: regressions; orange: where the train-vs-inference gap widens; the star: the "
                       "best checkpoint. Click a point to open that checkpoint as drafter A, Shift+click as B."));
    gap_ = makePlot("training_run_gap", tr("train-vs-inference gap"), tr("tokens per block"),
                    tr("Teacher-forced expected acceptance minus free-running tau, per prompt then averaged "
                       "(docs/TRACK.md). A widening gap: the drafter drafts better under teacher forcing than for real."));
    positions_ = new HeatmapPlot(this);
    positions_->setObjectName("training_run_positions");
    positions_->setTitle(tr("per-position acceptance"));
    positions_->setAxisLabels(tr("training step"), tr("block position"));
    positions_->colorMap()->setGradient(QCPColorGradient::gpThermal);
    positions_->colorMap()->setDataRange(QCPRange(0, 1));
    positions_->setToolTip(tr("For each checkpoint (column) and block position j (row), the fraction of verify steps "
                              "whose accepted prefix reaches j. Click a column to open that checkpoint."));
    positions_->setMinimumSize(280, 200);
    positions_->setExportSizing({300, 220}, {520, 360});
    auto* scale = new QCPColorScale(positions_);
    positions_->plotLayout()->addElement(1, 1, scale);
    scale->setType(QCPAxis::atRight);
    scale->axis()->setLabel(tr("fraction of steps reaching j"));
    scale->axis()->setLabelFont(QFont("DejaVu Sans", 9));
    scale->axis()->setTickLabelFont(QFont("DejaVu Sans", 8));
    positions_->colorMap()->setColorScale(scale);
    scale->setGradient(QCPColorGradient::gpThermal);
    scale->setDataRange(QCPRange(0, 1));
    auto* group = new QCPMarginGroup(positions_);
    positions_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    positions_->installExportMenu("training_run_positions", [this] { return figureTitle(); }, model_);
    connect(positions_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        const double key = positions_->xAxis->pixelToCoord(e->pos().x());
        const int col = static_cast<int>(std::lround(key));
        if (col >= 0 && col < static_cast<int>(series_.steps.size())) activate(col, e->modifiers() & Qt::ShiftModifier);
    });
    table_ = new QTableView(this);
    table_->setObjectName("trainingRunTable");
    table_->setModel(model_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setToolTip(tr("Every checkpoint of the run. Click a done checkpoint to open it as drafter A, Shift+click as B."));
    connect(table_, &QTableView::clicked, this, [this](const QModelIndex& ix) {
        const auto& c = model_->checkpoint(ix.row());
        for (std::size_t i = 0; i < series_.steps.size(); ++i)
            if (static_cast<std::int64_t>(series_.steps[i]) == c.checkpoint.step)
                activate(static_cast<int>(i), QApplication::keyboardModifiers() & Qt::ShiftModifier);
    });
    for (auto* p : {tau_, gap_})
        connect(p, &QCustomPlot::plottableClick, this, [this](QCPAbstractPlottable* pl, int dataIndex, QMouseEvent* e) {
            auto* g = qobject_cast<QCPGraph*>(pl);
            if (!g || g->valueAxis() != g->parentPlot()->yAxis || dataIndex < 0 || dataIndex >= g->dataCount()) return;
            const double step = (g->data()->constBegin() + dataIndex)->key;
            for (std::size_t i = 0; i < series_.steps.size(); ++i)
                if (series_.steps[i] == step) activate(static_cast<int>(i), e->modifiers() & Qt::ShiftModifier);
        });

    auto* plots = new QSplitter(Qt::Horizontal, this);
    auto* left = new QSplitter(Qt::Vertical, plots);
    left->addWidget(tau_);
    left->addWidget(gap_);
    left->setStretchFactor(0, 3);
    left->setStretchFactor(1, 2);
    plots->addWidget(left);
    plots->addWidget(positions_);
    plots->setStretchFactor(0, 3);
    plots->setStretchFactor(1, 2);
    auto* outer = new QSplitter(Qt::Vertical, this);
    outer->addWidget(plots);
    outer->addWidget(table_);
    outer->setStretchFactor(0, 3);
    outer->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(summary_);
    layout->addWidget(outer, 1);
    clear();
}

QCustomPlot* TrainingRunView::makePlot(const QString& name, const QString& title, const QString& yLabel, const QString& tip) {
    auto* p = new QCustomPlot(this);
    p->setObjectName(name);
    p->setToolTip(tip);
    p->setMinimumSize(300, 160);
    p->plotLayout()->insertRow(0);
    p->plotLayout()->addElement(0, 0, new QCPTextElement(p, title, QFont("DejaVu Sans", 9, QFont::Bold)));
    p->legend->setVisible(true);
    p->legend->setFont(QFont("DejaVu Sans", 8));
    // The legend under the plot, in one row: it never hides a checkpoint.
    auto* legendRow = new QCPLayoutGrid;
    p->plotLayout()->addElement(2, 0, legendRow);
    legendRow->setMargins(QMargins(5, 0, 5, 5));
    legendRow->addElement(0, 0, p->legend);
    p->legend->setFillOrder(QCPLegend::foColumnsFirst);
    p->plotLayout()->setRowStretchFactor(2, 0.001);
    p->xAxis->setLabel(tr("training step"));
    p->yAxis->setLabel(yLabel);
    installExportMenu(p, name, [this, p](const QString& path, QString* e) { return exportPlot(p, path, e, 0, 0, figureTitle()); },
                      model_);
    return p;
}

void TrainingRunView::clear() {
    index_ = {};
    series_ = {};
    model_->setIndex({});
    findings_->clear();
    findings_->setHorizontalHeaderLabels({tr("finding"), tr("step"), tr("from step"), tr("message")});
    for (auto* p : {tau_, gap_}) {
        p->clearPlottables();
        p->clearItems();
        p->replot();
    }
    positions_->setCells({});
    summary_->setText(tr("No training run open: File > Open training run... (a directory written by "
                         "draftscope-cli track)."));
}

void TrainingRunView::setIndex(const TrackIndex& index, const QString& source) {
    index_ = index;
    series_ = trainingRunSeries(index);
    model_->setIndex(index);
    findings_->removeRows(0, findings_->rowCount());
    for (const auto& f : index.findings)
        findings_->appendRow({new QStandardItem(QString::fromStdString(f.id)), new QStandardItem(QString::number(f.step)),
                              new QStandardItem(QString::number(f.fromStep)), new QStandardItem(QString::fromStdString(f.message))});
    std::size_t done = 0;
    for (const auto& c : index.checkpoints) done += c.status == "done";
    QStringList lines;
    lines << tr("Run %1: %2 checkpoint(s), %3 evaluated%4.")
                 .arg(QString::fromStdString(index.runDir))
                 .arg(index.checkpoints.size())
                 .arg(done)
                 .arg(series_.bestIndex >= 0 ? tr("; best step %1 (tau %2)")
                                                   .arg(index.bestStep)
                                                   .arg(series_.tau[static_cast<std::size_t>(series_.bestIndex)], 0, 'f', 3)
                                             : QString());
    lines << (index.trainerLog ? tr("Trainer log: %1 (%2).").arg(QString::fromStdString(index.trainerLog->path),
                                                               QString::fromStdString(index.trainerLog->metric))
                               : tr("Trainer log: %1.").arg(QString::fromStdString(index.trainerLogNote)));
    for (const auto& f : index.findings)
        lines << QStringLiteral("<b>%1</b> at step %2: %3")
                     .arg(QString::fromStdString(f.id))
                     .arg(f.step)
                     .arg(QString::fromStdString(f.message).toHtmlEscaped());
    if (index.findings.empty() && done > 1) lines << tr("No regression, no widening gap.");
    if (!source.isEmpty()) lines << tr("Index %1, updated %2.").arg(source, QString::fromStdString(index.updatedUtc));
    summary_->setText(lines.join("<br>"));
    table_->resizeColumnsToContents();
    plotTau();
    plotGap();
    plotPositions();
}

QString TrainingRunView::summaryText() const { return summary_->text(); }

void TrainingRunView::activate(int i, bool asB) {
    if (i < 0 || i >= static_cast<int>(series_.paths.size())) return;
    emit checkpointActivated(QString::fromStdString(series_.paths[static_cast<std::size_t>(i)]), asB,
                             QString::fromStdString(index_.targetDir), QString::fromStdString(index_.promptSetPath));
}

void TrainingRunView::addMarkers(QCustomPlot* p) {
    std::map<double, int> atStep;  // markers already at a step: their labels stack downwards
    for (const auto& m : series_.markers) {
        const int stacked = atStep[m.step]++;
        auto* l = new QCPItemStraightLine(p);
        l->point1->setCoords(m.step, 0);
        l->point2->setCoords(m.step, 1);
        const bool regression = m.id == "regression";
        l->setPen(QPen(regression ? QColor(0xd6, 0x27, 0x28) : QColor(0xff, 0x99, 0x00), 1.2, Qt::DashLine));
        auto* t = new QCPItemText(p);
        t->position->setType(QCPItemPosition::ptPlotCoords);
        t->position->setAxes(p->xAxis, p->yAxis);
        const auto r = p->yAxis->range();
        t->position->setCoords(m.step, r.upper - 0.07 * stacked * r.size());
        t->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        t->setText(regression ? tr(" regression") : tr(" gap widens"));
        t->setFont(QFont("DejaVu Sans", 7));
        t->setColor(l->pen().color());
    }
}

void TrainingRunView::plotTau() {
    tau_->clearPlottables();
    tau_->clearItems();
    const auto& s = series_;
    if (!s.steps.empty()) {
        line(tau_, s.steps, s.tau, kChain, tr("chain tau"));
        for (std::size_t b = 0; b < s.treeBudgets.size(); ++b)
            line(tau_, s.steps, s.treeTau[b], kTree[b % 4], tr("DDTree %1").arg(s.treeBudgets[b]), Qt::DashLine);
        line(tau_, s.steps, s.teacherForcedExpected, kTeacher, tr("teacher-forced expected"), Qt::DotLine);
        if (s.bestIndex >= 0) {
            auto* best = tau_->addGraph();
            best->setData({s.steps[static_cast<std::size_t>(s.bestIndex)]}, {s.tau[static_cast<std::size_t>(s.bestIndex)]});
            best->setLineStyle(QCPGraph::lsNone);
            best->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssStar, QColor(0xd6, 0x27, 0x28), 14));
            best->setName(tr("best"));
        }
    }
    tau_->yAxis2->setVisible(!s.logSteps.empty());
    if (!s.logSteps.empty()) {
        auto* g = line(tau_, s.logSteps, s.logValues, kLog, tr("logged %1").arg(QString::fromStdString(s.logMetric)),
                       Qt::SolidLine, tau_->yAxis2);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssNone));
        tau_->yAxis2->setLabel(tr("logged %1").arg(QString::fromStdString(s.logMetric)));
    }
    tau_->rescaleAxes();
    const auto r = tau_->yAxis->range();
    tau_->yAxis->setRange(std::min(1.0, r.lower) - 0.05, r.upper + 0.1 * std::max(0.5, r.size()));
    tau_->xAxis->scaleRange(1.08);
    addMarkers(tau_);
    tau_->replot();
}

void TrainingRunView::plotGap() {
    gap_->clearPlottables();
    gap_->clearItems();
    if (!series_.steps.empty()) {
        line(gap_, series_.steps, series_.gap, kTeacher, tr("gap"));
        auto* zero = new QCPItemStraightLine(gap_);
        zero->point1->setCoords(0, 0);
        zero->point2->setCoords(1, 0);
        zero->setPen(QPen(Qt::gray, 1, Qt::DotLine));
    }
    gap_->rescaleAxes();
    const auto r = gap_->yAxis->range();
    gap_->yAxis->setRange(std::min(0.0, r.lower) - 0.05, std::max(0.0, r.upper) + 0.1 * std::max(0.5, r.size()));
    gap_->xAxis->setRange(tau_->xAxis->range());  // one step axis for both plots
    addMarkers(gap_);
    gap_->replot();
}

void TrainingRunView::plotPositions() {
    HeatmapCells cells;
    const auto& s = series_;
    cells.rows = static_cast<int>(s.positionAcceptance.size());
    cells.cols = cells.rows ? static_cast<int>(s.steps.size()) : 0;
    for (const auto& row : s.positionAcceptance) cells.values.insert(cells.values.end(), row.begin(), row.end());
    for (double st : s.steps) cells.columnLabels << QString::number(static_cast<qlonglong>(st));
    for (int j = 1; j <= cells.rows; ++j) cells.rowLabels << QString::number(j);
    positions_->setCells(cells);
}

QStringList TrainingRunView::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.plot("training_run_tau", tau_, 900, 520, figureTitle());
    set.plot("training_run_gap", gap_, 900, 360, figureTitle());
    set.figure("training_run_positions", [this](const QString& path, QString* e) {
        return positions_->exportFigure(path, e, figureTitle());
    });
    set.table("training_run", model_);
    set.table("training_run_findings", findings_);
    return set.written();
}

}  // namespace draftscope
