#include "gui/results_panel.h"

#include "figure_export.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <limits>

namespace draftscope {

namespace {
constexpr int kSortRole = Qt::UserRole + 1;
constexpr int kPromptRole = Qt::UserRole + 2;
constexpr int kSearchRole = Qt::UserRole + 3;  ///< on the id cell: id, prompt text and error, searched by the filter

QStandardItem* numberItem(double v, const QString& text) {
    auto* it = new QStandardItem(text);
    it->setData(v, kSortRole);
    it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    it->setEditable(false);
    return it;
}
QStandardItem* textItem(const QString& s) {
    auto* it = new QStandardItem(s);
    it->setData(s, kSortRole);
    it->setEditable(false);
    return it;
}
}  // namespace

ResultsPanel::ResultsPanel(QWidget* parent)
    : QWidget(parent), info_(new QLabel(this)), drafterBox_(new QComboBox(this)), drafterLabel_(new QLabel(tr("Show drafter:"), this)),
      loadModels_(new QPushButton(tr("Load recorded models"), this)), modelsNote_(new QLabel(this)),
      view_(new QTableView(this)), model_(new QStandardItemModel(this)), proxy_(new QSortFilterProxyModel(this)) {
    setObjectName("ResultsPanel");
    info_->setObjectName("resultsInfo");
    info_->setWordWrap(true);
    info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    info_->setText(tr("No results file open. File > Open Results... (Ctrl+O) or drop a .dsresults file "
                      "(draftscope-cli eval --out R.dsresults)."));
    drafterBox_->setObjectName("resultsDrafter");
    drafterBox_->setToolTip(tr("Which drafter's run of the selected prompt the views show"));
    loadModels_->setObjectName("loadRecordedModels");
    loadModels_->setToolTip(tr("Load the recorded target and the selected drafter from their recorded directories, "
                               "so the drafter-attention view can recompute attention"));
    loadModels_->setEnabled(false);
    liveNote_ = new QLabel(this);
    liveNote_->setObjectName("resultsLiveNote");
    liveNote_->setWordWrap(true);
    liveNote_->setStyleSheet("QLabel { color: #8a4b00; font-weight: bold; }");
    liveNote_->hide();
    modelsNote_->setObjectName("recordedModelsNote");
    modelsNote_->setWordWrap(true);
    modelsNote_->setStyleSheet("QLabel { color: #666; }");
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(kSortRole);
    proxy_->setFilterRole(kSearchRole);
    proxy_->setFilterKeyColumn(1);
    proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    search_ = new QLineEdit(this);
    search_->setObjectName("resultsSearch");
    search_->setPlaceholderText(tr("Search prompts (id, text, error)"));
    search_->setClearButtonEnabled(true);
    search_->setToolTip(tr("Show only the prompts whose id, text or error contains this (case-insensitive); "
                           "Export writes the rows shown"));
    connect(search_, &QLineEdit::textChanged, this, [this](const QString& t) {
        proxy_->setFilterFixedString(t.trimmed());
        updateSearchCount();
    });
    view_->setObjectName("resultsTable");
    view_->setModel(proxy_);
    view_->setSortingEnabled(true);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->setAlternatingRowColors(true);
    view_->verticalHeader()->setVisible(false);
    view_->verticalHeader()->setDefaultSectionSize(20);
    view_->horizontalHeader()->setStretchLastSection(true);

    auto* top = new QHBoxLayout;
    top->addWidget(drafterLabel_);
    top->addWidget(drafterBox_);
    top->addWidget(loadModels_);
    top->addWidget(modelsNote_, 1);
    top->addWidget(search_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(info_);
    layout->addLayout(top);
    layout->addWidget(liveNote_);
    layout->addWidget(view_, 1);
    drafterLabel_->hide();
    drafterBox_->hide();

    connect(drafterBox_, &QComboBox::currentIndexChanged, this, [this] {
        if (!filling_) emitSelection();
    });
    connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        if (!filling_) emitSelection();
    });
    connect(loadModels_, &QPushButton::clicked, this, &ResultsPanel::loadModelsRequested);
    installExportMenu(view_, exportName(), [this](const QString& p, QString* e) { return exportWidget(view_, p, e); },
                      proxy_);
}

