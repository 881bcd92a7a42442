#include "gui/inspector_dialog.h"
#include "gui/dialog_dirs.h"

#include "draftscope/errors.h"
#include "figure_export.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <memory>

namespace draftscope {

namespace {

QString shapeText(const std::vector<std::int64_t>& s) {
    QStringList parts;
    for (auto d : s) parts << QString::number(d);
    return "[" + parts.join(", ") + "]";
}

/// A numeric cell that sorts by value and shows 4 significant digits.
QStandardItem* number(double v) {
    auto* it = new QStandardItem(QString::number(v, 'g', 4));
    it->setData(v, Qt::UserRole);
    it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return it;
}

/// An integer cell (e.g. numel) that sorts by value.
QStandardItem* integer(std::int64_t v) {
    auto* it = new QStandardItem(QString::number(qlonglong(v)));
    it->setData(qlonglong(v), Qt::UserRole);
    it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return it;
}

QTableView* makeTable(QStandardItemModel* model) {
    auto* v = new QTableView;
    v->setModel(model);
    v->setSortingEnabled(true);
    v->setEditTriggers(QAbstractItemView::NoEditTriggers);
    v->setSelectionBehavior(QAbstractItemView::SelectRows);
    v->horizontalHeader()->setStretchLastSection(true);
    v->verticalHeader()->hide();
    return v;
}

}  // namespace

InspectorDialog::InspectorDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Checkpoint inspector"));
    resize(1100, 700);
    summary_ = new QLabel(tr("Open a model directory or a .pt training checkpoint."));
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tensors_ = new QStandardItemModel(this);
    tensors_->setHorizontalHeaderLabels({tr("tensor"), tr("shape"), tr("dtype"), tr("numel"), tr("mean"), tr("std"),
                                         tr("rms"), tr("max|x|"), tr("non-finite")});
    config_ = new QStandardItemModel(this);
    config_->setHorizontalHeaderLabels({tr("field"), tr("value")});
    diff_ = new QStandardItemModel(this);
    diff_->setHorizontalHeaderLabels({tr("tensor"), tr("shape A"), tr("shape B"), tr("rms A"), tr("rms B"), tr("max|A-B|"),
                                      tr("|A-B|/|B|"), tr("cosine")});
    for (auto* m : {tensors_, config_, diff_}) m->setSortRole(Qt::UserRole);
    tensorView_ = makeTable(tensors_);
    configView_ = makeTable(config_);
    diffView_ = makeTable(diff_);
    diffView_->setObjectName("diffView");
    check_ = new QPlainTextEdit;
    check_->setReadOnly(true);
    tabs_ = new QTabWidget;
    tabs_->addTab(tensorView_, tr("Tensors"));
    tabs_->addTab(configView_, tr("Config"));
    tabs_->addTab(check_, tr("Architecture check"));
    tabs_->addTab(diffView_, tr("Diff"));

    openButton_ = new QPushButton(tr("Open..."));
    diffButton_ = new QPushButton(tr("Diff against..."));
    exportButton_ = new QPushButton(tr("Export table..."));
    diffButton_->setEnabled(false);
    connect(openButton_, &QPushButton::clicked, this, [this] {
        const auto dir = QFileDialog::getExistingDirectory(this, tr("Checkpoint directory"), lastDialogDir("checkpoints"));
        rememberDialogPath("checkpoints", dir.isEmpty() ? dir : QFileInfo(dir).absolutePath());
        if (!dir.isEmpty()) inspect(dir);
    });
    auto* openPt = new QPushButton(tr("Open .pt..."));
    connect(openPt, &QPushButton::clicked, this, [this] {
        const auto f = QFileDialog::getOpenFileName(this, tr("Training checkpoint"), lastDialogDir("checkpoints"),
                                                    tr("torch.save files (*.pt *.pth *.bin);;All files (*)"));
        rememberDialogPath("checkpoints", f);
        if (!f.isEmpty()) inspect(f);
    });
    connect(diffButton_, &QPushButton::clicked, this, [this] {
        const auto dir = QFileDialog::getExistingDirectory(this, tr("Checkpoint to compare with"), lastDialogDir("checkpoints"));
        rememberDialogPath("checkpoints", dir.isEmpty() ? dir : QFileInfo(dir).absolutePath());
        if (!dir.isEmpty()) diffAgainst(dir);
    });
    connect(exportButton_, &QPushButton::clicked, this, &InspectorDialog::exportCurrentTable);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(openButton_);
    buttons->addWidget(openPt);
    buttons->addWidget(diffButton_);
    buttons->addStretch();
    buttons->addWidget(exportButton_);
    // The checkpoints the window has loaded, one click away.
    loadedRow_ = new QWidget;
    loaded_ = new QComboBox(loadedRow_);
    loaded_->setObjectName("loadedCheckpoints");
    loaded_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    auto* inspectLoaded = new QPushButton(tr("Inspect"), loadedRow_);
    diffLoaded_ = new QPushButton(tr("Diff against it"), loadedRow_);
    diffLoaded_->setEnabled(false);
    connect(inspectLoaded, &QPushButton::clicked, this, [this] {
        if (loaded_->currentIndex() >= 0) inspect(loaded_->currentData().toString());
    });
    connect(diffLoaded_, &QPushButton::clicked, this, [this] {
        if (loaded_->currentIndex() >= 0) diffAgainst(loaded_->currentData().toString());
    });
    auto* loadedLayout = new QHBoxLayout(loadedRow_);
    loadedLayout->setContentsMargins(0, 0, 0, 0);
    loadedLayout->addWidget(new QLabel(tr("Loaded in the window:"), loadedRow_));
    loadedLayout->addWidget(loaded_);
    loadedLayout->addWidget(inspectLoaded);
    loadedLayout->addWidget(diffLoaded_);
    loadedLayout->addStretch();
    loadedRow_->hide();
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(loadedRow_);
    layout->addWidget(summary_);
    layout->addWidget(tabs_, 1);
    layout->addLayout(buttons);
}

