#include "gui/diagnose_panel.h"

#include "draftscope/file_io.h"
#include "draftscope/results_json.h"
#include "drafter_comparison.h"
#include "figure_export.h"
#include "gui/tool_run_controls.h"
#include "probe_tau_plot.h"

#include <QCheckBox>
#include <QDateTime>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>
#include <tuple>

namespace draftscope {

DiagnosePanel::DiagnosePanel(AnalysisController* controller, QWidget* parent)
    : QWidget(parent), controller_(controller), prompts_(new QComboBox(this)), maxNew_(new QSpinBox(this)),
      includeB_(new QCheckBox(tr("with drafter B"), this)), models_(new QLabel(this)),
      controls_(new ToolRunControls(this)), findings_(new DiagnosisFindingsModel(this)), table_(new QTableView(this)),
      show_(new QPushButton(tr("Show"), this)), plot_(new ProbeTauPlot(this)), cost_(new QLabel(this)),
      stale_label_(new QLabel(this)), detail_(new QLabel(this)) {
    setObjectName("DiagnosePanel");
    prompts_->setObjectName("diagnosePrompts");
    prompts_->addItem(tr("built-in diagnose prompts (%1)").arg(defaultDiagnosePrompts().size()), QStringLiteral("builtin"));
    prompts_->addItem(tr("the Prompt panel's prompt set"), QStringLiteral("set"));
    prompts_->setToolTip(tr("Built-in: ten short Python openings and one prose line (the demo target is a code model). "
                            "For a real target, load a prompt set from its domain (File > Load prompt set) and pick it here."));
    maxNew_->setObjectName("diagnoseMaxNew");
    maxNew_->setRange(8, 4096);
    maxNew_->setValue(static_cast<int>(DiagnoseSettings{}.maxNewTokens));
    maxNew_->setToolTip(tr("Tokens generated per prompt (greedy, ignore-eos); the probes follow them"));
    includeB_->setObjectName("diagnoseIncludeB");
    includeB_->setChecked(true);
    models_->setWordWrap(true);
    auto* families = new QWidget(this);
    auto* familyGrid = new QGridLayout(families);
    familyGrid->setContentsMargins(0, 0, 0, 0);
    int i = 0;
    for (const auto& f : diagnoseProbeFamilies()) {
        const QString name = QString::fromStdString(f);
        auto* box = new QCheckBox(name, families);
        box->setObjectName("probe_" + name);
        box->setChecked(true);
        familyGrid->addWidget(box, i / 4, i % 4);
        probes_[name] = box;
        ++i;
    }
    families->setToolTip(tr("Probe families (draftscope-cli diagnose --probes; docs/DIAGNOSE.md). The cost line below "
                            "says how many drafter calls they take."));
    cost_->setObjectName("diagnoseCost");
    cost_->setWordWrap(true);
    stale_label_->setObjectName("diagnoseStale");
    stale_label_->setWordWrap(true);
    stale_label_->setStyleSheet("color: #8a5a00; font-weight: bold;");
    stale_label_->hide();
    detail_->setObjectName("diagnoseFindingDetail");
    detail_->setWordWrap(true);
    detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    detail_->setTextFormat(Qt::RichText);
    detail_->setMinimumHeight(48);
    detail_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    auto* form = new QFormLayout;
    form->addRow(tr("Prompts:"), prompts_);
    form->addRow(tr("Max new:"), maxNew_);
    form->addRow(tr("Probes:"), families);
    form->addRow(tr("Drafters:"), models_);
    form->addRow(QString(), includeB_);
    form->addRow(tr("Cost:"), cost_);

    table_->setObjectName("diagnoseFindings");
    table_->setModel(findings_);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setWordWrap(true);
    table_->verticalHeader()->setVisible(false);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->horizontalHeader()->setSectionResizeMode(DiagnosisFindingsModel::MessageColumn, QHeaderView::Interactive);
    installExportMenu(table_, QStringLiteral("diagnose_findings"),
                      [this](const QString& p, QString* e) { return exportWidget(table_, p, e, figureTitle()); }, findings_);
    show_->setObjectName("diagnoseShow");
    show_->setToolTip(tr("Open the view that shows the selected finding (Masks, Hidden states or the block grid)"));
    auto* findingsBox = new QWidget(this);
    auto* findingsLayout = new QVBoxLayout(findingsBox);
    findingsLayout->setContentsMargins(0, 0, 0, 0);
    auto* header = new QHBoxLayout;
    header->addWidget(new QLabel(tr("<b>Findings</b> (most severe first; double-click a convention finding to open its view)"),
                                 findingsBox), 1);
    header->addWidget(show_);
    findingsLayout->addLayout(header);
    findingsLayout->addWidget(stale_label_);
    findingsLayout->addWidget(table_, 1);
    findingsLayout->addWidget(detail_);
    auto* plotScroll = new QScrollArea(this);
    plotScroll->setWidgetResizable(true);
    plotScroll->setFrameShape(QFrame::NoFrame);
    plotScroll->setWidget(plot_);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(findingsBox);
    split->addWidget(plotScroll);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(controls_);
    layout->addWidget(split, 1);

    connect(controls_, &ToolRunControls::runClicked, this, [this] { run(); });
    connect(controls_, &ToolRunControls::cancelClicked, controller_, &AnalysisController::cancelTool);
    controls_->setExportedView(this);
    connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) { showFindingAt(index.row()); });
    connect(show_, &QPushButton::clicked, this, [this] {
        const auto rows = table_->selectionModel()->selectedRows();
        if (!rows.isEmpty()) showFindingAt(rows.first().row());
    });
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &DiagnosePanel::updateShowButton);
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &DiagnosePanel::updateDetail);
    connect(findings_, &QAbstractItemModel::modelReset, this, &DiagnosePanel::updateShowButton);
    connect(findings_, &QAbstractItemModel::modelReset, this, &DiagnosePanel::updateDetail);
    for (const auto& [name, box] : probes_) connect(box, &QCheckBox::toggled, this, &DiagnosePanel::updateCost);
    connect(maxNew_, &QSpinBox::valueChanged, this, &DiagnosePanel::updateCost);
    connect(prompts_, &QComboBox::currentIndexChanged, this, &DiagnosePanel::updateCost);
    connect(includeB_, &QCheckBox::toggled, this, &DiagnosePanel::updateCost);

    connect(controller_, &AnalysisController::toolProgress, this,
            [this](quint64 id, qint64 done, qint64 total, const QString& stage) {
                if (id != current_) return;
                // Progress counts estimated drafter calls, so the time left follows from the time so far.
                const qint64 now = QDateTime::currentMSecsSinceEpoch();
                if (startedMs_ < 0) startedMs_ = now;
                QString left;
                if (done > 0 && done < total)
                    left = tr(", about %1 left")
                               .arg(formatSeconds((now - startedMs_) / 1000.0 * static_cast<double>(total - done) /
                                                  static_cast<double>(done)));
                controls_->setProgress(done, total, tr("%1: %2 of about %3 drafter calls%4")
                                                        .arg(stage).arg(done).arg(total).arg(left));
            });
    connect(controller_, &AnalysisController::diagnosisFinished, this, [this](const DiagnoseResultPtr& r) {
        if (r->requestId != current_) return;
        controls_->setRunning(false);
        showResult(r);
    });
    connect(controller_, &AnalysisController::toolCancelled, this, [this](quint64 id) {
        if (id != current_) return;
        controls_->setRunning(false);
        controls_->setStatus(tr("diagnosis cancelled"));
        emit logLine(tr("diagnosis %1 cancelled").arg(id));
    });
    connect(controller_, &AnalysisController::failed, this, [this](quint64 id, FailureKind kind, const QString& message) {
        if (kind != FailureKind::Diagnose || id != current_) return;
        controls_->setRunning(false);
        controls_->setStatus(tr("diagnosis failed: %1").arg(message));
    });
    setLoadedModels({});
    updateShowButton();
    updateDetail();
}

