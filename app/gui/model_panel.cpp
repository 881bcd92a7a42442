#include "gui/model_panel.h"
#include "draftscope/settings_validation.h"

#include <algorithm>
#include "gui/dialog_dirs.h"

#include <QCheckBox>
#include <QFileInfo>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QToolButton>

namespace draftscope {

namespace {

/// A QFormLayout gives a word-wrapped label its one-line height unless the label asks for
/// more: its minimum height becomes the height its text needs at its width (at least 200
/// px); no text asks for nothing. The panel's minimum height, and so the Models dock's,
/// follows (the dock grows to show drafter B's summary line without further help).
void askWrappedHeight(QLabel* label) {
    label->setMinimumHeight(label->text().isEmpty() ? 0 : label->heightForWidth(std::max(label->width(), 200)));
}

QComboBox* dirCombo(QWidget* parent, const QString& key) {
    auto* c = new QComboBox(parent);
    c->setEditable(true);
    c->setInsertPolicy(QComboBox::NoInsert);
    c->setMinimumContentsLength(24);
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->addItems(QSettings().value(key).toStringList());
    c->setCurrentText(QString());
    return c;
}

QWidget* withBrowse(QWidget* parent, QComboBox* combo, const QString& title) {
    auto* w = new QWidget(parent);
    auto* h = new QHBoxLayout(w);
    h->setContentsMargins(0, 0, 0, 0);
    auto* b = new QToolButton(w);
    b->setText("...");
    b->setToolTip(QObject::tr("Choose a directory"));
    QObject::connect(b, &QToolButton::clicked, w, [=] {
        // Start at the field's directory, else where the last model directory was chosen.
        const QString current = combo->currentText().trimmed();
        const QString d = QFileDialog::getExistingDirectory(
            w, title, QFileInfo(current).isDir() ? current : lastDialogDir("models"));
        if (d.isEmpty()) return;
        rememberDialogPath("models", QFileInfo(d).absolutePath());
        combo->setCurrentText(d);
    });
    h->addWidget(combo, 1);
    h->addWidget(b);
    return w;
}
QString canonicalOrAsTyped(const QString& dir) {
    if (dir.isEmpty()) return dir;
    const QFileInfo fi(dir);
    const QString c = fi.canonicalFilePath();
    return c.isEmpty() ? QDir::cleanPath(fi.absoluteFilePath()) : c;
}
/// Two comma-separated lists with the same entries ("cuda:0, cuda:1" is "cuda:0,cuda:1"),
/// as settings_validation.h's parsers read them.
bool sameList(const QString& a, const QString& b) {
    auto entries = [](const QString& l) {
        QStringList e = l.split(',');
        for (auto& x : e) x = x.trimmed();
        return e;
    };
    return entries(a) == entries(b);
}
}  // namespace

bool sameModels(const ModelRequest& a, const ModelRequest& b) {
    return canonicalOrAsTyped(a.targetDir) == canonicalOrAsTyped(b.targetDir) &&
           canonicalOrAsTyped(a.drafterDir) == canonicalOrAsTyped(b.drafterDir) &&
           canonicalOrAsTyped(a.drafterBDir) == canonicalOrAsTyped(b.drafterBDir) && sameList(a.device, b.device) &&
           sameList(a.gpuMemory, b.gpuMemory) && a.dtype == b.dtype;
}

ModelPanel::ModelPanel(QWidget* parent) : QWidget(parent) {
    setObjectName("ModelPanel");
    target_ = dirCombo(this, "recent/targets");
    target_->setObjectName("targetDir");
    target_->setToolTip(tr("Target model directory (HF layout: config.json, safetensors, tokenizer.json)"));
    drafter_ = dirCombo(this, "recent/drafters");
    drafter_->setObjectName("drafterDir");
    drafter_->setToolTip(tr("DFlash drafter directory (config.json with dflash_config, model.safetensors)"));
    compare_ = new QCheckBox(tr("Compare with drafter B"), this);
    compare_->setObjectName("compareDrafters");
    compare_->setToolTip(tr("Run every analysis with a second drafter on the same target and prompt: every view "
                            "shows A and B side by side or overlaid, with differences marked"));
    drafterB_ = dirCombo(this, "recent/draftersB");
    drafterB_->setObjectName("drafterBDir");
    drafterB_->setToolTip(tr("Drafter B: the DFlash drafter to compare with drafter A (e.g. a reference drafter, or "
                             "another training step)"));
    device_ = new QComboBox(this);
    device_->setObjectName("device");
    device_->setEditable(true);  // a list splits the target across devices: cuda:0,cuda:1
    device_->addItems({"cpu", "cuda", "auto"});
    device_->setToolTip(tr("cpu, cuda, cuda:N, or a comma-separated list (cuda:0,cuda:1) that splits the target's "
                           "layers across those devices; auto = every visible GPU"));
    gpuMemory_ = new QLineEdit(this);
    gpuMemory_->setObjectName("gpuMemory");
    gpuMemory_->setPlaceholderText(tr("free memory (e.g. 40GiB,40GiB)"));
    gpuMemory_->setToolTip(tr("Usable memory per device of the Device field, comma-separated (B, KB, MB, GB, TB, KiB, "
                              "MiB, GiB, TiB): the target's layers are placed within these limits. Empty: each GPU's "
                              "free memory, the CPU unlimited"));
    dtype_ = new QComboBox(this);
    dtype_->addItems({"float32", "bfloat16"});
    load_ = new QPushButton(tr("Load models"), this);
    status_ = new QLabel(tr("No models loaded. Drop a model directory onto the window or choose one."), this);
    status_->setObjectName("modelStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    changed_ = new QLabel(this);
    changed_->setObjectName("modelFieldsChanged");
    changed_->setWordWrap(true);
    changed_->setStyleSheet("color: #8a4b00; font-weight: bold");
    changed_->setVisible(false);
    auto* form = new QFormLayout(this);
    form->addRow(tr("Target"), withBrowse(this, target_, tr("Target model directory")));
    form->addRow(tr("Drafter"), withBrowse(this, drafter_, tr("DFlash drafter directory")));
    form->addRow(compare_);
    drafterBRow_ = withBrowse(this, drafterB_, tr("Drafter B directory"));
    form->addRow(tr("Drafter B"), drafterBRow_);
    drafterBRow_->setEnabled(false);
    connect(compare_, &QCheckBox::toggled, drafterBRow_, &QWidget::setEnabled);
    form->addRow(tr("Device"), device_);
    form->addRow(tr("GPU memory"), gpuMemory_);
    form->addRow(tr("Dtype"), dtype_);
    settingsError_ = new QLabel(this);
    settingsError_->setObjectName("loadSettingsError");
    settingsError_->setStyleSheet("color: #b00020");
    settingsError_->setWordWrap(true);
    settingsError_->setVisible(false);
    form->addRow(settingsError_);
    form->addRow(load_);
    form->addRow(changed_);
    form->addRow(status_);
    connect(load_, &QPushButton::clicked, this, [this] { emit loadRequested(request()); });
    for (auto* c : {target_, drafter_, drafterB_, device_, dtype_})
        connect(c, &QComboBox::currentTextChanged, this, &ModelPanel::updateChangedState);
    connect(gpuMemory_, &QLineEdit::textChanged, this, &ModelPanel::updateChangedState);
    connect(compare_, &QCheckBox::toggled, this, &ModelPanel::updateChangedState);
    // The device fields are checked as they are typed, by the engine's own rules.
    for (auto* c : {device_, dtype_}) connect(c, &QComboBox::currentTextChanged, this, &ModelPanel::updateSettingsError);
    connect(gpuMemory_, &QLineEdit::textChanged, this, &ModelPanel::updateSettingsError);
}

QString ModelPanel::settingsError() const {
    const ModelRequest r = request();
    try {
        LoadOptions opt;
        opt.device = r.device.toStdString();
        opt.dtype = r.dtype.toStdString();
        if (!r.gpuMemory.isEmpty()) opt.deviceMemory = parseMemoryLimits(r.gpuMemory.toStdString());
        validate(opt);
    } catch (const InvalidSetting& e) {
        const QString field = e.option() == "device" ? tr("Device") : e.option() == "gpu-memory" ? tr("GPU memory")
                              : e.option() == "dtype"  ? tr("Dtype")
                                                       : QString::fromStdString(e.option());
        return tr("%1: expected %2, found %3")
            .arg(field, QString::fromStdString(e.expected()), QString::fromStdString(e.found()));
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

void ModelPanel::updateSettingsError() {
    const QString err = settingsError();
    settingsError_->setText(err);
    settingsError_->setToolTip(err);
    settingsError_->setVisible(!err.isEmpty());
    for (QWidget* w : {static_cast<QWidget*>(device_), static_cast<QWidget*>(gpuMemory_)}) {
        const bool bad = !err.isEmpty() && ((w == device_ && err.startsWith(tr("Device"))) ||
                                            (w == gpuMemory_ && err.startsWith(tr("GPU memory"))));
        w->setStyleSheet(bad ? QStringLiteral("border: 1px solid #b00020") : QString());
    }
    askWrappedHeight(settingsError_);
}

void ModelPanel::setLoaded(const ModelRequest& loaded) {
    loaded_ = loaded;
    updateChangedState();
}

bool ModelPanel::differsFromLoaded() const { return !loaded_.targetDir.isEmpty() && !sameModels(request(), loaded_); }

void ModelPanel::updateChangedState() {
    const bool differs = differsFromLoaded();
    changed_->setText(differs ? tr("The fields differ from the loaded models: Run loads them first (or click "
                                   "Load models now).")
                              : QString());
    changed_->setVisible(differs);
    askWrappedHeight(changed_);
    load_->setText(differs ? tr("Load models (fields changed)") : tr("Load models"));
}

ModelRequest ModelPanel::request() const {
    ModelRequest r;
    r.targetDir = target_->currentText().trimmed();
    r.drafterDir = drafter_->currentText().trimmed();
    if (compare_->isChecked()) r.drafterBDir = drafterB_->currentText().trimmed();
    r.device = device_->currentText().trimmed();
    r.gpuMemory = gpuMemory_->text().trimmed();
    r.dtype = dtype_->currentText();
    return r;
}

void ModelPanel::setTargetDir(const QString& dir) { target_->setCurrentText(dir); }
void ModelPanel::setDrafterDir(const QString& dir) { drafter_->setCurrentText(dir); }
void ModelPanel::setDrafterBDir(const QString& dir) {
    drafterB_->setCurrentText(dir);
    compare_->setChecked(!dir.isEmpty());
}
void ModelPanel::setRequest(const ModelRequest& r) {
    setTargetDir(r.targetDir);
    setDrafterDir(r.drafterDir);
    setDrafterBDir(r.drafterBDir);
    device_->setCurrentText(r.device);
    gpuMemory_->setText(r.gpuMemory);
    dtype_->setCurrentText(r.dtype);
}
bool ModelPanel::isComparing() const { return compare_->isChecked(); }
void ModelPanel::setStatus(const QString& text) {
    status_->setText(text);
    askWrappedHeight(status_);
}
QString ModelPanel::status() const { return status_->text(); }

void ModelPanel::rememberRecent(const ModelRequest& r) {
    QSettings s;
    auto push = [&](const char* key, const QString& dir, QComboBox* combo) {
        QStringList list = s.value(key).toStringList();
        list.removeAll(dir);
        list.prepend(dir);
        while (list.size() > 10) list.removeLast();
        s.setValue(key, list);
        combo->blockSignals(true);
        combo->clear();
        combo->addItems(list);
        combo->setCurrentText(dir);
        combo->blockSignals(false);
    };
    push("recent/targets", r.targetDir, target_);
    push("recent/drafters", r.drafterDir, drafter_);
    if (!r.drafterBDir.isEmpty()) push("recent/draftersB", r.drafterBDir, drafterB_);
}

}  // namespace draftscope
