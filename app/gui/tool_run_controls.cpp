#include "gui/tool_run_controls.h"

#include "exportable_view.h"
#include "gui/dialog_dirs.h"

#include <QFileDialog>
#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

#include <algorithm>

namespace draftscope {

ToolRunControls::ToolRunControls(QWidget* parent)
    : QWidget(parent), run_(new QPushButton(tr("Run"), this)), cancel_(new QPushButton(tr("Cancel"), this)),
      export_(new QPushButton(tr("Export..."), this)), progress_(new QProgressBar(this)), status_(new QLabel(this)) {
    run_->setObjectName("toolRun");
    cancel_->setObjectName("toolCancel");
    export_->setObjectName("toolExport");
    export_->setToolTip(tr("Write the figure (PNG, SVG, PDF) and the table (CSV, JSON) into a directory"));
    status_->setObjectName("toolStatus");
    status_->setWordWrap(true);
    progress_->setTextVisible(true);
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(run_, 0, 0);
    grid->addWidget(cancel_, 0, 1);
    grid->addWidget(progress_, 0, 2);
    grid->addWidget(export_, 0, 3);
    grid->addWidget(status_, 1, 0, 1, 4);
    grid->setColumnStretch(2, 1);
    connect(run_, &QPushButton::clicked, this, &ToolRunControls::runClicked);
    connect(cancel_, &QPushButton::clicked, this, &ToolRunControls::cancelClicked);
    connect(export_, &QPushButton::clicked, this, [this] {
        if (!exported_) return;
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export into directory"), lastDialogDir("export"));
        if (dir.isEmpty()) return;
        rememberDialogPath("export", dir);
        QString err;
        const auto written = exported_->exportAll(dir, &err);
        setStatus(err.isEmpty() ? tr("exported %1 files to %2").arg(written.size()).arg(dir) : err);
    });
    setRunning(false);
    setExportEnabled(false);
}

void ToolRunControls::setRunning(bool running) {
    running_ = running;
    run_->setEnabled(runEnabled_ && !running);
    cancel_->setEnabled(running);
    if (running) {
        progress_->setRange(0, 0);  // busy until the first progress report
        progress_->setValue(0);
    }
}

void ToolRunControls::setProgress(qint64 done, qint64 total, const QString& stage) {
    progress_->setRange(0, static_cast<int>(std::max<qint64>(total, 1)));
    progress_->setValue(static_cast<int>(done));
    progress_->setFormat(QStringLiteral("%1 / %2").arg(done).arg(total));
    setStatus(stage);
}

void ToolRunControls::setStatus(const QString& text) {
    status_->setText(text);
    status_->setToolTip(text);
}

QString ToolRunControls::status() const { return status_->text(); }

void ToolRunControls::setRunEnabled(bool enabled, const QString& why) {
    runEnabled_ = enabled;
    run_->setEnabled(enabled && !running_);
    run_->setToolTip(why);
}

void ToolRunControls::setExportEnabled(bool enabled) { export_->setEnabled(enabled); }

}  // namespace draftscope
