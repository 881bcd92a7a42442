#include "output_strip_view.h"

#include "figure_export.h"
#include "step_selection.h"

#include <QDir>
#include <QLabel>
#include <QScrollBar>
#include <QTextBrowser>
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
    installExportMenu(browser_, exportName(), [this](const QString& p, QString* e) { return exportDocument(*browser_->document(), p, e, 1000); },
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

void OutputStripView::updateLegend() {
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
        legend += tr(" &nbsp;Click a token to select the step that committed it.");
    }
    // With two drafters the legend is part of the document, so exported figures carry it.
    legend_->setText(legend);
    legend_->setVisible(!model_->hasComparison());
}

void OutputStripView::activateToken(int i) {
    const int step = model_->stepOf(i);
    if (step < 0) return;
    const auto& st = run_.steps[static_cast<std::size_t>(step)];
    selection_->select(step, static_cast<int>(i - st.start));
}

void OutputStripView::render() {
    const int selected = selection_->step();
    QString html;
    if (model_->hasComparison()) html += QStringLiteral("<p>%1</p>").arg(legend_->text());
    html += QStringLiteral("<div style='font-family:monospace; line-height:150%'>");
    for (int i = 0; i < model_->rowCount(); ++i) {
        const QColor background = model_->hasComparison() ? draftscope::colorOf(model_->acceptedByOf(i))
                                                          : OutputTokenModel::colorOf(model_->originOf(i));
        QString text = model_->pieceOf(i).toHtmlEscaped();
        const bool newline = text.contains('\n');
        text.replace(' ', "&nbsp;").replace('\t', "&nbsp;&nbsp;&nbsp;&nbsp;").replace('\n', QStringLiteral("\u21b5"));
        const bool hot = selected >= 0 && model_->stepOf(i) == selected;
        html += QStringLiteral("<a href='tok:%1' style='text-decoration:none; color:%2; background-color:%3;%4'>%5</a>")
                    .arg(i)
                    .arg(hot ? "#000000" : "#202020", background.name(),
                         hot ? " font-weight:bold; text-decoration:underline;" : "", text);
        if (newline) html += "<br/>";
    }
    html += "</div>";
    const int scroll = browser_->verticalScrollBar()->value();
    browser_->setHtml(html);
    browser_->verticalScrollBar()->setValue(scroll);
}

QStringList OutputStripView::exportAll(const QString& dir, QString* error) {
    QStringList written;
    for (const auto& fmt : figureFormats()) {
        const QString path = QDir(dir).filePath(exportName() + "." + fmt);
        if (!exportDocument(*browser_->document(), path, error, 1000)) return written;
        written << path;
    }
    for (const auto& fmt : tableFormats()) {
        const QString path = QDir(dir).filePath(exportName() + "." + fmt);
        if (!exportTable(model_, path, error)) return written;
        written << path;
    }
    return written;
}

}  // namespace draftscope