void ResultsPanel::setResults(const ResultsFilePtr& r, const QString& path) {
    filling_ = true;
    results_ = r;
    model_->clear();
    drafterBox_->clear();
    if (!r) {
        info_->setText(tr("No results file open."));
        drafterBox_->hide();
        drafterLabel_->hide();
        loadModels_->setEnabled(false);
        filling_ = false;
        return;
    }
    const int nd = static_cast<int>(r->drafters.size());
    QStringList headers = {tr("#"), tr("id"), tr("prompt tokens"), tr("generated"), tr("steps")};
    for (int d = 0; d < nd; ++d) headers << (nd > 1 ? tr("tau %1").arg(QChar('A' + d)) : tr("tau"));
    for (int d = 0; d < nd; ++d)
        for (int b : r->settings.ddtreeBudgets)
            headers << (nd > 1 ? tr("DDTree %1 tau %2").arg(b).arg(QChar('A' + d)) : tr("DDTree %1 tau").arg(b));
    headers << tr("error");
    model_->setHorizontalHeaderLabels(headers);
    const double failed = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < r->prompts.size(); ++i) {
        const auto& p = r->prompts[i];
        QList<QStandardItem*> row;
        auto* id = textItem(QString::fromStdString(p.id));
        id->setData(QString::fromStdString(p.id + "\n" + p.prompt.text + "\n" + p.error), kSearchRole);
        row << numberItem(static_cast<double>(i + 1), QString::number(i + 1)) << id;
        const DrafterPromptResult* first = p.drafters.empty() ? nullptr : &p.drafters.front();
        if (first) {
            const auto promptLen = static_cast<double>(first->run.promptIds.size());
            const auto generated = static_cast<double>(first->run.outputIds.size()) - promptLen;
            row << numberItem(promptLen, QString::number(promptLen)) << numberItem(generated, QString::number(generated))
                << numberItem(static_cast<double>(first->run.steps.size()), QString::number(first->run.steps.size()));
        } else {
            row << numberItem(failed, "") << numberItem(failed, "") << numberItem(failed, "");
        }
        for (int d = 0; d < nd; ++d) {
            if (static_cast<std::size_t>(d) < p.drafters.size() && p.error.empty()) {
                const double tau = p.drafters[static_cast<std::size_t>(d)].run.tau;
                row << numberItem(tau, QString::number(tau, 'f', 3));
            } else {
                row << numberItem(failed, tr("failed"));
            }
        }
        for (int d = 0; d < nd; ++d)
            for (std::size_t k = 0; k < r->settings.ddtreeBudgets.size(); ++k) {
                const bool has = static_cast<std::size_t>(d) < p.drafters.size() &&
                                 k < p.drafters[static_cast<std::size_t>(d)].trees.size();
                const double tau = has ? p.drafters[static_cast<std::size_t>(d)].trees[k].tau : failed;
                row << numberItem(tau, has ? QString::number(tau, 'f', 3) : QString());
            }
        auto* err = textItem(QString::fromStdString(p.error));
        if (!p.error.empty()) err->setForeground(QColor(0xb0, 0x00, 0x20));
        row << err;
        for (auto* it : row) {
            it->setData(static_cast<int>(i), kPromptRole);
            if (!p.error.empty()) it->setToolTip(QString::fromStdString(p.error));
        }
        model_->appendRow(row);
    }
    for (int d = 0; d < nd; ++d) drafterBox_->addItem(recordedDrafterLabel(*r, d));
    drafterBox_->setVisible(nd > 1);
    drafterLabel_->setVisible(nd > 1);
    int complete = 0;
    for (const auto& p : r->prompts) complete += p.error.empty();
    info_->setText(tr("<b>%1</b> (recorded run, %2): %3 prompts (%4 failed)%5 &middot; target %6 &middot; %7 &middot; "
                      "max new %8, DDTree budgets [%9] &middot; %10")
                       .arg(QFileInfo(path).fileName().toHtmlEscaped(), QString::fromStdString(r->createdUtc))
                       .arg(r->prompts.size()).arg(r->prompts.size() - static_cast<std::size_t>(complete))
                       .arg(r->complete ? QString() : tr(" <b>incomplete (interrupted)</b>"))
                       .arg(QFileInfo(QString::fromStdString(r->target.summary.directory)).fileName().toHtmlEscaped())
                       .arg([&] {
                           QStringList names;
                           for (int d = 0; d < nd; ++d) names << recordedDrafterLabel(*r, d).toHtmlEscaped();
                           return tr("drafters ") + names.join(", ");
                       }())
                       .arg(r->settings.run.maxNewTokens)
                       .arg([&] {
                           QStringList b;
                           for (int v : r->settings.ddtreeBudgets) b << QString::number(v);
                           return b.join(", ");
                       }())
                       .arg(QString::fromStdString(r->producer).toHtmlEscaped()));
    info_->setToolTip(QDir::toNativeSeparators(QFileInfo(path).absoluteFilePath()));
    sortByTau(0);
    view_->resizeColumnsToContents();
    if (proxy_->rowCount() > 0) view_->selectRow(0);  // the worst prompt
    filling_ = false;
    emitSelection();
}

