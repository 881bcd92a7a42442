#include "gui/prompt_panel.h"
#include "gui/dialog_dirs.h"

#include "draftscope/analysis.h"
#include "draftscope/errors.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

namespace draftscope {

namespace {
/// Data roles of the prompt-set list's items.
enum PromptSetRole : int {
    kSearchRole = Qt::UserRole + 1,  ///< id + text: what the search field filters
    kTextRole,                       ///< the prompt text the editor gets
    kChatRole,                       ///< whether it is a chat prompt
    kIdRole,                         ///< the entry's id
};
}  // namespace

bool parseDdtreeBudgets(const QString& text, std::vector<int>* budgets, QString* error) {
    try {
        auto parsed = parseTreeBudgets(text.toStdString());
        if (budgets) *budgets = std::move(parsed);
        return true;
    } catch (const Error& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
}

PromptPanel::PromptPanel(QWidget* parent) : QWidget(parent) {
    setObjectName("PromptPanel");
    editor_ = new QPlainTextEdit(this);
    editor_->setMinimumHeight(4 * editor_->fontMetrics().lineSpacing() + 8);  // scrolls below that
    editor_->setObjectName("promptEditor");
    editor_->setPlaceholderText(tr("Prompt text (raw, tokenized as is unless 'Chat template' is on)"));
    editor_->setFont(QFont("DejaVu Sans Mono"));
    chat_ = new QCheckBox(tr("Chat template"), this);
    chat_->setToolTip(tr("Wrap the text as one user turn of the ChatML template (as Qwen's chat template renders it)"));
    thinking_ = new QCheckBox(tr("Thinking"), this);
    thinking_->setChecked(true);
    thinking_->setToolTip(tr("Off: append Qwen3's empty <think></think> block after the generation prompt"));
    thinking_->setEnabled(false);
    connect(chat_, &QCheckBox::toggled, thinking_, &QCheckBox::setEnabled);
    maxNew_ = new QSpinBox(this);
    // Any count --max-new accepts (validate(RunSettings)): the target's max_position_embeddings
    // bounds it when the run starts, so a larger command-line value is never clamped here.
    maxNew_->setRange(1, std::numeric_limits<int>::max());
    maxNew_->setValue(96);
    ignoreEos_ = new QCheckBox(tr("Ignore EOS"), this);
    ignoreEos_->setChecked(true);
    temperature_ = new QDoubleSpinBox(this);
    temperature_->setRange(0, 5);
    temperature_->setSingleStep(0.1);
    temperature_->setToolTip(tr("0 = greedy. > 0 samples: the current loop verifies sampled drafts by speculative "
                                "rejection sampling (lossless); the 2026-04 loop keeps argmax drafts against a sampled "
                                "target"));
    loop_ = new QComboBox(this);
    loop_->setObjectName("loopRevision");
    loop_->addItem(tr("current"), static_cast<int>(LoopRevision::Current));
    loop_->addItem(tr("2026-04"), static_cast<int>(LoopRevision::April2026));
    loop_->setToolTip(tr("Reference revision, the verification loop and the drafter's rotary numerics together: "
                         "current = the newest official code (dflash_generate with a clipped last block and stop "
                         "tokens inside the loop; rotary inv_freq in float32); 2026-04 = the April 2026 reference "
                         "(full blocks; inv_freq rounded through the drafter's checkpoint dtype)"));
    topP_ = new QDoubleSpinBox(this);
    topP_->setObjectName("topP");
    topP_->setDecimals(3);
    topP_->setRange(0.001, 1);
    topP_->setSingleStep(0.05);
    topP_->setValue(1);
    topP_->setToolTip(tr("Sampling: nucleus filter applied to target and drafter (1 = off)"));
    topK_ = new QSpinBox(this);
    topK_->setObjectName("topK");
    topK_->setRange(0, 1 << 20);
    topK_->setToolTip(tr("Sampling: keep the k most probable tokens, target and drafter (0 = off)"));
    seed_ = new QSpinBox(this);
    seed_->setRange(0, 1 << 30);
    budgets_ = new QLineEdit(this);
    budgets_->setObjectName("ddtreeBudgets");
    budgets_->setText("4, 8, 16, 32");
    budgets_->setPlaceholderText(tr("none (e.g. 4, 8, 16, 32; 0 = none)"));
    budgets_->setClearButtonEnabled(true);
    budgets_->setToolTip(tr("DDTree budgets (tree nodes drafted per verify step), comma separated, each once. After "
                            "the chain (DFlash) run, the DDTree loop runs once per budget (greedy only). Empty or 0 = "
                            "no tree runs."));
    budgetError_ = new QLabel(this);
    budgetError_->setObjectName("ddtreeBudgetError");
    budgetError_->setStyleSheet("color: #b00020");
    budgetError_->setWordWrap(true);
    // Two lines are always reserved (the messages fit in two lines of the panel's width), so
    // a message appearing or going never moves the form below it.
    budgetError_->setFixedHeight(2 * budgetError_->fontMetrics().lineSpacing() + 2);
    budgetError_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    connect(budgets_, &QLineEdit::textChanged, this, [this] {
        const QString err = ddtreeBudgetError();
        budgetError_->setText(err);
        budgetError_->setToolTip(err);
        QPalette pal = budgets_->palette();  // red text marks the field (a style sheet would resize it)
        pal.setColor(QPalette::Text, err.isEmpty() ? palette().color(QPalette::Text) : QColor(0xb0, 0x00, 0x20));
        budgets_->setPalette(pal);
    });

    search_ = new QLineEdit(this);
    search_->setPlaceholderText(tr("Search prompts"));
    search_->setClearButtonEnabled(true);
    setModel_ = new QStandardItemModel(this);
    filter_ = new QSortFilterProxyModel(this);
    filter_->setSourceModel(setModel_);
    filter_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    filter_->setFilterRole(kSearchRole);
    list_ = new QListView(this);
    list_->setModel(filter_);
    list_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    list_->setMaximumHeight(140);
    // Three rows at least: the Prompt dock gives up height to the Models dock (compare mode).
    list_->setMinimumHeight(3 * list_->fontMetrics().lineSpacing() + 8);
    connect(search_, &QLineEdit::textChanged, filter_, &QSortFilterProxyModel::setFilterFixedString);
    connect(list_, &QListView::clicked, this, [this](const QModelIndex& idx) {
        editor_->setPlainText(idx.data(kTextRole).toString());
        chat_->setChecked(idx.data(kChatRole).toBool());
    });
    auto* loadSet = new QPushButton(tr("Load prompt set..."), this);
    connect(loadSet, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Prompt set"), lastDialogDir("prompts"),
                                                          tr("JSON lines (*.jsonl *.json)"));
        if (path.isEmpty()) return;
        rememberDialogPath("prompts", path);
        try {
            loadPromptSet(path);
        } catch (const std::exception& e) {
            search_->setPlaceholderText(QString::fromStdString(e.what()));
        }
    });

