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
    QString legend;
    for (auto o : {TokenOrigin::Prompt, TokenOrigin::AcceptedDraft, TokenOrigin::Bonus})
        legend += QStringLiteral("<span style='background-color:%1'>&nbsp;%2&nbsp;</span> ")
                      .arg(OutputTokenModel::colorOf(o).name(), OutputTokenModel::nameOf(o));
    legend_->setText(legend + tr(" &nbsp;Click a token to select the step that committed it."));
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
    render();
}

void OutputStripView::clear() {
    run_ = RunResult{};
    model_->clear();
    browser_->clear();
}

void OutputStripView::activateToken(int i) {
    const int step = model_->stepOf(i);
    if (step < 0) return;
    const auto& st = run_.steps[static_cast<std::size_t>(step)];
    selection_->select(step, static_cast<int>(i - st.start));
}

void OutputStripView::render() {
    const int selected = selection_->step();
    QString html = QStringLiteral("<div style='font-family:monospace; line-height:150%'>");
    for (int i = 0; i < model_->rowCount(); ++i) {
        const auto origin = model_->originOf(i);
        QString text = model_->pieceOf(i).toHtmlEscaped();
        const bool newline = text.contains('\n');
        text.replace(' ', "&nbsp;").replace('\t', "&nbsp;&nbsp;&nbsp;&nbsp;").replace('\n', QStringLiteral("\u21b5"));
        const bool hot = selected >= 0 && model_->stepOf(i) == selected;
        html += QStringLiteral("<a href='tok:%1' style='text-decoration:none; color:%2; background-color:%3;%4'>%5</a>")
                    .arg(i)
                    .arg(hot ? "#000000" : "#202020", OutputTokenModel::colorOf(origin).name(),
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