QString DiagnosePanel::formatSeconds(double s) {
    if (!(s >= 0) || s > 1e7) return tr("?");
    if (s < 90) return tr("%1 s").arg(static_cast<int>(std::ceil(s)));
    if (s < 5400) return tr("%1 min").arg(static_cast<int>(std::ceil(s / 60)));
    return tr("%1 h %2 min").arg(static_cast<int>(s / 3600)).arg(static_cast<int>(std::fmod(s, 3600) / 60));
}

void DiagnosePanel::setSecondsPerCall(double seconds) {
    secondsPerCall_ = seconds;
    updateCost();
}

void DiagnosePanel::updateCost() {
    estimatedCalls_ = 0;
    if (loaded_.drafterDir.isEmpty()) {
        cost_->setText(tr("(load a target and a drafter first)"));
        return;
    }
    const DiagnoseRequest r = request();
    std::vector<std::optional<DrafterConfig>> drafters;
    auto configOf = [](const QString& path) -> std::optional<DrafterConfig> {
        QFileInfo fi(path);
        try {
            return loadDrafterConfig((fi.isFile() ? fi.absolutePath() : fi.absoluteFilePath()).toStdString());
        } catch (const std::exception&) {
            return std::nullopt;
        }
    };
    drafters.push_back(configOf(loaded_.drafterDir));
    if (r.includeB && !loaded_.drafterBDir.isEmpty()) drafters.push_back(configOf(loaded_.drafterBDir));
    std::int64_t layers = 0;
    try {
        layers = loadTargetConfig(loaded_.targetDir.toStdString()).numLayers;
    } catch (const std::exception&) {
    }
    std::vector<std::int64_t> lengths;  // without the tokenizer: about 3.5 characters per token
    for (const auto& p : r.prompts) lengths.push_back(static_cast<std::int64_t>(p.spec.text.size() / 3.5) + 1);
    try {
        const auto e = estimateDiagnoseCost(drafters, layers, r.settings, lengths);
        estimatedCalls_ = e.drafterCalls;
        QStringList parts;
        for (const auto& [f, n] : e.perFamily)
            if (n > 0) parts << tr("%1 %2").arg(QString::fromStdString(f)).arg(n);
        QString text = tr("about %1 drafter calls (%2)").arg(e.drafterCalls).arg(parts.join(", "));
        if (secondsPerCall_ > 0)
            text += tr("; about %1 at the last analysis's %2 ms per verify step")
                        .arg(formatSeconds(secondsPerCall_ * static_cast<double>(e.drafterCalls)))
                        .arg(secondsPerCall_ * 1000, 0, 'f', 1);
        cost_->setText(text);
    } catch (const std::exception& ex) {
        cost_->setText(QString::fromStdString(ex.what()));
    }
}

