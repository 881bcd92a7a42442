// Tools > Diagnose and Tools > Compare target loads: the findings model and the probe-tau
// plot data on hand-built reports, the target-loads verdict on hand-built comparisons, and
// both docks end to end on the demo pair (small probe selections so it stays fast), against
// the backend called directly.

#include "diagnosis_findings_model.h"
#include "figure_export.h"
#include "gui/analysis_controller.h"
#include "gui/diagnose_panel.h"
#include "gui/main_window.h"
#include "gui/prompt_panel.h"
#include "gui/target_loads_panel.h"
#include "gui/tool_run_controls.h"
#include "gui_test_support.h"
#include "mask_view.h"
#include "hidden_stats_view.h"
#include "probe_tau_plot.h"
#include "step_selection.h"
#include "target_loads_view.h"
#include "test_support.h"

#include <qcustomplot.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTabBar>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

using namespace draftscope;
using namespace testsupport;

namespace {

Finding finding(const std::string& id, Severity s, const std::string& message,
                std::vector<std::pair<std::string, double>> evidence = {}) {
    Finding f;
    f.id = id;
    f.severity = s;
    f.message = message;
    f.evidence = std::move(evidence);
    return f;
}

ConventionProbe probe(const std::string& family, const std::string& alternative, double declared, double tau,
                      double lower, double upper, bool raised) {
    ConventionProbe p;
    p.family = family;
    p.alternative = alternative;
    // The plot shows the expected acceptance (the findings' statistic); the greedy probe tau
    // is set apart from it so that a plot of the wrong one fails.
    p.expectedDeclaredTau = declared;
    p.expectedTau = tau;
    p.expectedDifference = {tau - declared, lower, upper, 100};
    p.declaredTau = declared + 1.0;
    p.tau = tau + 1.0;
    p.difference = {tau - declared, lower - 0.5, upper + 0.5, 100};
    p.finding = raised;
    return p;
}

/// Two loaded drafters and one that did not load, findings of every severity.
DiagnosisReport handReport() {
    DiagnosisReport r;
    DrafterDiagnosis a, b, c;
    a.path = "/models/run1/dflash";
    a.loaded = true;
    a.rank = 1;
    a.findings = {finding("acceptance", Severity::Info, "tau 2.50", {{"tau", 2.5}, {"probe_tau", 2.25}}),
                  finding("convention-window", Severity::Error, "drop the window, layer 0",
                          {{"declared_tau", 2.0}, {"difference_lower", 0.123456}}),
                  finding("low-acceptance", Severity::Warning, "tau below 1.3")};
    a.conventionProbes = {probe("block-causal", "every layer causal", 2.0, 2.3, 0.1, 0.5, true),
                          probe("window", "layer 0 sliding 24", 2.0, 1.8, -0.35, -0.05, false)};
    b.path = "/models/run2/dflash";
    b.loaded = true;
    b.rank = 2;
    b.findings = {finding("tapped-layers-derived", Severity::Info, "derived, as the fallback rule"),
                  finding("label-shift", Severity::Error, "labels, shifted", {{"next_position_match", 0.5}})};
    b.conventionProbes = {probe("block-causal", "every layer causal", 1.5, 1.4, -0.2, 0.0, false),
                          probe("tap-offset", "taps -1", 1.5, 1.6, 0.02, 0.18, false)};
    c.path = "/models/broken";
    c.rank = 3;
    c.findings = {finding("load-failed", Severity::Error, "missing fc.weight")};
    r.drafters = {a, b, c};
    return r;
}

ModelRequest demoPair(bool withB) {
    ModelRequest r;
    r.targetDir = QString::fromStdString(demoTarget());
    r.drafterDir = QString::fromStdString(demoDrafter());
    if (withB) r.drafterBDir = QString::fromStdString(drafterDir("drafter-label-shift"));
    return r;
}

[[nodiscard]] bool loadAndWait(AnalysisController& c, const ModelRequest& r) {
    QSignalSpy loaded(&c, &AnalysisController::modelsLoaded);
    c.loadModels(r);
    return waitForSignal(loaded, 60000);
}

/// Runs a short chain analysis on `c` and returns its bundle (null after two minutes).
RunBundlePtr analyseShort(AnalysisController& c) {
    QSignalSpy finished(&c, &AnalysisController::analysisFinished);
    AnalysisRequest r;
    r.prompt = goldenPrompt(0);
    r.settings.maxNewTokens = 16;
    r.settings.ignoreEos = true;
    c.analyse(r);
    if (!waitForSignal(finished, 120000)) return nullptr;
    return finished.first().first().value<RunBundlePtr>();
}

std::vector<DiagnosePrompt> twoPrompts() {
    PromptSpec a, b;
    a.text = "def fibonacci(n):";
    b.text = "import numpy as np\n";
    return {{"fib", a}, {"np", b}};
}

/// Whether the dock titled `title` is the current tab of its tab group in `w`.
bool isFrontTab(QMainWindow& w, const QString& title) {
    for (auto* bar : w.findChildren<QTabBar*>())
        for (int i = 0; i < bar->count(); ++i)
            if (bar->tabText(i) == title) return bar->currentIndex() == i;
    return false;
}

QString readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TestDiagnoseGui : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("draftscope-tests");
        QCoreApplication::setApplicationName("tst_diagnose_gui");
    }

    void findingsSortedBySeverity() {
        DiagnosisFindingsModel m;
        m.setReport(handReport(), {"A: run1", "B: run2"});
        QCOMPARE(m.rowCount(), 6);
        QCOMPARE(m.columnCount(), 5);
        // error (A, B, the unloaded third in rank order), warning, info (A, B).
        const QStringList ids = {"convention-window", "label-shift", "load-failed", "low-acceptance", "acceptance",
                                 "tapped-layers-derived"};
        const QStringList sev = {"error", "error", "error", "warning", "info", "info"};
        const QList<int> drafter = {0, 1, 2, 0, 0, 1};
        for (int r = 0; r < 6; ++r) {
            QCOMPARE(m.index(r, DiagnosisFindingsModel::IdColumn).data().toString(), ids[r]);
            QCOMPARE(m.index(r, DiagnosisFindingsModel::SeverityColumn).data().toString(), sev[r]);
            QCOMPARE(m.drafterOf(r), drafter[r]);
            QCOMPARE(QString::fromStdString(m.findingAt(r).id), ids[r]);
        }
        QCOMPARE(m.index(0, DiagnosisFindingsModel::DrafterColumn).data().toString(), QString("A: run1"));
        QCOMPARE(m.index(1, DiagnosisFindingsModel::DrafterColumn).data().toString(), QString("B: run2"));
        QCOMPARE(m.index(2, DiagnosisFindingsModel::DrafterColumn).data().toString(), QString("#3 broken"));  // no name given
        QCOMPARE(m.index(0, DiagnosisFindingsModel::MessageColumn).data().toString(), QString("drop the window, layer 0"));
        QCOMPARE(m.index(0, DiagnosisFindingsModel::EvidenceColumn).data().toString(),
                 QString("declared_tau=2, difference_lower=0.1235"));
        QCOMPARE(m.index(4, DiagnosisFindingsModel::EvidenceColumn).data().toString(), QString("tau=2.5, probe_tau=2.25"));
        QCOMPARE(m.index(3, DiagnosisFindingsModel::EvidenceColumn).data().toString(), QString());
        QCOMPARE(m.index(0, 0).data(Qt::ForegroundRole).value<QColor>(), QColor(0xc6, 0x28, 0x28));
        QCOMPARE(m.index(3, 0).data(Qt::ForegroundRole).value<QColor>(), QColor(0xb2, 0x6a, 0x00));
        QCOMPARE(m.headerData(4, Qt::Horizontal).toString(), QString("evidence"));
        QVERIFY_THROWS_EXCEPTION(std::out_of_range, m.findingAt(6));
        // The table exports what it shows (CSV quoting the comma in a message).
        QTemporaryDir tmp;
        QString err;
        QVERIFY2(exportTable(&m, tmp.filePath("f.csv"), &err), qPrintable(err));
        const QStringList lines = readAll(tmp.filePath("f.csv")).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 7);
        QCOMPARE(lines[0].trimmed(), QString("severity,drafter,id,message,evidence"));
        QCOMPARE(lines[2].trimmed(), QString("error,B: run2,label-shift,\"labels, shifted\",next_position_match=0.5"));
        m.clear();
        QCOMPARE(m.rowCount(), 0);
    }

    void findingsLinkToTheirViews() {
        QCOMPARE(viewForFinding("convention-block-causal"), FindingView::Masks);
        QCOMPARE(viewForFinding("convention-window"), FindingView::Masks);
        QCOMPARE(viewForFinding("convention-tap-offset"), FindingView::HiddenStates);
        QCOMPARE(viewForFinding("convention-position-offset"), FindingView::BlockGrid);
        QCOMPARE(viewForFinding("context-leak"), FindingView::MaskDiff);
        QCOMPARE(viewForFinding("sliding-window-dropped"), FindingView::Masks);
        QCOMPARE(viewForFinding("tapped-last-layer"), FindingView::HiddenStates);
        for (const char* id : {"label-shift", "draft-repetition", "acceptance"})
            QCOMPARE(viewForFinding(id), FindingView::BlockGrid);
        for (const char* id : {"fc-width", "load-failed", "tapped", "context"})
            QCOMPARE(viewForFinding(id), FindingView::None);

        // What to select: drafter-swa's layout (layer 0 sliding 24 causal, layer 1 full
        // bidirectional), taps [1, 3, 5].
        DrafterDiagnosis d;
        d.summary.layout = {{true, 24}, {false, std::nullopt}};
        d.summary.targetLayerIds = {1, 3, 5};
        ConventionProbe window = probe("window", "layer 1 sliding 24", 2.0, 2.6, 0.2, 0.8, true);
        window.convention.window = {{}, {ProbeConvention::Window::Kind::Given, 24}};
        ConventionProbe causal = probe("block-causal", "layer 1 causal", 2.0, 2.5, 0.1, 0.7, true);
        causal.convention.blockAttention = {ProbeConvention::BlockAttention::Declared, ProbeConvention::BlockAttention::Causal};
        ConventionProbe quiet = probe("block-causal", "layer 0 bidirectional", 2.0, 1.9, -0.2, 0.0, false);
        quiet.convention.blockAttention = {ProbeConvention::BlockAttention::Bidirectional};
        d.conventionProbes = {window, quiet, causal};
        auto target = [&](const char* id) { return findingTarget(d, finding(id, Severity::Error, "", {})); };
        QCOMPARE(target("convention-window").layer, 1);        // the layer its probe changed
        QCOMPARE(target("convention-block-causal").layer, 1);  // the probe that raised it, not the quiet one
        QCOMPARE(target("sliding-window-dropped").layer, 0);   // the first sliding layer
        QCOMPARE(target("convention-window").view, FindingView::Masks);
        QCOMPARE(target("convention-tap-offset").tappedLayer, std::int64_t(1));
        QCOMPARE(target("tapped-last-layer").tappedLayer, std::int64_t(5));
        QVERIFY(target("label-shift").firstRejectedStep);
        QVERIFY(!target("context-leak").firstRejectedStep);
        QCOMPARE(target("context-leak").view, FindingView::MaskDiff);
        QCOMPARE(target("fc-width").view, FindingView::None);
    }

    void probeTauPlotData() {
        const auto data = probeTauData(handReport(), {0, 1, 1}, {"A: run1", "B: run2", "B?"});
        QCOMPARE(data.categories, QStringList({"block-causal: every layer causal", "window: layer 0 sliding 24",
                                               "tap-offset: taps -1"}));
        QCOMPARE(data.series.size(), std::size_t(2));  // the unloaded drafter has no probes
        const auto& a = data.series[0];
        QCOMPARE(a.name, QString("A: run1"));
        QCOMPARE(a.which, 0);
        QCOMPARE(a.declaredTau, 2.0);
        QCOMPARE(a.category, QVector<double>({0, 1}));
        QCOMPARE(a.tau, QVector<double>({2.3, 1.8}));
        QCOMPARE(a.lower, QVector<double>({2.0 + 0.1, 2.0 - 0.35}));
        QCOMPARE(a.upper, QVector<double>({2.0 + 0.5, 2.0 - 0.05}));
        QCOMPARE(a.finding, QVector<bool>({true, false}));
        const auto& b = data.series[1];
        QCOMPARE(b.which, 1);
        QCOMPARE(b.declaredTau, 1.5);
        QCOMPARE(b.category, QVector<double>({0, 2}));
        QCOMPARE(b.lower, QVector<double>({1.5 - 0.2, 1.5 + 0.02}));
        QCOMPARE(b.upper, QVector<double>({1.5, 1.5 + 0.18}));

        ProbeTauPlot plot;
        plot.resize(800, 500);
        plot.setData(data);
        // A: points, finding stars, declared line; B: points, declared line; + 2 error bars.
        QCOMPARE(plot.plot()->graphCount(), 5);
        QCOMPARE(plot.plot()->plottableCount(), 7);
        QCPErrorBars* bars = nullptr;
        for (int i = 0; i < plot.plot()->plottableCount() && !bars; ++i)
            bars = qobject_cast<QCPErrorBars*>(plot.plot()->plottable(i));
        QVERIFY(bars);
        QCOMPARE(bars->data()->size(), 2);
        QVERIFY(qAbs(bars->data()->at(0).errorMinus - 0.2) < 1e-12);  // 2.3 - 2.1
        QVERIFY(qAbs(bars->data()->at(0).errorPlus - 0.2) < 1e-12);   // 2.5 - 2.3
        QCOMPARE(plot.plot()->graph(1)->data()->size(), 1);           // A's one finding
        QCOMPARE(plot.plot()->graph(1)->data()->at(0)->value, 2.3);
        QCOMPARE(plot.plot()->graph(2)->name(), QString("A: run1: declared 2.00"));
        auto* ticker = dynamic_cast<QCPAxisTickerText*>(plot.plot()->yAxis->ticker().data());
        QVERIFY(ticker);
        QCOMPARE(ticker->ticks().values(), data.categories);
        QCOMPARE(plot.table()->rowCount(), 4);
        QCOMPARE(plot.table()->item(0, 1)->text(), QString("block-causal"));
        QCOMPARE(plot.table()->item(0, 2)->text(), QString("every layer causal"));
        QVERIFY(qAbs(plot.table()->item(0, 5)->data(Qt::DisplayRole).toDouble() - 0.3) < 1e-12);
        QCOMPARE(plot.table()->item(0, 8)->text(), QString("yes"));
        QCOMPARE(plot.table()->item(3, 0)->text(), QString("B: run2"));
        QTemporaryDir tmp;
        QString err;
        const auto written = plot.exportAll(tmp.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(written.size(), 5);  // png, svg, pdf, csv, json
    }

    void probeLegendIsNeverClipped() {
        // Every probe row for A and B (each with findings: six legend entries) in a narrow
        // dock: the legend wraps onto more rows and the plot grows to hold them (the dock
        // scrolls) instead of squeezing the legend out of the widget.
        DiagnosisReport report = handReport();
        for (auto* d : {&report.drafters[0], &report.drafters[1]}) {
            d->conventionProbes.clear();
            for (int k = 0; k < 12; ++k)
                d->conventionProbes.push_back(probe("window", "layer " + std::to_string(k) + " sliding 24", 2.0, 2.4, 0.1, 0.6, k % 3 == 0));
        }
        const auto data = probeTauData(report, {0, 1}, {"A: a drafter with a long name", "B: another long drafter name"});
        for (const int width : {900, 420, 260}) {
            ProbeTauPlot plot;
            plot.resize(width, 150);
            plot.setData(data);
            plot.show();
            QVERIFY(QTest::qWaitForWindowExposed(&plot));
            QTest::qWait(20);
            plot.plot()->replot();
            QCPLegend* legend = plot.plot()->legend;
            QCOMPARE(legend->itemCount(), 6);
            const QRect inside = plot.plot()->rect();
            QVERIFY2(inside.contains(legend->outerRect()),
                     qPrintable(QString("width %1: legend %2 px high at y %3, plot %4 px high").arg(width)
                                    .arg(legend->outerRect().height()).arg(legend->outerRect().top()).arg(inside.height())));
            QVERIFY2(legend->outerRect().height() >= legend->minimumOuterSizeHint().height(), qPrintable(QString::number(width)));
            for (int i = 0; i < legend->itemCount(); ++i)
                QVERIFY2(inside.contains(legend->item(i)->outerRect()), qPrintable(QString("width %1 entry %2").arg(width).arg(i)));
            // Each of the 12 alternatives keeps a readable row.
            QVERIFY2(plot.plot()->axisRect()->height() >= 12 * 16, qPrintable(QString::number(plot.plot()->axisRect()->height())));
        }
    }

    void targetLoadsVerdicts() {
        auto layer = [](std::int64_t i, double maxAbs, double minCos) {
            LayerDifference l;
            l.index = i;
            l.maxAbs = maxAbs;
            l.minCosine = minCos;
            l.meanCosine = minCos;
            return l;
        };
        TargetLoadComparison c;
        c.ids = {1, 2, 3, 4};
        c.layers = {layer(0, 0, 1), layer(1, 0, 1)};
        QVERIFY(targetLoadsVerdict(c).startsWith("Identical"));
        c.layers = {layer(0, 0, 1), layer(1, 0.01, 0.9995), layer(2, 0.02, 0.9991)};
        c.logitsMaxAbs = 0.05;
        const QString close = targetLoadsVerdict(c);
        QVERIFY2(close.startsWith("Close") && close.contains("lowest cosine 0.999100 at hidden state 2"), qPrintable(close));
        c.argmaxAgreement = 0.75;  // a near-tie flipped by rounding: still close, the agreement reported
        QVERIFY(targetLoadsVerdict(c).startsWith("Close") && targetLoadsVerdict(c).contains("argmax agreement 75.0%"));
        c.layers = {layer(0, 0, 1), layer(1, 3, 0.5), layer(2, 4, 0.2)};
        c.argmaxAgreement = 0.5;
        const QString diff = targetLoadsVerdict(c);
        QVERIFY2(diff.startsWith("Different: hidden states diverge from index 1 on (cosine 0.500000") &&
                     diff.contains("argmax agreement 50.0%"),
                 qPrintable(diff));
        QCOMPARE(targetLoadsVerdict({}), QString());
    }

    // The dock on the demo pair (A + the label-shift drafter as B): the same report as
    // diagnoseDrafters() called directly, the findings and plot filled, export, and the
    // loaded models untouched (an analysis afterwards still compares A and B).
    void diagnoseDockEndToEnd() {
        MainWindow w(false);
        w.resize(1400, 900);
        w.show();
        QAction* action = w.findChild<QAction*>("diagnoseAction");
        QVERIFY(action);
        QVERIFY(!action->isEnabled());  // nothing loaded yet
        QVERIFY(loadAndWait(*w.controller(), demoPair(true)));
        deliverQueuedSlots();
        QVERIFY(action->isEnabled());
        action->trigger();
        QVERIFY(w.findChild<QDockWidget*>("diagnoseDock")->isVisible());
        DiagnosePanel* panel = w.diagnosePanel();
        QVERIFY(panel->includeBBox()->isEnabled());
        const auto prompts = twoPrompts();
        w.promptPanel()->setPromptSet({{"fib", "def fibonacci(n):", false}, {"np", "import numpy as np\n", false}});
        panel->promptsBox()->setCurrentIndex(1);  // the Prompt panel's set
        panel->maxNewBox()->setValue(24);
        const std::vector<std::string> families = {"static", "acceptance", "label-shift"};
        for (const auto& f : diagnoseProbeFamilies())
            panel->probeBox(QString::fromStdString(f))->setChecked(std::find(families.begin(), families.end(), f) != families.end());
        QSignalSpy done(w.controller(), &AnalysisController::diagnosisFinished);
        QTest::mouseClick(panel->controls()->runButton(), Qt::LeftButton);
        QVERIFY(!panel->controls()->runButton()->isEnabled());  // running
        QVERIFY(waitForSignal(done, 180000));
        QVERIFY(panel->controls()->runButton()->isEnabled());
        const DiagnoseResultPtr result = panel->result();
        QVERIFY(result);

        Engine e;
        e.loadTarget(demoTarget());
        DiagnoseSettings s;
        s.maxNewTokens = 24;
        s.probes = families;
        const auto expected = diagnoseDrafters(e, {demoDrafter(), drafterDir("drafter-label-shift")}, prompts, s);
        QCOMPARE(result->report.drafters.size(), expected.drafters.size());
        QCOMPARE(result->report.settings.probes, expected.settings.probes);
        int findings = 0;
        for (std::size_t i = 0; i < expected.drafters.size(); ++i) {
            const auto& got = result->report.drafters[i];
            const auto& want = expected.drafters[i];
            QCOMPARE(got.path, want.path);
            QCOMPARE(got.tau, want.tau);
            QCOMPARE(got.probeTau, want.probeTau);
            QCOMPARE(got.findings.size(), want.findings.size());
            for (std::size_t k = 0; k < want.findings.size(); ++k) QCOMPARE(got.findings[k].id, want.findings[k].id);
            QCOMPARE(got.conventionProbes.size(), want.conventionProbes.size());
            QVERIFY(!got.conventionProbes.empty());
            QCOMPARE(got.conventionProbes.front().family, std::string("label-shift"));
            QCOMPARE(got.conventionProbes.front().tau, want.conventionProbes.front().tau);
            // A is the demo drafter, B the label-shift one, whatever their rank.
            QCOMPARE(result->which[i], got.path == demoDrafter() ? 0 : 1);
            findings += static_cast<int>(want.findings.size());
        }
        QCOMPARE(panel->findings()->rowCount(), findings);
        for (int r = 1; r < findings; ++r)
            QVERIFY(panel->findings()->findingAt(r - 1).severity >= panel->findings()->findingAt(r).severity);
        const auto& series = panel->probePlot()->data().series;
        QCOMPARE(series.size(), std::size_t(2));
        QCOMPARE(panel->probePlot()->data().categories.size(), qsizetype(1));  // label-shift's one alternative
        for (const auto& sr : series) QVERIFY(sr.name.startsWith(sr.which == 0 ? "A: " : "B: "));
        QVERIFY(panel->controls()->status().startsWith("done: "));

        QTemporaryDir tmp;
        QString err;
        const auto written = panel->exportAll(tmp.path(), &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(written.size(), 8);  // plot png/svg/pdf + its csv/json, findings csv/json, report json
        QVERIFY(readAll(tmp.filePath("diagnose_report.json")).contains("\"label-shift\""));

        // The loaded models are as they were: A against B, nothing more.
        const RunBundlePtr after = analyseShort(*w.controller());
        QVERIFY(after && after->comparison);
        QCOMPARE(after->drafter.directory, demoDrafter());
        QCOMPARE(after->comparison->drafter.directory, drafterDir("drafter-label-shift"));

        // Links from a finding to its view.
        w.showFindingView({FindingView::Masks}, 0);
        QTRY_VERIFY(isFrontTab(w, "Masks"));
        w.showFindingView({FindingView::HiddenStates}, 1);
        QTRY_VERIFY(isFrontTab(w, "Hidden states"));
        QVERIFY(!isFrontTab(w, "Masks"));  // the same tab group
        QCOMPARE(w.detailDrafter(), 1);       // B's finding: the detail views follow B
        w.showFindingView({FindingView::BlockGrid}, 0);
        QVERIFY(w.statusBar()->currentMessage().startsWith("block grid"));
        // With the first place the bug shows selected: B's first step that rejected its first draft.
        FindingTarget grid{FindingView::BlockGrid};
        grid.firstRejectedStep = true;
        w.showFindingView(grid, 1);
        int firstRejected = 0;
        QVERIFY(w.lastResult() && w.lastResult()->comparison);
        const RunResult& runB = w.lastResult()->comparison->run;
        for (std::size_t st = 0; st < runB.steps.size(); ++st)
            if (runB.steps[st].acceptedCount == 0) {
                firstRejected = static_cast<int>(st);
                break;
            }
        QCOMPARE(w.selectionB()->step(), firstRejected);
        QVERIFY2(w.statusBar()->currentMessage().contains(QString("step %1").arg(firstRejected + 1)),
                 qPrintable(w.statusBar()->currentMessage()));
        QVERIFY(!panel->showFindingAt(findings));  // outside the table
    }

    // With drafter A alone: a cancelled diagnosis and a finished one leave A alone loaded
    // (an analysis afterwards has no comparison: the diagnosed copies were unloaded).
    void diagnoseLeavesTheDraftersAsLoaded() {
        AnalysisController c;
        QVERIFY(loadAndWait(c, demoPair(false)));
        QSignalSpy progress(&c, &AnalysisController::toolProgress);
        QSignalSpy cancelled(&c, &AnalysisController::toolCancelled);
        QSignalSpy done(&c, &AnalysisController::diagnosisFinished);
        DiagnoseRequest full;
        full.prompts = defaultDiagnosePrompts();
        const quint64 id = c.diagnose(full);
        QVERIFY(waitForCount(progress, 2, 60000));  // the start report, then the first prompt run
        c.cancelTool();
        QVERIFY(waitForSignal(cancelled, 60000));
        QCOMPARE(cancelled.first().first().toULongLong(), id);
        QCOMPARE(done.count(), 0);
        RunBundlePtr b = analyseShort(c);
        QVERIFY(b && !b->comparison);

        DiagnoseRequest small;
        small.prompts = {twoPrompts().front()};
        small.settings.maxNewTokens = 16;
        small.settings.probes = {"acceptance"};
        c.diagnose(small);
        QVERIFY(waitForSignal(done, 120000));
        const auto r = done.first().first().value<DiagnoseResultPtr>();
        QCOMPARE(r->report.drafters.size(), std::size_t(1));
        QCOMPARE(r->which, std::vector<int>({0}));
        QVERIFY(r->report.drafters[0].tau > 1.0);
        b = analyseShort(c);
        QVERIFY(b && !b->comparison);
    }

    // The tiny Qwen3.5's text-only and vision-language layouts through the controller:
    // identical hidden states.
    void targetLoadsLayouts() {
        QTemporaryDir tmp;
        const std::string drafter = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafter, RandomDrafterShape{128, 32, 256, 2048}, 4, 3);
        AnalysisController c;
        ModelRequest m;
        m.targetDir = QString::fromStdString(dataPath("models/qwen3_5-tiny-causallm"));
        m.drafterDir = QString::fromStdString(drafter);
        QVERIFY(loadAndWait(c, m));
        QSignalSpy done(&c, &AnalysisController::targetLoadsCompared);
        TargetLoadsRequest r;
        r.prompt = idsPrompt({1, 5, 9, 200, 31, 7});
        r.targetBDir = QString::fromStdString(unpackedDataPath("models/qwen3_5-tiny-vlm"));
        c.compareTargetLoads(r);
        QVERIFY(waitForSignal(done, 60000));
        const auto res = done.first().first().value<TargetLoadsResultPtr>();
        QCOMPARE(res->comparison.layers.size(), std::size_t(5));
        for (const auto& l : res->comparison.layers) QCOMPARE(l.maxAbs, 0.0);
        QCOMPARE(res->targetB.directory, r.targetBDir.toStdString());
        QVERIFY(targetLoadsVerdict(res->comparison).startsWith("Identical"));
    }

    // The dock on the demo target: float32 (loaded) against bfloat16, as the backend
    // computes it directly; the plot, table, verdict and export.
    void targetLoadsDockEndToEnd() {
        MainWindow w(false);
        w.show();
        QAction* action = w.findChild<QAction*>("targetLoadsAction");
        QVERIFY(action && !action->isEnabled());
        QVERIFY(loadAndWait(*w.controller(), demoPair(false)));
        deliverQueuedSlots();
        QVERIFY(action->isEnabled());
        action->trigger();
        TargetLoadsPanel* panel = w.targetLoadsPanel();
        QCOMPARE(panel->targetBEdit()->text(), QString::fromStdString(demoTarget()));
        QCOMPARE(panel->deviceBBox()->findText("cuda") >= 0, cudaAvailable());
        panel->dtypeBBox()->setCurrentText("bfloat16");
        w.promptPanel()->setPromptText("def add(a, b):\n    return");
        QSignalSpy done(w.controller(), &AnalysisController::targetLoadsCompared);
        QTest::mouseClick(panel->controls()->runButton(), Qt::LeftButton);
        QVERIFY(waitForSignal(done, 60000));
        const auto res = panel->result();
        QVERIFY(res);
        QCOMPARE(res->loadA.dtype, std::string("float32"));
        QCOMPARE(res->loadB.dtype, std::string("bfloat16"));

        const PromptSpec p = w.promptPanel()->request().prompt;
        Engine f, h;
        f.loadTarget(demoTarget());
        LoadOptions bf;
        bf.dtype = "bfloat16";
        h.loadTarget(demoTarget(), bf);
        const auto want = compareTargetForwards(f.forward(p), h.forward(p));
        QCOMPARE(res->comparison.ids, want.ids);
        QCOMPARE(res->comparison.layers.size(), want.layers.size());
        for (std::size_t l = 0; l < want.layers.size(); ++l)
            QVERIFY(qAbs(res->comparison.layers[l].minCosine - want.layers[l].minCosine) <= 1e-9);
        QVERIFY(res->comparison.layers.back().maxAbs > 0);  // bfloat16 rounds

        TargetLoadsView* view = panel->view();
        QCOMPARE(view->table()->rowCount(), static_cast<int>(want.layers.size()));
        QCOMPARE(view->table()->item(1, 3)->data(Qt::DisplayRole).toDouble(), res->comparison.layers[1].minCosine);
        QCOMPARE(view->plot()->graph(0)->data()->size(), static_cast<int>(want.layers.size()));
        QCOMPARE(view->verdict(), targetLoadsVerdict(res->comparison));
        qInfo("float32 vs bfloat16 of the demo target: %s", qPrintable(view->verdict()));
        QVERIFY(view->verdict().startsWith("Close"));  // rounding: every cosine >= 0.99, argmax agrees
        QTemporaryDir tmp;
        QString err;
        QCOMPARE(panel->exportAll(tmp.path(), &err).size(), 5);
        QVERIFY2(err.isEmpty(), qPrintable(err));
    }
};

QTEST_MAIN(TestDiagnoseGui)
#include "tst_diagnose_gui.moc"