    run_ = new QPushButton(tr("Run"), this);
    run_->setObjectName("runButton");
    run_->setDefault(true);
    run_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    run_->setToolTip(tr("Run the DFlash loop on this prompt (Ctrl+Enter)"));
    cancel_ = new QPushButton(tr("Cancel"), this);
    cancel_->setObjectName("cancelButton");
    cancel_->setEnabled(false);
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    progress_->setFormat(tr("no run yet"));  // a fresh window says so, not "0 / 1 tokens"
    progress_->setObjectName("runProgress");
    // The stage ("drafter B: DDTree budget 32 (4 of 4)", "done: A: chain, ...; B: ...") gets
    // its own wrapping line: in the bar it would be cut at the panel's width.
    stage_ = new QLabel(this);
    stage_->setObjectName("runStage");
    stage_->setWordWrap(true);
    stage_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    stage_->setVisible(false);

    recorded_ = new QLabel(this);
    recorded_->setObjectName("recordedPromptNote");
    recorded_->setWordWrap(true);
    recorded_->setStyleSheet("color: #6a1b9a");
    recorded_->setVisible(false);

    auto* settings = new QFormLayout;
    settings->addRow(tr("Max new tokens"), maxNew_);
    settings->addRow(tr("Loop"), loop_);
    settings->addRow(tr("Temperature"), temperature_);
    auto* filters = new QHBoxLayout;
    filters->addWidget(new QLabel(tr("top-p"), this));
    filters->addWidget(topP_);
    filters->addWidget(new QLabel(tr("top-k"), this));
    filters->addWidget(topK_);
    settings->addRow(tr("Sampling filters"), filters);
    settings->addRow(tr("Seed"), seed_);
    settings->addRow(tr("DDTree budgets"), budgets_);
    settings->addRow(budgetError_);
    auto* toggles = new QHBoxLayout;
    toggles->addWidget(chat_);
    toggles->addWidget(thinking_);
    toggles->addWidget(ignoreEos_);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(run_);
    buttons->addWidget(cancel_);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("Prompt set"), this));
    auto* setRow = new QHBoxLayout;
    setRow->addWidget(search_, 1);
    setRow->addWidget(loadSet);
    layout->addLayout(setRow);
    layout->addWidget(list_);
    layout->addWidget(recorded_);
    layout->addWidget(editor_, 1);
    layout->addLayout(toggles);
    layout->addLayout(settings);
    layout->addLayout(buttons);
    layout->addWidget(stage_);
    layout->addWidget(progress_);

    connect(run_, &QPushButton::clicked, this, [this] { emit runRequested(request()); });
    connect(cancel_, &QPushButton::clicked, this, &PromptPanel::cancelRequested);
}

