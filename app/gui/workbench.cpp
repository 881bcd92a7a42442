#include "gui/workbench.h"

#include "gui/recorded_results.h"

#include "draftscope/placement.h"

#include "acceptance_plots.h"
#include "acceptance_tree_view.h"
#include "attention_heads_overview.h"
#include "attention_view.h"
#include "block_agreement_view.h"
#include "budget_sweep_plot.h"
#include "selector_view.h"
#include "comparison_summary_view.h"
#include "drafter_comparison.h"
#include "hidden_stats_view.h"
#include "mask_view.h"
#include "output_strip_view.h"
#include "step_selection.h"

#include <QComboBox>
#include <QFileInfo>
#include <QSplitter>

namespace draftscope {

namespace {
/// "recorded #n" for recorded bundles, the number for live analyses.
QString requestLabel(quint64 id) {
    return (id & kRecordedRequestBit) ? Workbench::tr("recorded #%1").arg(id & ~kRecordedRequestBit) : QString::number(id);
}
}  // namespace

Workbench::Workbench(AnalysisController* controller, QWidget* parent)
    : QObject(parent), controller_(controller), selection_(new StepSelection(this)), selectionB_(new StepSelection(this)) {
    setObjectName("workbench");
    blockView_ = new BlockAgreementView(selection_, parent);
    stripView_ = new OutputStripView(selection_, parent);
    acceptance_ = new AcceptancePlots(selection_, parent);
    maskView_ = new MaskView(parent);
    attentionView_ = new AttentionView(parent);
    statsView_ = new HiddenStatsView(parent);
    treeView_ = new AcceptanceTreeView(parent);
    sweep_ = new BudgetSweepPlot(parent);
    summaryView_ = new ComparisonSummaryView(parent);
    selectorView_ = new SelectorView(parent);
    blockViewB_ = new BlockAgreementView(selectionB_, parent);
    blockViewB_->setObjectName("BlockAgreementViewB");
    blockViewB_->setExportName("block_agreement_b");
    blockViewB_->hide();
    // B's grid under A's: each keeps the full width, so all block positions stay readable.
    grids_ = new QSplitter(Qt::Vertical, parent);
    grids_->setObjectName("gridSplitter");
    grids_->addWidget(blockView_);
    grids_->addWidget(blockViewB_);
    detailCombo_ = new QComboBox(parent);
    detailCombo_->setObjectName("detailDrafter");
    detailCombo_->addItems({tr("drafter A"), tr("drafter B")});
    detailCombo_->setToolTip(tr("Which drafter's DDTree runs, inference mask, attention and hidden-state statistics the "
                                "detail views show; the grid, output, acceptance plots and budget sweep show both"));
    registerViews();

    // The two grids select the step that covers the same absolute position.
    linkSelections(selection_, selectionB_, true);
    linkSelections(selectionB_, selection_, false);
    connect(selection_, &StepSelection::changed, this, &Workbench::onSelection);
    connect(detailCombo_, &QComboBox::currentIndexChanged, this, [this] { showDetailViews(); });
    connect(controller_, &AnalysisController::attentionReady, this, &Workbench::onAttention);
    connect(treeView_, &AcceptanceTreeView::treeStepChanged, this, [this](int budget, int step) {
        const TreeStep* st = treeView_->currentTreeStep();
        if (!shown_.bundle || !st) {
            maskView_->clearTreeStep();
            return;
        }
        std::vector<QString> pieces;
        for (auto id : st->tokens) pieces.push_back(shown_.bundle->pieceOf(id));
        maskView_->setTreeStep(*st, budget, step, pieces);
    });
    connect(statsView_, &HiddenStatsView::positionClicked, this, [this](int position) {
        if (!shown_.bundle) return;
        // A prompt position belongs to no verify step: show it in the stats view only.
        statsView_->highlightPosition(position);
    });
}

Workbench::~Workbench() = default;

void Workbench::addView(std::unique_ptr<BundleView> view) { views_.push_back(std::move(view)); }

void Workbench::addDetailView(std::unique_ptr<BundleView> view) { detailViews_.push_back(std::move(view)); }

void Workbench::registerViews() {
    auto fns = [](auto show, auto clear) { return std::make_unique<BundleViewFunctions>(show, clear); };
    // Drafter A's grid (B's run overlaid while comparing).
    addView(fns(
        [this](const ShownRun& s) {
            const RunBundlePtr a = s.bundle;
            blockView_->model()->setRun(a->run, [a](std::int64_t id) { return a->pieceOf(id); });
            if (const RunBundle* b = s.b()) {
                captionA_ = tr("%1 - Drafter A: %2   tau %3, %4 steps").arg(s.label, s.nameA)
                                .arg(a->run.tau, 0, 'f', 3).arg(a->run.steps.size());
                blockView_->model()->setComparison(b->run, tr("B (%1)").arg(s.nameB));
            } else {
                captionA_ = tr("%1: %2, tau %3, %4 steps")
                                .arg(s.label, QFileInfo(QString::fromStdString(a->drafter.directory)).fileName())
                                .arg(a->run.tau, 0, 'f', 3).arg(a->run.steps.size());
            }
            blockView_->setCaption(captionA_ + runNote_);
        },
        [this] {
            blockView_->model()->clear();
            captionA_.clear();
            blockView_->setCaption(QString());
        }));
    // Drafter B's grid, under A's, only while comparing.
    auto clearB = [this] {
        blockViewB_->model()->clear();
        blockViewB_->setCaption(QString());
        blockViewB_->hide();
    };
    addView(fns(
        [this, clearB](const ShownRun& s) {
            const RunBundle* b = s.b();
            if (!b) return clearB();
            const RunBundlePtr a = s.bundle;
            blockViewB_->model()->setRun(b->run, [a](std::int64_t id) { return a->pieceOf(id); });
            blockViewB_->model()->setComparison(a->run, tr("A (%1)").arg(s.nameA));
            blockViewB_->setCaption(tr("Drafter B: %1   tau %2, %3 steps").arg(s.nameB).arg(b->run.tau, 0, 'f', 3)
                                        .arg(b->run.steps.size()));
            blockViewB_->show();
        },
        clearB));
    addView(fns(
        [this](const ShownRun& s) {
            stripView_->setRun(s.a().run, s.a().pieces);
            if (s.b()) stripView_->setComparison(s.b()->run, s.nameA, s.nameB);
        },
        [this] { stripView_->clear(); }));
    addView(fns(
        [this](const ShownRun& s) {
            acceptance_->setRun(s.a().run);
            if (s.b()) acceptance_->setComparison(s.b()->run, s.nameA, s.nameB);
        },
        [this] { acceptance_->clear(); }));
    addView(fns(
        [this](const ShownRun& s) {
            sweep_->setRuns(s.a().run, s.a().treeRuns);
            if (s.b()) sweep_->setComparison(s.b()->run, s.b()->treeRuns, s.nameA, s.nameB);
        },
        [this] { sweep_->clear(); }));
    // DFlash2 / DSpark: what the selector or the Markov bias chose (and DSpark's confidence
    // calibration), A's and B's runs side by side.
    addView(fns(
        [this](const ShownRun& s) {
            const auto name = [](const RunBundle& r) {
                return QFileInfo(QString::fromStdString(r.drafter.directory)).fileName();
            };
            const auto seriesOf = [](const QString& label, int which, const RunBundle& r) {
                return SelectorSeries{label, which, selectorStats(r.run), proposerOf(r.drafter.family),
                                      confidenceCalibration(r.run)};
            };
            std::vector<SelectorSeries> series{seriesOf(s.b() ? tr("A: %1").arg(s.nameA) : name(s.a()), 0, s.a())};
            if (const RunBundle* b = s.b()) series.push_back(seriesOf(tr("B: %1").arg(s.nameB), 1, *b));
            selectorView_->setSeries(series);
        },
        [this] { selectorView_->clear(); }));
    addView(fns(
        [this](const ShownRun& s) {
            if (!s.b()) return summaryView_->clear();
            summaryView_->setComparison({s.nameA, s.a().drafter, s.a().run, s.a().treeRuns},
                                        {s.nameB, s.b()->drafter, s.b()->run, s.b()->treeRuns});
        },
        [this] { summaryView_->clear(); }));
    // The detail views show one drafter: A, or B when chosen in the Compare toolbar.
    addDetailView(fns(
        [this](const ShownRun& s) {
            const RunBundlePtr d = s.detail;
            treeView_->setRuns(d->treeRuns, [d](std::int64_t id) { return d->pieceOf(id); });
        },
        [this] { treeView_->clear(); }));
    addDetailView(fns(
        [this](const ShownRun& s) {
            const RunBundlePtr d = s.detail;
            statsView_->setStats(d->hiddenStats, piecesUpTo(static_cast<std::int64_t>(d->hiddenStats.ids.size())));
            if (!s.b()) return statsView_->setCaption(QString());
            QString ids[2];
            for (int i = 0; i < 2; ++i)
                for (auto id : (i == 0 ? s.a() : *s.b()).drafter.targetLayerIds)
                    ids[i] += (ids[i].isEmpty() ? "" : ", ") + QString::number(id);
            statsView_->setCaption(
                tr("Showing %1's series. The tapped layers are the target's own hidden states: identical for A and B "
                   "wherever both tap the layer (A taps [%2], B taps [%3]); only the \"drafter context\" series "
                   "(fc + hidden_norm) belongs to the drafter. Switch drafters in the Compare toolbar.")
                    .arg(s.detailIsB() ? tr("drafter B") : tr("drafter A"), ids[0], ids[1]));
        },
        [this] {
            statsView_->clear();
            statsView_->setCaption(QString());
        }));
}

void Workbench::linkSelections(StepSelection* from, StepSelection* to, bool fromA) {
    connect(from, &StepSelection::changed, this, [this, to, fromA](int step, int position) {
        if (linkingSelections_ || !isComparing()) return;
        const RunResult& src = fromA ? shown_.a().run : shown_.b()->run;
        const RunResult& dst = fromA ? shown_.b()->run : shown_.a().run;
        if (step < 0 || step >= static_cast<int>(src.steps.size())) return;
        const auto pos = src.steps[static_cast<std::size_t>(step)].start + std::max(position, 0);
        const int other = chainStepCovering(dst, pos);
        if (other < 0) return;
        linkingSelections_ = true;
        to->select(other, static_cast<int>(std::clamp<std::int64_t>(pos - dst.steps[static_cast<std::size_t>(other)].start,
                                                                    0, dst.blockSize - 1)));
        linkingSelections_ = false;
    });
}

QString Workbench::runsLabel(const RunBundle& b) {
    auto one = [](const RunBundle& x) {
        QStringList runs{tr("chain")};
        for (const auto& t : x.treeRuns) runs << tr("DDTree %1").arg(t.budget);
        return runs.join(", ");
    };
    return b.comparison ? tr("A: %1; B: %2").arg(one(b), one(*b.comparison)) : one(b);
}

void Workbench::show(ShownRun run) {
    const RunBundlePtr b = run.bundle;  // a copy: `run` is moved into shown_ below
    // A later part of the run on screen keeps the selected step and DDTree budget.
    const bool sameRun = shown_.bundle && shown_.bundle->requestId == b->requestId;
    const int keepStep = sameRun ? selection_->step() : -1, keepPosition = selection_->position();
    const int keepBudget = sameRun ? treeView_->currentBudget() : -1;
    selection_->clear();  // the first step is selected once every view shows the new run
    selectionB_->clear();
    if (const RunBundle* c = run.b()) {
        std::tie(run.nameA, run.nameB) = drafterNames(QString::fromStdString(b->drafter.directory),
                                                      QString::fromStdString(c->drafter.directory));
    } else {
        const QSignalBlocker block(detailCombo_);
        detailCombo_->setCurrentIndex(0);
    }
    shown_ = std::move(run);
    shown_.detail = detailBundle();
    attentionStep_ = -1;
    for (auto& v : views_) v->showBundle(shown_);
    for (auto& v : detailViews_) v->showBundle(shown_);
    emit comparingChanged(isComparing());
    if (isComparing()) {
        maskView_->setTrainingExample(64, shown_.detail->drafter.blockSize, {8, 29});
        maskView_->setDrafterLayout(shown_.detail->drafter.layout);
        attentionView_->clear();
    }
    if (shown_.complete) logRuns(shown_);
    const RunBundle* c = shown_.b();
    if (!shown_.complete) {
        emit statusMessage(tr("Analysis %1 running; finished so far: %2 (chain tau %3)")
                               .arg(requestLabel(b->requestId), runsLabel(*b)).arg(b->run.tau, 0, 'f', 3));
    } else if (c) {
        emit statusMessage(tr("A (%1): tau %2 over %3 steps   |   B (%4): tau %5 over %6 steps")
                               .arg(shown_.nameA).arg(b->run.tau, 0, 'f', 3).arg(b->run.steps.size())
                               .arg(shown_.nameB).arg(c->run.tau, 0, 'f', 3).arg(c->run.steps.size()));
    } else {
        QString trees;
        for (const auto& t : b->treeRuns) trees += tr(", DDTree %1: %2").arg(t.budget).arg(t.tau, 0, 'f', 3);
        emit statusMessage(tr("tau %1 over %2 verify steps%3").arg(b->run.tau, 0, 'f', 3).arg(b->run.steps.size()).arg(trees));
    }
    if (keepBudget > 0) treeView_->setCurrentBudget(keepBudget);
    if (keepStep >= 0 && keepStep < static_cast<int>(b->run.steps.size())) selection_->select(keepStep, keepPosition);
    else if (!b->run.steps.empty()) selection_->select(0, 1);
}

void Workbench::logRuns(const ShownRun& s) {
    const RunBundle& a = s.a();
    const QString id = requestLabel(a.requestId);
    emit logLine(
        tr("analysis %1: %2 prompt tokens, %3 generated, %4 steps, tau %5 (%6 ms)")
            .arg(id).arg(a.run.promptIds.size()).arg(a.run.outputIds.size() - a.run.promptIds.size())
            .arg(a.run.steps.size()).arg(a.run.tau, 0, 'f', 3).arg(a.run.timing.totalMs, 0, 'f', 0));
    if (a.run.placement.find(';') != std::string::npos) {  // a target split across placement groups
        QStringList peaks;
        for (const auto& p : a.run.timing.peakPerDevice)
            if (p.bytes >= 0)
                peaks << QStringLiteral("%1 %2").arg(QString::fromStdString(p.device),
                                                     QString::fromStdString(formatBytes(static_cast<std::uint64_t>(p.bytes))));
        emit logLine(tr("analysis %1: placement %2%3")
                         .arg(id, QString::fromStdString(a.run.placement),
                              peaks.isEmpty() ? QString() : tr("; peak memory %1").arg(peaks.join(", "))));
    }
    if (!a.run.timing.cudaGraphs.empty() && a.run.timing.peakDeviceBytes >= 0)  // on a GPU: how it ran the steps
        emit logLine(tr("analysis %1: CUDA graphs: %2").arg(id, QString::fromStdString(a.run.timing.cudaGraphs)));
    for (const auto& t : a.treeRuns)
        emit logLine(
            tr("analysis %1: DDTree budget %2: %3 steps, tau %4 (%5 ms)")
                .arg(id).arg(t.budget).arg(t.steps.size()).arg(t.tau, 0, 'f', 3).arg(t.timing.totalMs, 0, 'f', 0));
    const RunBundle* c = s.b();
    if (!c) return;
    emit logLine(
        tr("analysis %1: drafter B %2: %3 steps, tau %4 (%5 ms); outputs %6")
            .arg(a.requestId).arg(s.nameB).arg(c->run.steps.size()).arg(c->run.tau, 0, 'f', 3)
            .arg(c->run.timing.totalMs, 0, 'f', 0)
            .arg(c->run.outputIds == a.run.outputIds ? tr("identical") : tr("differ (sampling)")));
    for (const auto& t : c->treeRuns)
        emit logLine(tr("analysis %1: drafter B: DDTree budget %2: %3 steps, tau %4")
                                                       .arg(a.requestId).arg(t.budget).arg(t.steps.size())
                                                       .arg(t.tau, 0, 'f', 3));
}

void Workbench::clear() {
    shown_ = ShownRun{};
    attentionStep_ = -1;
    selection_->clear();
    selectionB_->clear();
    for (auto& v : views_) v->clearBundle();
    for (auto& v : detailViews_) v->clearBundle();
    maskView_->clearInferenceContext();
    maskView_->clearTreeStep();
    attentionView_->clear();
    const QSignalBlocker block(detailCombo_);
    detailCombo_->setCurrentIndex(0);
    emit comparingChanged(false);
}

void Workbench::setRunNote(const QString& note, const QString& treeEmptyText) {
    runNote_ = note;
    treeView_->setEmptyText(treeEmptyText);
    if (shown_.bundle && !captionA_.isEmpty()) blockView_->setCaption(captionA_ + runNote_);
}

void Workbench::markComplete() {
    shown_.complete = true;
    attentionStep_ = -1;
    onSelection(selection_->step(), selection_->position());
}

int Workbench::detailDrafter() const { return detailCombo_->currentIndex(); }

void Workbench::setDetailDrafter(int which) { detailCombo_->setCurrentIndex(which == 1 ? 1 : 0); }

RunBundlePtr Workbench::detailBundle() const {
    return isComparing() && detailDrafter() == 1 ? shown_.bundle->comparison : shown_.bundle;
}

void Workbench::showDetailViews() {
    if (!shown_.bundle) return;
    shown_.detail = detailBundle();
    for (auto& v : detailViews_) v->showBundle(shown_);
    maskView_->setTrainingExample(64, shown_.detail->drafter.blockSize, {8, 29});
    maskView_->setDrafterLayout(shown_.detail->drafter.layout);
    attentionView_->clear();
    attentionStep_ = -1;
    onSelection(selection_->step(), selection_->position());
}

void Workbench::setDrafterLayout(const ModelSummary& drafter) {
    maskView_->setTrainingExample(64, drafter.blockSize, {8, 29});
    maskView_->setDrafterLayout(drafter.layout);
}

int Workbench::detailStep(int stepA) const {
    const RunBundlePtr d = detailBundle();
    if (!d || d == shown_.bundle) return stepA;
    if (selectionB_->step() >= 0 && selectionB_->step() < static_cast<int>(d->run.steps.size())) return selectionB_->step();
    if (stepA < 0 || stepA >= static_cast<int>(shown_.a().run.steps.size())) return -1;
    return chainStepCovering(d->run, shown_.a().run.steps[static_cast<std::size_t>(stepA)].start);
}

QString Workbench::attentionUnavailableReason() const {
    if ((shown_.bundle->requestId & kRecordedRequestBit) && detailBundle() != shown_.bundle)
        return tr("recorded run: drafter attention is recomputed for the shown drafter only; choose this drafter "
                  "under 'Show drafter' in the Results panel and load its models");
    return shown_.attentionUnavailable;
}

std::vector<QString> Workbench::piecesUpTo(std::int64_t length) const {
    std::vector<QString> out;
    if (!shown_.bundle) return out;
    const auto& pieces = shown_.bundle->pieces;
    for (std::int64_t i = 0; i < length && i < static_cast<std::int64_t>(pieces.size()); ++i)
        out.push_back(pieces[static_cast<std::size_t>(i)]);
    return out;
}

void Workbench::onSelection(int step, int position) {
    Q_UNUSED(position);
    if (!shown_.bundle || step < 0 || step >= static_cast<int>(shown_.a().run.steps.size())) return;
    // The detail views show drafter A's step, or drafter B's step covering the same position.
    const RunBundlePtr d = detailBundle();
    step = detailStep(step);
    if (step < 0) return;
    const auto& st = d->run.steps[static_cast<std::size_t>(step)];
    // The drafter's block rows (a run's block size is its verify width: + 1 when the anchor's row drafts).
    const auto rows = d->drafter.blockSize > 0 ? d->drafter.blockSize : d->run.blockSize;
    maskView_->setInferenceContext(st.start, rows, piecesUpTo(st.start + rows));
    treeView_->showPosition(st.start);  // the tree step that verified this chain step's anchor
    if (!shown_.complete) {  // the worker is busy with the rest of the analysis: ask once it is done
        attentionView_->setPlaceholder(tr("The drafter's attention is computed when the analysis has finished."));
    } else if (step != attentionStep_) {  // the attention depends on the step only, not the position
        attentionStep_ = step;
        if (const QString why = attentionUnavailableReason(); !why.isEmpty()) attentionView_->setPlaceholder(why);
        else controller_->requestAttention(d, step);
    }
}

void Workbench::onAttention(quint64 requestId, const DrafterAttention& a) {
    // The controller delivers only the newest request's answer; it must still be for the run,
    // drafter and step on screen (the views may have moved on without asking again).
    if (!shown_.bundle || requestId != shown_.bundle->requestId) return;
    const RunBundlePtr shown = detailBundle();
    if (!shown || a.step != attentionStep_ || a.drafter != shown->run.settings.drafter) return;
    // Keys: context positions 0..start-1, the anchor at start, then MASK rows.
    const auto start = a.queryPositions.empty() ? 0 : a.queryPositions.front();
    std::vector<QString> pieces = piecesUpTo(start + 1);
    while (static_cast<std::int64_t>(pieces.size()) < a.numKeys) pieces.push_back(QStringLiteral("[MASK]"));
    attentionView_->setAttention(a, pieces, shown->drafter.layout);  // the layout of the drafter that ran
}

QList<ExportableView*> Workbench::exportableViews(const QList<ExportableView*>& more) const {
    QList<ExportableView*> views = {blockView_, stripView_, acceptance_, maskView_, attentionView_,
                                    attentionView_->headsOverview(), statsView_, treeView_, sweep_, selectorView_};
    views << more;
    if (isComparing()) views << blockViewB_ << summaryView_;  // block_agreement_b, ab_summary
    return views;
}

void Workbench::setFigureTitles() {
    if (!shown_.bundle) return;
    const RunBundle& a = shown_.a();
    const bool ab = isComparing();
    const QString titleA = figureTitleOf(a, ab ? "A" : "");
    const QString both = ab ? titleA + ", B: " + drafterNameOf(*shown_.b()) : titleA;  // views that overlay A and B
    for (ExportableView* v : std::initializer_list<ExportableView*>{stripView_, acceptance_, sweep_, selectorView_})
        v->setFigureTitle(both);
    blockView_->setFigureTitle(titleA);
    const QString d = figureTitleOf(*detailBundle(), ab ? (detailDrafter() == 1 ? "B" : "A") : "");
    for (ExportableView* v : std::initializer_list<ExportableView*>{maskView_, attentionView_, attentionView_->headsOverview(),
                                                                    statsView_, treeView_})
        v->setFigureTitle(d);
    if (ab) blockViewB_->setFigureTitle(figureTitleOf(*shown_.b(), "B"));
}

}  // namespace draftscope