QString DiagnosePanel::costText() const { return cost_->text(); }

QString DiagnosePanel::staleText() const { return stale_label_->isVisibleTo(this) ? stale_label_->text() : QString(); }

void DiagnosePanel::markStale(const QString& why) {
    stale_ = true;
    stale_label_->setText(why);
    stale_label_->show();
    updateShowButton();
}

void DiagnosePanel::updateDetail() {
    const QString t = detailText();
    detail_->setText(t.isEmpty() ? tr("<i>Select a finding to read it in full.</i>") : t);
}

QString DiagnosePanel::detailText() const {
    const auto rows = table_->selectionModel() ? table_->selectionModel()->selectedRows() : QModelIndexList{};
    if (rows.isEmpty() || rows.first().row() >= findings_->rowCount()) return {};
    const int row = rows.first().row();
    const Finding& f = findings_->findingAt(row);
    const QString evidence = evidenceText(f);
    return tr("<b>%1 %2</b> (%3): %4%5")
        .arg(QString::fromUtf8(severityName(f.severity)), QString::fromStdString(f.id),
             findings_->data(findings_->index(row, DiagnosisFindingsModel::DrafterColumn)).toString().toHtmlEscaped(),
             QString::fromStdString(f.message).toHtmlEscaped(),
             evidence.isEmpty() ? QString() : tr("<br><span style='color:#555'>evidence: %1</span>").arg(evidence.toHtmlEscaped()));
}