AnalysisRequest PromptPanel::request() const {
    AnalysisRequest r;
    r.prompt.kind = PromptSpec::Kind::Text;
    r.prompt.text = editor_->toPlainText().toStdString();
    r.prompt.chat = chat_->isChecked();
    r.prompt.thinking = thinking_->isChecked();
    const QString text = editor_->toPlainText();
    for (int i = 0; i < setModel_->rowCount() && r.promptId.isEmpty(); ++i)
        if (setModel_->item(i)->data(kTextRole).toString() == text)
            r.promptId = setModel_->item(i)->data(kIdRole).toString();
    r.settings.maxNewTokens = maxNew_->value();
    r.settings.ignoreEos = ignoreEos_->isChecked();
    r.settings.loop = static_cast<LoopRevision>(loop_->currentData().toInt());
    r.settings.temperature = temperature_->value();
    r.settings.topP = topP_->value();
    r.settings.topK = topK_->value();
    r.settings.seed = static_cast<std::uint64_t>(seed_->value());
    try {  // one parse; DDTree is greedy, so the budgets also need temperature 0
        r.ddtreeBudgets = parseTreeBudgets(budgets_->text().toStdString());
        validateTreeBudgets(r.ddtreeBudgets, r.settings.temperature);
    } catch (const Error& e) {
        r.ddtreeBudgets.clear();
        r.ddtreeBudgetError = QString::fromStdString(e.what());
    }
    return r;
}

void PromptPanel::setPromptText(const QString& text) { editor_->setPlainText(text); }
QString PromptPanel::promptText() const { return editor_->toPlainText(); }
void PromptPanel::setMaxNewTokens(int n) { maxNew_->setValue(n); }
void PromptPanel::setLoopRevision(LoopRevision loop) { loop_->setCurrentIndex(loop_->findData(static_cast<int>(loop))); }
void PromptPanel::setChat(bool chat) { chat_->setChecked(chat); }

