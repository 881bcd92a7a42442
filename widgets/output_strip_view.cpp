#include "output_strip_view.h"

#include "figure_export.h"
#include "step_selection.h"
#include "token_display.h"

#include <QDir>
#include <QLabel>
#include <QScrollBar>
#include <QTextBrowser>
#include <QTextDocument>
#include <QUrl>
#include <QVBoxLayout>

namespace draftscope {

OutputStripView::OutputStripView(StepSelection* selection, QWidget* parent)
    : QWidget(parent), selection_(selection), model_(new OutputTokenModel(this)), browser_(new QTextBrowser(this)),
      legend_(new QLabel(this)) {
    setObjectName("OutputStripView");
    browser_->setOpenLinks(false);
    browser_->setOpenExternalLinks(false);
    legend_->setWordWrap(true);
    updateLegend();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(legend_);
    layout->addWidget(browser_);
    connect(browser_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
        if (url.scheme() == "tok") activateToken(url.path().toInt());
    });
    connect(selection_, &StepSelection::changed, this, [this] { render(); });
    installExportMenu(browser_, exportName(), [this](const QString& p, QString* e) { return exportFigure(p, e); },
                      model_);
}

void OutputStripView::setRun(const RunResult& run, const std::vector<QString>& pieces) {
    run_ = run;
    model_->setRun(run, pieces);
    updateLegend();
    render();
}

void OutputStripView::clear() {
    run_ = RunResult{};
    model_->clear();
    browser_->clear();
    updateLegend();
}

void OutputStripView::setComparison(const RunResult& other, const QString& nameA, const QString& nameB) {
    nameA_ = nameA;
    nameB_ = nameB;
    model_->setAcceptedBy(other.steps.empty() ? std::vector<AcceptedBy>{} : acceptedBy(run_, other));
    updateLegend();
    render();
}

QString OutputStripView::legendHtml(bool figure) const {
    QString legend;
    auto swatch = [](const QColor& c, const QString& text) {
        return QStringLiteral("<span style='background-color:%1'>&nbsp;%2&nbsp;</span> ").arg(c.name(), text.toHtmlEscaped());
    };
    if (model_->hasComparison()) {
        legend = tr("Accepted from whose draft: ");
        for (auto o : {AcceptedBy::Prompt, AcceptedBy::Both, AcceptedBy::AOnly, AcceptedBy::BOnly, AcceptedBy::Neither})
            legend += swatch(draftscope::colorOf(o), draftscope::nameOf(o));
        legend += tr(" &nbsp;(A: %1, B: %2; the output is the same for both.)").arg(nameA_.toHtmlEscaped(), nameB_.toHtmlEscaped());
    } else {
        for (auto o : {TokenOrigin::Prompt, TokenOrigin::AcceptedDraft, TokenOrigin::Bonus})
            legend += swatch(OutputTokenModel::colorOf(o), OutputTokenModel::nameOf(o));
        if (!figure) legend += tr(" &nbsp;Click a token to select the step that committed it.");
    }
    return legend;
}

void OutputStripView::updateLegend() {
    // With two drafters the legend is part of the document (it is long); else a label.
    legend_->setText(legendHtml(false));
    legend_->setVisible(!model_->hasComparison());
}

void OutputStripView::activateToken(int i) {
    const int step = model_->stepOf(i);
    if (step < 0) return;
    const auto& st = run_.steps[static_cast<std::size_t>(step)];
    selection_->select(step, static_cast<int>(i - st.start));
}

QString OutputStripView::documentHtml(int selected, bool withLegend) const {
    QString html;
    if (withLegend) html += QStringLiteral("<p>%1</p>").arg(legendHtml(true));
    html += QStringLiteral("<div style='font-family:monospace; line-height:150%'>");
    for (int i = 0; i < model_->rowCount(); ++i) {
        const QColor background = model_->hasComparison() ? draftscope::colorOf(model_->acceptedByOf(i))
                                                          : OutputTokenModel::colorOf(model_->originOf(i));
        const QString piece = model_->pieceOf(i);
        const bool newline = piece.contains('\n');
        const QString text = pieceHtml(piece);
        const bool hot = selected >= 0 && model_->stepOf(i) == selected;
        html += QStringLiteral("<a href='tok:%1' style='text-decoration:none; color:%2; background-color:%3;%4'>%5</a>")
                    .arg(i)
                    .arg(hot ? "#000000" : "#202020", background.name(),
                         hot ? " font-weight:bold; text-decoration:underline;" : "", text);
        if (newline) html += "<br/>";
    }
    html += "</div>";
    return html;
}

void OutputStripView::render() {
    const int scroll = browser_->verticalScrollBar()->value();
    browser_->setHtml(documentHtml(selection_->step(), model_->hasComparison()));
    browser_->verticalScrollBar()->setValue(scroll);
}

bool OutputStripView::exportFigure(const QString& path, QString* error) const {
    QTextDocument doc;
    doc.setDefaultFont(browser_->document()->defaultFont());
    doc.setHtml(figureHtml());
    return exportDocument(doc, path, error, 1000, figureTitle());
}

QStringList OutputStripView::exportAll(const QString& dir, QString* error) {
    FigureSet set(dir, error);
    set.figure(exportName(), [this](const QString& path, QString* e) { return exportFigure(path, e); }) &&
        set.table(exportName(), model_);
    return set.written();
}

}  // namespace draftscope
