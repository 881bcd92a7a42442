#include "comparison_summary_view.h"

#include "figure_export.h"

#include <QDir>
#include <QHeaderView>
#include <QLabel>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace draftscope {

namespace {

/// ".../parent/name" for a path with more than two components, else the path.
QString shortPath(const QString& path) {
    const QStringList parts = QDir::cleanPath(path).split('/', Qt::SkipEmptyParts);
    return parts.size() > 2 ? QStringLiteral("\u2026/") + parts.mid(parts.size() - 2).join('/') : path;
}

}  // namespace

double meanDraftProb(const RunResult& run, bool acceptedOnly) {
    double sum = 0;
    std::int64_t n = 0;
    for (const auto& st : run.steps) {
        const int upto = acceptedOnly ? st.acceptedCount : static_cast<int>(st.draftProb.size());
        for (int j = 0; j < upto && j < static_cast<int>(st.draftProb.size()); ++j) {
            sum += st.draftProb[static_cast<std::size_t>(j)];
            ++n;
        }
    }
    return n ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

ComparisonSummaryView::ComparisonSummaryView(QWidget* parent)
    : QWidget(parent), caption_(new QLabel(this)), view_(new QTableView(this)), table_(new QStandardItemModel(this)) {
    setObjectName("ComparisonSummaryView");
    caption_->setWordWrap(true);
    view_->setModel(table_);
    view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view_->verticalHeader()->setVisible(false);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(caption_);
    layout->addWidget(view_);
    installExportMenu(view_, exportName(), [this](const QString& p, QString* e) { return exportWidget(this, p, e); }, table_);
    clear();
}

void ComparisonSummaryView::clear() {
    table_->clear();
    table_->setHorizontalHeaderLabels({tr("quantity"), tr("A"), tr("B"), tr("B - A"), tr("differs")});
    caption_->setText(tr("Load a second drafter (B) in the Models panel to compare two drafters on the same prompt."));
}

int ComparisonSummaryView::rowOf(const QString& quantity) const {
    for (int r = 0; r < table_->rowCount(); ++r)
        if (table_->item(r, 0)->text() == quantity) return r;
    return -1;
}

void ComparisonSummaryView::setComparison(const DrafterRuns& a, const DrafterRuns& b) {
    clear();
    table_->setHorizontalHeaderLabels({tr("quantity"), tr("A: %1").arg(a.name), tr("B: %1").arg(b.name), tr("B - A"),
                                       tr("differs")});
    auto add = [this](const QString& q, const QString& va, const QString& vb, const QString& delta, bool differs) {
        QList<QStandardItem*> row = {new QStandardItem(q), new QStandardItem(va), new QStandardItem(vb),
                                     new QStandardItem(delta), new QStandardItem(differs ? "yes" : "")};
        if (differs)
            for (auto* it : row) {
                QFont f = it->font();
                f.setBold(true);
                it->setFont(f);
                it->setBackground(QColor(0xf3, 0xe5, 0xf5));
            }
        table_->appendRow(row);
    };
    auto num = [&](const QString& q, double va, double vb, int prec = 4) {
        const bool na = std::isnan(va), nb = std::isnan(vb);
        add(q, na ? QString() : QString::number(va, 'f', prec), nb ? QString() : QString::number(vb, 'f', prec),
            na || nb ? QString() : QString::number(vb - va, 'f', prec),
            !na && !nb && QString::number(va, 'f', prec) != QString::number(vb, 'f', prec));
    };
    auto integer = [&](const QString& q, qint64 va, qint64 vb) {
        add(q, QString::number(va), QString::number(vb), QString::number(vb - va), va != vb);
    };
    auto text = [&](const QString& q, const QString& va, const QString& vb) { add(q, va, vb, QString(), va != vb); };
    auto ids = [](const std::vector<std::int64_t>& v) {
        QStringList s;
        for (auto i : v) s << QString::number(i);
        return "[" + s.join(", ") + "]";
    };

    num(tr("tau"), a.run.tau, b.run.tau);
    integer(tr("verify steps"), static_cast<qint64>(a.run.steps.size()), static_cast<qint64>(b.run.steps.size()));
    integer(tr("generated tokens"), static_cast<qint64>(a.run.outputIds.size() - a.run.promptIds.size()),
            static_cast<qint64>(b.run.outputIds.size() - b.run.promptIds.size()));
    const bool same = a.run.outputIds == b.run.outputIds;
    add(tr("outputs identical"), same ? tr("yes") : tr("no"), same ? tr("yes") : tr("no"), QString(), !same);
    num(tr("mean draft prob (all drafted positions)"), meanDraftProb(a.run, false), meanDraftProb(b.run, false));
    num(tr("mean draft prob (accepted positions)"), meanDraftProb(a.run, true), meanDraftProb(b.run, true));
    const auto B = std::max(a.run.perPositionAcceptance.size(), b.run.perPositionAcceptance.size());
    auto at = [](const std::vector<double>& v, std::size_t j) {
        return j < v.size() ? v[j] : std::numeric_limits<double>::quiet_NaN();
    };
    for (std::size_t j = 1; j < B; ++j)
        num(tr("acceptance rate at position %1").arg(j), at(a.run.perPositionAcceptance, j),
            at(b.run.perPositionAcceptance, j));
    for (const auto& ta : a.trees)
        for (const auto& tb : b.trees)
            if (ta.budget == tb.budget) num(tr("DDTree tau, budget %1").arg(ta.budget), ta.tau, tb.tau);
    {  // The last two path components on screen (the columns stay narrow); the whole path in
       // the tooltip and in CSV/JSON exports.
        const QString da = QString::fromStdString(a.drafter.directory), db = QString::fromStdString(b.drafter.directory);
        add(tr("directory"), shortPath(da), shortPath(db), QString(), da != db);
        for (int c = 1; c <= 2; ++c) {
            QStandardItem* it = table_->item(table_->rowCount() - 1, c);
            it->setToolTip(c == 1 ? da : db);
            it->setData(c == 1 ? da : db, kExportRole);
        }
    }
    integer(tr("drafter layers"), a.drafter.numLayers, b.drafter.numLayers);
    integer(tr("block size"), a.drafter.blockSize, b.drafter.blockSize);
    text(tr("tapped target layers"), ids(a.drafter.targetLayerIds) + (a.drafter.targetLayerIdsDerived ? tr(" (derived)") : ""),
         ids(b.drafter.targetLayerIds) + (b.drafter.targetLayerIdsDerived ? tr(" (derived)") : ""));
    integer(tr("mask token id"), a.drafter.maskTokenId, b.drafter.maskTokenId);
    integer(tr("parameters"), a.drafter.parameters, b.drafter.parameters);
    fitColumns();
    caption_->setText(tr("A: %1 (tau %2) vs B: %3 (tau %4), same target and prompt. Rows that differ are bold; "
                         "tau counts the bonus token.")
                          .arg(a.name).arg(a.run.tau, 0, 'f', 3).arg(b.name).arg(b.run.tau, 0, 'f', 3));
}

void ComparisonSummaryView::fitColumns() {
    // A narrow dock keeps A, B, B - A and differs whole: they are sized to their cells (the
    // long "A: <drafter>" headers elide; the caption and the export name the drafters), the
    // quantity column takes the rest and elides (its tooltip holds it whole).
    const QFontMetrics fm = view_->fontMetrics();
    auto* header = view_->horizontalHeader();
    header->setTextElideMode(Qt::ElideRight);
    view_->setTextElideMode(Qt::ElideRight);
    for (int c = 1; c < table_->columnCount(); ++c) {
        int w = fm.horizontalAdvance(c == 3 ? tr("B - A") : c == 4 ? tr("differs") : QStringLiteral("B: ab")) + 20;
        for (int r = 0; r < table_->rowCount(); ++r)
            if (const QStandardItem* it = table_->item(r, c)) {
                QFont f = it->font();
                w = std::max(w, QFontMetrics(f).horizontalAdvance(it->text()) + 14);
            }
        header->setSectionResizeMode(c, QHeaderView::Fixed);
        view_->setColumnWidth(c, w);
    }
    header->setStretchLastSection(false);
    header->setSectionResizeMode(0, QHeaderView::Stretch);
    header->setMinimumSectionSize(fm.horizontalAdvance(QStringLiteral("B - A")) + 16);
    for (int r = 0; r < table_->rowCount(); ++r)
        if (QStandardItem* it = table_->item(r, 0)) it->setToolTip(it->text());
    for (int c = 1; c <= 2 && c < table_->columnCount(); ++c)
        if (QStandardItem* h = table_->horizontalHeaderItem(c)) h->setToolTip(h->text());
}

QStringList ComparisonSummaryView::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.table(exportName(), table_);
    return set.written();
}

}  // namespace draftscope