QCheckBox* DiagnosePanel::probeBox(const QString& family) const {
    const auto it = probes_.find(family);
    return it == probes_.end() ? nullptr : it->second;
}

void DiagnosePanel::setPromptSetSource(std::function<QVector<PromptEntry>()> source) { promptSet_ = std::move(source); }

void DiagnosePanel::setLoadedModels(const ModelRequest& loaded) {
    const bool changed = loaded.targetDir != loaded_.targetDir || loaded.drafterDir != loaded_.drafterDir ||
                         loaded.drafterBDir != loaded_.drafterBDir;
    loaded_ = loaded;
    if (changed && result_ && !stale_)
        markStale(tr("These findings are of the models loaded before (%1); the loaded models changed: Run again to "
                     "diagnose the ones loaded now.")
                      .arg(drafterNames(*result_).join(", ")));
    const bool any = !loaded.targetDir.isEmpty() && !loaded.drafterDir.isEmpty();
    const bool hasB = any && !loaded.drafterBDir.isEmpty();
    includeB_->setEnabled(hasB);
    models_->setText(!any ? tr("load a target and a drafter first")
                          : hasB ? tr("A: %1<br>B: %2").arg(loaded.drafterDir.toHtmlEscaped(), loaded.drafterBDir.toHtmlEscaped())
                                 : tr("A: %1").arg(loaded.drafterDir.toHtmlEscaped()));
    controls_->setRunEnabled(any, any ? QString() : tr("Load a target and a drafter first"));
    updateCost();
}

DiagnoseRequest DiagnosePanel::request() const {
    DiagnoseRequest r;
    if (prompts_->currentData().toString() == QLatin1String("builtin")) {
        r.prompts = defaultDiagnosePrompts();
    } else if (promptSet_) {
        for (const auto& e : promptSet_()) {
            PromptSpec spec;
            spec.text = e.text.toStdString();
            spec.chat = e.chat;
            r.prompts.push_back({e.id.toStdString(), spec});
        }
    }
    r.settings.maxNewTokens = maxNew_->value();
    for (const auto& f : diagnoseProbeFamilies())
        if (probes_.at(QString::fromStdString(f))->isChecked()) r.settings.probes.push_back(f);
    r.includeB = includeB_->isChecked();
    return r;
}

quint64 DiagnosePanel::run() {
    const DiagnoseRequest r = request();
    QString why;
    if (loaded_.drafterDir.isEmpty()) why = tr("load a target and a drafter first");
    else if (r.prompts.empty()) why = tr("the Prompt panel has no prompt set: load one (File > Load prompt set) or use the built-in prompts");
    else if (r.settings.probes.empty()) why = tr("choose at least one probe family");
    if (!why.isEmpty()) {
        controls_->setStatus(why);
        return 0;
    }
    current_ = controller_->diagnose(r);
    startedMs_ = -1;
    // The previous findings go: they would be read as this run's.
    result_.reset();
    findings_->clear();
    plot_->setData({});
    stale_ = false;
    stale_label_->hide();
    controls_->setExportEnabled(false);
    controls_->setRunning(true);
    controls_->setStatus(tr("diagnosis %1 queued (it runs after the analysis in progress, if any)").arg(current_));
    emit logLine(tr("diagnosis %1: %2 prompts, %3 new tokens each, probes %4")
                     .arg(current_).arg(r.prompts.size()).arg(r.settings.maxNewTokens)
                     .arg(r.settings.probes.size() == diagnoseProbeFamilies().size() ? tr("all") : [&] {
                         QStringList s;
                         for (const auto& f : r.settings.probes) s << QString::fromStdString(f);
                         return s.join(',');
                     }()));
    return current_;
}

