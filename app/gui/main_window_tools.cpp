// MainWindow's Tools docks: Diagnose drafter(s) and Compare target loads.

#include "gui/main_window.h"

#include "block_agreement_view.h"
#include "diagnosis_findings_model.h"
#include "gui/diagnose_panel.h"
#include "gui/dock_layout.h"
#include "gui/model_panel.h"
#include "gui/model_session.h"
#include "gui/prompt_panel.h"
#include "gui/target_loads_panel.h"
#include "gui/workbench.h"
#include "hidden_stats_model.h"
#include "hidden_stats_view.h"
#include "mask_view.h"
#include "step_selection.h"

#include <QAction>
#include <QDockWidget>
#include <QMenu>
#include <QStatusBar>

namespace draftscope {

void MainWindow::createToolDocks() {
    diagnosePanel_ = new DiagnosePanel(controller_, this);
    diagnosePanel_->setPromptSetSource([this] { return promptPanel_->promptSet(); });
    connect(diagnosePanel_, &DiagnosePanel::logLine, this, &MainWindow::log);
    connect(diagnosePanel_, &DiagnosePanel::showFinding, this, &MainWindow::showFindingView);
    targetLoadsPanel_ = new TargetLoadsPanel(controller_, this);
    targetLoadsPanel_->setPromptSource([this] { return promptPanel_->request().prompt; });
    connect(targetLoadsPanel_, &TargetLoadsPanel::logLine, this, &MainWindow::log);
    auto* diagnose = addDock(diagnosePanel_, tr("Diagnose"), "diagnoseDock", Qt::RightDockWidgetArea);
    auto* loads = addDock(targetLoadsPanel_, tr("Target loads"), "targetLoadsDock", Qt::RightDockWidgetArea);
    tabifyDockWidget(dock("comparisonDock"), diagnose);
    tabifyDockWidget(diagnose, loads);
    diagnose->hide();
    loads->hide();
    dock("acceptanceDock")->raise();
}

void MainWindow::addToolActions(QMenu* tools) {
    tools->addSeparator();
    diagnoseAction_ = tools->addAction(tr("&Diagnose drafter(s)..."), this, &MainWindow::openDiagnose);
    diagnoseAction_->setObjectName("diagnoseAction");
    diagnoseAction_->setToolTip(tr("Check the loaded drafter A (and B) for known training bugs: draftscope-cli diagnose "
                                   "on the loaded models"));
    targetLoadsAction_ = tools->addAction(tr("&Compare target loads..."), this, &MainWindow::openTargetLoads);
    targetLoadsAction_->setObjectName("targetLoadsAction");
    targetLoadsAction_->setToolTip(tr("The loaded target against another load of it (layout, dtype, device): "
                                      "draftscope-cli compare-targets"));
    updateToolModels();
}

void MainWindow::updateToolModels() {
    const ModelRequest& loaded = models_->loaded();
    diagnosePanel_->setLoadedModels(loaded);
    targetLoadsPanel_->setLoadedModels(loaded);
    if (diagnoseAction_) diagnoseAction_->setEnabled(!loaded.targetDir.isEmpty() && !loaded.drafterDir.isEmpty());
    if (targetLoadsAction_) targetLoadsAction_->setEnabled(!loaded.targetDir.isEmpty());
}

void MainWindow::openDiagnose() {
    if (isViewMaximised()) toggleMaximisedView();
    dock("diagnoseDock")->show();
    dock("diagnoseDock")->raise();
}

void MainWindow::openTargetLoads() {
    if (isViewMaximised()) toggleMaximisedView();
    dock("targetLoadsDock")->show();
    dock("targetLoadsDock")->raise();
}

void MainWindow::showFindingView(const FindingTarget& target, int drafter) {
    const FindingView view = target.view;
    if (view == FindingView::None) return;
    if (isViewMaximised()) toggleMaximisedView();  // the view must be visible
    const bool b = drafter == 1 && isComparing();
    if (isComparing()) setDetailDrafter(b ? 1 : 0);
    QString name;
    if (view == FindingView::MaskDiff) {
        // The proof of a context leak: the inference mask with the strict context (kv < anchor)
        // diffed against the inclusive one (kv <= anchor); the anchor's own column differs.
        auto* mv = workbench_->maskView();
        mv->setMode(MaskView::Mode::Inference);
        MaskConventions strict, inclusive;
        inclusive.context = MaskConventions::Context::Inclusive;
        mv->setConventions(strict);
        mv->setDiffConventions(inclusive);
        mv->setDiffEnabled(true);
        dock("maskDock")->show();
        dock("maskDock")->raise();
        name = tr("Masks (strict vs inclusive context)");
    } else if (view == FindingView::Masks || view == FindingView::HiddenStates) {
        QDockWidget* d = dock(view == FindingView::Masks ? "maskDock" : "statsDock");
        d->show();
        d->raise();
        name = d->windowTitle();
        if (view == FindingView::Masks && target.layer >= 0) {
            workbench_->maskView()->setMode(MaskView::Mode::Inference);
            workbench_->maskView()->setDiffEnabled(false);
            workbench_->maskView()->setSelectedLayer(target.layer);
            name += tr(", drafter layer %1").arg(target.layer);
        }
        if (view == FindingView::HiddenStates && target.tappedLayer >= 0) {
            auto* hs = workbench_->statsView();
            const auto& series = hs->model()->stats().series;
            for (std::size_t i = 0; i < series.size(); ++i)
                if (series[i].layerId == target.tappedLayer) {
                    hs->setHistogramSeries(static_cast<int>(i));
                    name += tr(", tapped layer %1").arg(target.tappedLayer);
                    break;
                }
        }
    } else {
        BlockAgreementView* grid = b ? blockAgreementViewB() : blockAgreementView();
        grid->setFocus(Qt::OtherFocusReason);
        name = tr("block grid");
        const RunBundlePtr& shown = workbench_->shown();
        if (target.firstRejectedStep && shown) {
            const RunResult& run = b && shown->comparison ? shown->comparison->run : shown->run;
            int step = run.steps.empty() ? -1 : 0;
            for (std::size_t s = 0; s < run.steps.size(); ++s)
                if (run.steps[s].acceptedCount == 0) {
                    step = static_cast<int>(s);
                    break;
                }
            if (step >= 0) {
                (b ? selectionB() : selection())->select(step, 1);
                name += tr(", step %1").arg(step + 1);
            }
        }
    }
    const QString who = drafter == 1 ? tr("drafter B") : tr("drafter A");
    statusBar()->showMessage(lastResult() ? tr("%1 view (%2)").arg(name, isComparing() ? who : tr("drafter A"))
                                          : tr("%1 view: run a prompt to fill it").arg(name),
                             8000);
}

}  // namespace draftscope
