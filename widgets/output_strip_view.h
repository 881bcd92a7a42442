#pragma once
// The committed text, token by token, coloured by origin (prompt, accepted draft, bonus).
// Clicking a token selects the verify step that committed it.

#include "exportable_view.h"
#include "output_token_model.h"

#include <QWidget>

class QTextBrowser;
class QLabel;

namespace draftscope {

class StepSelection;

class OutputStripView : public QWidget, public ExportableView {
    Q_OBJECT
public:
    OutputStripView(StepSelection* selection, QWidget* parent = nullptr);
    OutputTokenModel* model() const { return model_; }
    QTextBrowser* browser() const { return browser_; }
    void setRun(const RunResult& run, const std::vector<QString>& pieces);
    void clear();
    /// Colours every token by which drafter accepted it (acceptedBy(): A and B, A only,
    /// B only, neither) instead of by origin; `other` is drafter B's run on the same prompt
    /// (this view shows A's steps). An empty `other` returns to the single-drafter colours.
    void setComparison(const RunResult& other, const QString& nameA, const QString& nameB);
    /// Selects the step that committed token `tokenIndex` (what a click does).
    void activateToken(int tokenIndex);

    QString exportName() const override { return "output_strip"; }
    /// The figure is the whole text with its legend and without the selected step's
    /// highlight (a transient on-screen state).
    QStringList exportAll(const QString& dir, QString* error) override;
    /// The HTML the figure is made of (what exportAll() draws).
    QString figureHtml() const { return documentHtml(-1, true); }

private:
    void render();
    void updateLegend();
    /// Swatches of the colours; `figure` leaves out the on-screen hint.
    QString legendHtml(bool figure) const;
    /// The text; tokens of `selectedStep` (-1: none) bold and underlined; the legend on top
    /// if `withLegend`.
    QString documentHtml(int selectedStep, bool withLegend) const;
    bool exportFigure(const QString& path, QString* error) const;
    StepSelection* selection_;
    OutputTokenModel* model_;
    QTextBrowser* browser_;
    QLabel* legend_;
    RunResult run_;
    QString nameA_, nameB_;
};

}  // namespace draftscope