void InspectorDialog::setLoadedCheckpoints(const QList<QPair<QString, QString>>& checkpoints) {
    loaded_->clear();
    for (const auto& [label, path] : checkpoints) loaded_->addItem(QStringLiteral("%1: %2").arg(label, path), path);
    loadedRow_->setVisible(!checkpoints.isEmpty());
}

QStringList InspectorDialog::loadedCheckpoints() const {
    QStringList out;
    for (int i = 0; i < loaded_->count(); ++i) out << loaded_->itemData(i).toString();
    return out;
}

bool InspectorDialog::busy() const { return watcher_.isRunning(); }

QString InspectorDialog::checkText() const { return check_->toPlainText(); }

void InspectorDialog::inspect(const QString& path) {
    if (busy()) return;
    path_ = path;
    summary_->setText(tr("Reading %1 and computing statistics...").arg(path));
    openButton_->setEnabled(false);
    diffButton_->setEnabled(false);
    auto result = std::make_shared<CheckpointInspection>();
    auto error = std::make_shared<QString>();
    const std::string p = path.toStdString();
    watcher_.disconnect(this);
    connect(&watcher_, &QFutureWatcher<void>::finished, this, [this, result, error] {
        openButton_->setEnabled(true);
        if (!error->isEmpty()) return fail(*error);
        showInspection(*result);
        diffButton_->setEnabled(true);
        diffLoaded_->setEnabled(true);
        emit finished(true, {});
    });
    watcher_.setFuture(QtConcurrent::run([p, result, error] {
        try {
            *result = inspectCheckpoint(p);
        } catch (const std::exception& e) {
            *error = QString::fromStdString(e.what());
        }
    }));
}

void InspectorDialog::diffAgainst(const QString& other) {
    if (busy() || path_.isEmpty()) return;
    summary_->setText(tr("Comparing %1 with %2...").arg(path_, other));
    diffButton_->setEnabled(false);
    auto result = std::make_shared<CheckpointDiff>();
    auto error = std::make_shared<QString>();
    const std::string a = path_.toStdString(), b = other.toStdString();
    watcher_.disconnect(this);
    connect(&watcher_, &QFutureWatcher<void>::finished, this, [this, result, error] {
        diffButton_->setEnabled(true);
        if (!error->isEmpty()) return fail(*error);
        showDiff(*result);
        emit finished(true, {});
    });
    watcher_.setFuture(QtConcurrent::run([a, b, result, error] {
        try {
            *result = diffCheckpoints(a, b);
        } catch (const std::exception& e) {
            *error = QString::fromStdString(e.what());
        }
    }));
}

void InspectorDialog::fail(const QString& message) {
    summary_->setText(tr("Error: %1").arg(message));
    emit finished(false, message);
}