QStringList DiagnosePanel::drafterNames(const DiagnoseResult& result) const {
    const auto& ds = result.report.drafters;
    QString paths[2];
    for (std::size_t i = 0; i < ds.size(); ++i)
        paths[i < result.which.size() ? result.which[i] & 1 : 0] = QString::fromStdString(ds[i].path);
    QString a = QFileInfo(paths[0]).fileName(), b;
    if (!paths[1].isEmpty()) std::tie(a, b) = draftscope::drafterNames(paths[0], paths[1]);
    QStringList names;
    for (std::size_t i = 0; i < ds.size(); ++i) {
        const int which = i < result.which.size() ? result.which[i] : 0;
        names << (which == 0 ? tr("A: %1").arg(a) : tr("B: %1").arg(b));
    }
    return names;
}

void DiagnosePanel::showResult(const DiagnoseResultPtr& result) {
    result_ = result;
    stale_ = false;
    stale_label_->hide();
    const QStringList names = drafterNames(*result);
    findings_->setReport(result->report, names);
    table_->resizeColumnsToContents();
    table_->setColumnWidth(DiagnosisFindingsModel::MessageColumn, std::min(table_->columnWidth(DiagnosisFindingsModel::MessageColumn), 380));
    table_->resizeRowsToContents();
    plot_->setData(probeTauData(result->report, result->which, names));
    controls_->setExportEnabled(true);
    QStringList summary;
    for (std::size_t i = 0; i < result->report.drafters.size(); ++i) {
        const auto& d = result->report.drafters[i];
        int errors = 0, warnings = 0;
        for (const auto& f : d.findings) {
            errors += f.severity == Severity::Error;
            warnings += f.severity == Severity::Warning;
        }
        summary << tr("%1: errors %2, warnings %3, %4").arg(names[static_cast<int>(i)]).arg(errors).arg(warnings)
                       .arg(!d.loaded ? tr("did not load")
                                      : d.promptTaus.empty() ? tr("probe tau %1").arg(d.probeTau, 0, 'f', 2)
                                                             : tr("tau %1").arg(d.tau, 0, 'f', 2));
    }
    controls_->setStatus(tr("done: %1").arg(summary.join("; ")));
    emit logLine(tr("diagnosis %1 done: %2").arg(result->requestId).arg(summary.join("; ")));
}

bool DiagnosePanel::showFindingAt(int row) {
    if (row < 0 || row >= findings_->rowCount() || !result_ || stale_) return false;
    const Finding& f = findings_->findingAt(row);
    const int d = findings_->drafterOf(row);
    const auto di = static_cast<std::size_t>(d);
    const FindingTarget target = di < result_->report.drafters.size() ? findingTarget(result_->report.drafters[di], f)
                                                                       : FindingTarget{viewForFinding(f.id)};
    if (target.view == FindingView::None) return false;
    emit showFinding(target, di < result_->which.size() ? result_->which[di] : 0);
    return true;
}

void DiagnosePanel::updateShowButton() {
    const auto rows = table_->selectionModel()->selectedRows();
    show_->setEnabled(!stale_ && !rows.isEmpty() && rows.first().row() < findings_->rowCount() &&
                      viewForFinding(findings_->findingAt(rows.first().row()).id) != FindingView::None);
}

QStringList DiagnosePanel::exportAll(const QString& dir, QString* error) {
    plot_->setFigureTitle(figureTitle());
    QStringList written = plot_->exportAll(dir, error);
    if (error && !error->isEmpty()) return written;
    FigureSet set(dir, error);
    set.table(QStringLiteral("diagnose_findings"), findings_);
    written += set.written();
    if (!set.ok() || !result_) return written;
    const QString report = QDir(dir).filePath(QStringLiteral("diagnose_report.json"));
    try {  // the document draftscope-cli diagnose --json writes
        writeFileAtomically(report.toStdString(),
                            toJson(result_->report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        written << report;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
    }
    return written;
}

}  // namespace draftscope
