#include "gui/target_loads_panel.h"

#include "gui/dialog_dirs.h"
#include "gui/tool_run_controls.h"
#include "target_loads_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace draftscope {

TargetLoadsPanel::TargetLoadsPanel(AnalysisController* controller, QWidget* parent)
    : QWidget(parent), controller_(controller), loadA_(new QLabel(this)), dirB_(new QLineEdit(this)),
      dtypeB_(new QComboBox(this)), deviceB_(new QComboBox(this)), controls_(new ToolRunControls(this)),
      view_(new TargetLoadsView(this)) {
    setObjectName("TargetLoadsPanel");
    loadA_->setWordWrap(true);
    dirB_->setObjectName("targetLoadsDirB");
    dirB_->setPlaceholderText(tr("the loaded target's directory"));
    dirB_->setToolTip(tr("Load B's directory: the same model in its other layout (text-only *ForCausalLM or "
                         "vision-language *ForConditionalGeneration), or the loaded target's own directory to compare "
                         "dtype or device alone"));
    auto* browse = new QPushButton(tr("Browse..."), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("Load B: target directory"), lastDialogDir("models"));
        if (!d.isEmpty()) dirB_->setText(d);
    });
    dtypeB_->setObjectName("targetLoadsDtypeB");
    dtypeB_->addItems({"float32", "bfloat16"});
    deviceB_->setObjectName("targetLoadsDeviceB");
    deviceB_->setEditable(true);  // a list splits load B across devices, as the model panel's Device
    deviceB_->addItem("cpu");
    if (cudaAvailable()) deviceB_->addItems({"cuda", "cuda:0,cuda:0"});
    else deviceB_->addItem("cpu,cpu");
    deviceB_->setToolTip(tr("cpu, cuda, cuda:N or a comma-separated list splitting load B's layers across devices "
                            "(cuda:0,cuda:1; cpu,cpu): compared with load A, a split shows no difference%1")
                             .arg(cudaAvailable() ? QString() : tr(". No CUDA device is visible to this build")));
    auto* dirRow = new QHBoxLayout;
    dirRow->addWidget(dirB_, 1);
    dirRow->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("Load A:"), loadA_);
    form->addRow(tr("Load B directory:"), dirRow);
    form->addRow(tr("Load B dtype:"), dtypeB_);
    form->addRow(tr("Load B device:"), deviceB_);
    form->addRow(tr("Prompt:"), new QLabel(tr("the Prompt panel's prompt"), this));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(controls_);
    layout->addWidget(view_, 1);

    connect(controls_, &ToolRunControls::runClicked, this, [this] { run(); });
    connect(controls_, &ToolRunControls::cancelClicked, controller_, &AnalysisController::cancelTool);
    controls_->setExportedView(this);
    connect(controller_, &AnalysisController::toolProgress, this,
            [this](quint64 id, qint64 done, qint64 total, const QString& stage) {
                if (id == current_) controls_->setProgress(done, total, stage);
            });
    connect(controller_, &AnalysisController::targetLoadsCompared, this, [this](const TargetLoadsResultPtr& r) {
        if (r->requestId != current_) return;
        result_ = r;
        controls_->setRunning(false);
        controls_->setExportEnabled(true);
        view_->setComparison(r->comparison, describeTargetLoad(r->targetA, r->loadA), describeTargetLoad(r->targetB, r->loadB));
        const QString verdict = targetLoadsVerdict(r->comparison);
        controls_->setStatus(tr("done"));
        emit logLine(tr("target loads %1: %2").arg(r->requestId).arg(verdict));
    });
    connect(controller_, &AnalysisController::toolCancelled, this, [this](quint64 id) {
        if (id != current_) return;
        controls_->setRunning(false);
        controls_->setStatus(tr("comparison cancelled"));
    });
    connect(controller_, &AnalysisController::failed, this, [this](quint64 id, FailureKind kind, const QString& message) {
        if (kind != FailureKind::TargetLoads || id != current_) return;
        controls_->setRunning(false);
        controls_->setStatus(tr("comparison failed: %1").arg(message));
    });
    setLoadedModels({});
}

QString TargetLoadsPanel::exportName() const { return view_->exportName(); }

void TargetLoadsPanel::setPromptSource(std::function<PromptSpec()> source) { prompt_ = std::move(source); }

void TargetLoadsPanel::setLoadedModels(const ModelRequest& loaded) {
    const bool any = !loaded.targetDir.isEmpty();
    if (any && (dirB_->text().isEmpty() || dirB_->text() == loaded_.targetDir)) dirB_->setText(loaded.targetDir);
    loaded_ = loaded;
    loadA_->setText(any ? tr("%1 (%2, %3): the loaded target").arg(loaded.targetDir, loaded.device, loaded.dtype)
                        : tr("load a target first"));
    controls_->setRunEnabled(any, any ? QString() : tr("Load a target first"));
}

TargetLoadsRequest TargetLoadsPanel::request() const {
    TargetLoadsRequest r;
    if (prompt_) r.prompt = prompt_();
    r.targetBDir = dirB_->text().trimmed();
    r.loadB.device = deviceB_->currentText().trimmed().toStdString();
    r.loadB.dtype = dtypeB_->currentText().toStdString();
    return r;
}

quint64 TargetLoadsPanel::run() {
    const TargetLoadsRequest r = request();
    QString why;
    if (loaded_.targetDir.isEmpty()) why = tr("load a target first");
    else if (r.prompt.kind == PromptSpec::Kind::Text && r.prompt.text.empty()) why = tr("the prompt is empty: type one in the Prompt panel");
    if (!why.isEmpty()) {
        controls_->setStatus(why);
        return 0;
    }
    current_ = controller_->compareTargetLoads(r);
    controls_->setRunning(true);
    controls_->setStatus(tr("comparison %1 queued").arg(current_));
    emit logLine(tr("target loads %1: %2 against %3 (%4, %5)")
                     .arg(current_).arg(loaded_.targetDir, r.targetBDir.isEmpty() ? loaded_.targetDir : r.targetBDir,
                                        QString::fromStdString(r.loadB.device), QString::fromStdString(r.loadB.dtype)));
    return current_;
}

QStringList TargetLoadsPanel::exportAll(const QString& dir, QString* error) {
    view_->setFigureTitle(figureTitle());
    return view_->exportAll(dir, error);
}

}  // namespace draftscope