void InspectorDialog::showInspection(const CheckpointInspection& r) {
    const QString family = r.family.empty() ? QString()
                           : tr("<br>%1 drafter%2").arg(QString::fromStdString(r.family),
                                                       r.familyDetail.empty() ? QString()
                                                                              : ": " + QString::fromStdString(r.familyDetail).toHtmlEscaped());
    summary_->setText(tr("<b>%1</b><br>%2%3; %4%8<br>%5 parameters in %6 tensors, %7 MiB")
                          .arg(QString::fromStdString(r.path).toHtmlEscaped(), QString::fromStdString(r.kind),
                               r.architecture.empty() ? QString() : " (" + QString::fromStdString(r.architecture) + ")",
                               QString::fromStdString(r.source).toHtmlEscaped(), QLocale().toString(qlonglong(r.totalParameters)),
                               QString::number(r.tensors.size()), QString::number(double(r.totalBytes) / (1 << 20), 'f', 1),
                               family));
    tensors_->setRowCount(0);
    tensorView_->setSortingEnabled(false);
    for (const auto& t : r.tensors) {
        auto* name = new QStandardItem(QString::fromStdString(t.name));
        name->setData(name->text(), Qt::UserRole);
        auto* shape = new QStandardItem(shapeText(t.shape));
        shape->setData(qlonglong(t.numel), Qt::UserRole);
        auto* dtype = new QStandardItem(QString::fromStdString(t.dtype));
        dtype->setData(dtype->text(), Qt::UserRole);
        QList<QStandardItem*> row{name, shape, dtype, integer(t.numel), number(t.mean), number(t.std),
                                  number(t.rms), number(t.maxAbs), integer(t.nonFinite)};
        if (t.nonFinite)
            for (auto* it : row) it->setBackground(QColor(255, 210, 210));
        tensors_->appendRow(row);
    }
    tensorView_->setSortingEnabled(true);
    tensorView_->resizeColumnsToContents();
    config_->setRowCount(0);
    for (const auto& [k, v] : r.configFields) {
        auto* key = new QStandardItem(QString::fromStdString(k));
        key->setData(key->text(), Qt::UserRole);
        auto* val = new QStandardItem(QString::fromStdString(v));
        val->setData(val->text(), Qt::UserRole);
        config_->appendRow({key, val});
    }
    configView_->resizeColumnToContents(0);
    QStringList lines;
    if (!r.architectureChecked) {
        lines << tr("Architecture check skipped (see the note below).");
    } else if (r.missing.empty() && r.mismatched.empty() && r.unexpected.empty()) {
        lines << tr("Every tensor the %1 architecture expects is present with the right shape; nothing extra.")
                     .arg(QString::fromStdString(r.architecture));
    } else {
        lines << tr("%1 missing, %2 mismatched, %3 unexpected").arg(r.missing.size()).arg(r.mismatched.size()).arg(r.unexpected.size());
        for (const auto& m : r.missing) lines << "missing:    " + QString::fromStdString(m);
        for (const auto& m : r.mismatched) lines << "mismatched: " + QString::fromStdString(m);
        for (const auto& m : r.unexpected) lines << "unexpected: " + QString::fromStdString(m);
    }
    for (const auto& n : r.notes) lines << "note: " + QString::fromStdString(n);
    check_->setPlainText(lines.join('\n'));
    diff_->setRowCount(0);
}

void InspectorDialog::showDiff(const CheckpointDiff& d) {
    summary_->setText(tr("<b>%1</b> against <b>%2</b>: %3 common tensors, %4 only in A, %5 only in B")
                          .arg(QString::fromStdString(d.pathA).toHtmlEscaped(), QString::fromStdString(d.pathB).toHtmlEscaped())
                          .arg(d.common.size())
                          .arg(d.onlyA.size())
                          .arg(d.onlyB.size()));
    diff_->setRowCount(0);
    diffView_->setSortingEnabled(false);
    for (const auto& t : d.common) {
        auto* name = new QStandardItem(QString::fromStdString(t.name));
        name->setData(name->text(), Qt::UserRole);
        auto* sa = new QStandardItem(shapeText(t.shapeA));
        auto* sb = new QStandardItem(shapeText(t.shapeB));
        QList<QStandardItem*> row{name, sa, sb, number(t.rmsA), number(t.rmsB), number(t.maxAbsDiff),
                                  number(t.relativeDiff), number(t.cosine)};
        if (!t.sameShape)
            for (auto* it : row) it->setBackground(QColor(255, 210, 210));
        diff_->appendRow(row);
    }
    diffView_->setSortingEnabled(true);
    diffView_->sortByColumn(6, Qt::DescendingOrder);  // largest relative change first
    diffView_->resizeColumnsToContents();
    tabs_->setCurrentWidget(diffView_);
}

void InspectorDialog::exportCurrentTable() {
    const QStandardItemModel* model = tabs_->currentWidget() == configView_ ? config_
                                      : tabs_->currentWidget() == diffView_ ? diff_
                                                                            : tensors_;
    const auto path = QFileDialog::getSaveFileName(this, tr("Export table"), lastDialogFile("export", "inspection.csv"),
                                                   tr("CSV (*.csv);;JSON (*.json)"));
    if (path.isEmpty()) return;
    rememberDialogPath("export", path);
    QString error;
    if (!exportTable(model, path, &error)) QMessageBox::warning(this, tr("Export failed"), error);
}

}  // namespace draftscope