void ResultsPanel::setModelsAvailability(const QString& reason) {
    loadModels_->setEnabled(results_ && reason.isEmpty());
    modelsNote_->setText(reason.isEmpty() ? tr("models found here: load them to recompute drafter attention")
                                          : reason);
}

void ResultsPanel::setLiveRunShown(const QString& note) {
    liveNote_->setText(note);
    liveNote_->setVisible(!note.isEmpty());
    if (note.isEmpty()) return;
    filling_ = true;
    view_->clearSelection();
    view_->selectionModel()->clearCurrentIndex();
    filling_ = false;
}

QString ResultsPanel::liveRunNote() const { return liveNote_->text(); }

int ResultsPanel::currentDrafter() const { return std::max(0, drafterBox_->currentIndex()); }
void ResultsPanel::setCurrentDrafter(int d) { drafterBox_->setCurrentIndex(d); }

int ResultsPanel::currentPrompt() const {
    const auto rows = view_->selectionModel()->selectedRows();
    return rows.isEmpty() ? -1 : rows.first().data(kPromptRole).toInt();
}

void ResultsPanel::selectPrompt(int prompt) {
    for (int pass = 0; pass < 2; ++pass) {
        for (int row = 0; row < proxy_->rowCount(); ++row)
            if (proxy_->index(row, 0).data(kPromptRole).toInt() == prompt) {
                view_->selectRow(row);
                view_->scrollTo(proxy_->index(row, 0));
                return;
            }
        if (search_->text().isEmpty()) return;
        search_->clear();  // the prompt asked for is filtered out: show every prompt again
    }
}

void ResultsPanel::setSearchText(const QString& text) { search_->setText(text); }

QString ResultsPanel::searchText() const { return search_->text(); }

void ResultsPanel::updateSearchCount() {
    const QString t = search_->text().trimmed();
    search_->setStyleSheet(!t.isEmpty() && proxy_->rowCount() == 0 ? QStringLiteral("color: #b00020") : QString());
    search_->setToolTip(t.isEmpty() ? tr("Show only the prompts whose id, text or error contains this (case-insensitive); "
                                         "Export writes the rows shown")
                                    : tr("%1 of %2 prompts match").arg(proxy_->rowCount()).arg(model_->rowCount()));
}

std::vector<std::size_t> ResultsPanel::promptOrder() const {
    std::vector<std::size_t> out;
    for (int row = 0; row < proxy_->rowCount(); ++row)
        out.push_back(static_cast<std::size_t>(proxy_->index(row, 0).data(kPromptRole).toInt()));
    return out;
}

void ResultsPanel::sortByTau(int drafter, Qt::SortOrder order) {
    // Ties keep file order: sort by "#" first (the proxy's sort is stable).
    proxy_->sort(0, Qt::AscendingOrder);
    view_->sortByColumn(tauColumn(drafter), order);
}

void ResultsPanel::emitSelection() {
    const int p = currentPrompt();
    if (results_ && p >= 0) emit promptSelected(p, currentDrafter());
}

QStringList ResultsPanel::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.table(exportName(), proxy_);
    return set.written();
}

}  // namespace draftscope