void PromptPanel::setDdtreeBudgets(const std::vector<int>& budgets) {
    QStringList parts;
    for (int b : budgets) parts << QString::number(b);
    budgets_->setText(parts.join(", "));
}

QString PromptPanel::ddtreeBudgetText() const { return budgets_->text(); }

QString PromptPanel::ddtreeBudgetError() const {
    QString err;
    return parseDdtreeBudgets(budgets_->text(), nullptr, &err) ? QString() : err;
}

void PromptPanel::showRecorded(const PromptSpec& prompt, const RunSettings& settings,
                               const std::vector<int>& ddtreeBudgets, const QString& source) {
    if (source.isEmpty()) {
        recorded_->clear();
        recorded_->setVisible(false);
        return;
    }
    QString note = tr("Recorded run shown: %1, with its prompt and settings below. Run analyses them live.").arg(source);
    if (prompt.kind == PromptSpec::Kind::Text) {
        editor_->setPlainText(QString::fromStdString(prompt.text));
        chat_->setChecked(prompt.chat);
        thinking_->setChecked(prompt.thinking);
    } else {
        note = tr("Recorded run shown: %1. Its prompt is %2 token ids, not text: the editor keeps your text.")
                   .arg(source).arg(prompt.ids.size());
    }
    maxNew_->setValue(static_cast<int>(settings.maxNewTokens));
    ignoreEos_->setChecked(settings.ignoreEos);
    temperature_->setValue(settings.temperature);
    seed_->setValue(static_cast<int>(settings.seed));
    setDdtreeBudgets(ddtreeBudgets);
    recorded_->setText(note);
    recorded_->setVisible(true);
}

QString PromptPanel::recordedSource() const { return recorded_->text(); }

void PromptPanel::setPromptSet(const QVector<PromptEntry>& prompts) {
    setModel_->clear();
    for (const auto& p : prompts) {
        QString firstLine = p.text.section('\n', 0, 0).trimmed();
        if (firstLine.size() > 60) firstLine = firstLine.left(57) + "...";
        auto* item = new QStandardItem(QStringLiteral("%1  %2").arg(p.id, firstLine));
        item->setData(p.id + " " + p.text, kSearchRole);
        item->setData(p.text, kTextRole);
        item->setData(p.chat, kChatRole);
        item->setData(p.id, kIdRole);
        item->setToolTip(p.text.left(500));
        setModel_->appendRow(item);
    }
}

QVector<PromptEntry> PromptPanel::promptSet() const {
    QVector<PromptEntry> out;
    for (int r = 0; r < setModel_->rowCount(); ++r) {
        const QStandardItem* item = setModel_->item(r);
        out.push_back({item->data(kIdRole).toString(), item->data(kTextRole).toString(), item->data(kChatRole).toBool()});
    }
    return out;
}

void PromptPanel::loadPromptSet(const QString& path) { setPromptSet(draftscope::loadPromptSet(path)); }

void PromptPanel::setBusy(bool busy) {
    run_->setText(busy ? tr("Run (replaces queued)") : tr("Run"));
    cancel_->setEnabled(busy);
}

void PromptPanel::setStage(const QString& stage) { setProgressText(stage); }

void PromptPanel::setProgressText(const QString& text) {
    stage_->setText(text);
    stage_->setToolTip(text);
    stage_->setVisible(!text.isEmpty());
}

QString PromptPanel::progressText() const { return stage_->text(); }

void PromptPanel::setProgress(qint64 done, qint64 total) {
    progress_->setFormat(tr("%v / %m tokens"));
    progress_->setRange(0, static_cast<int>(std::max<qint64>(total, 1)));
    progress_->setValue(static_cast<int>(done));
}

QString PromptPanel::progressBarText() const { return progress_->text(); }

void PromptPanel::resetProgress(const QString& text) {
    progress_->setRange(0, 1);
    progress_->setValue(0);
    progress_->setFormat(text);
}

}  // namespace draftscope
