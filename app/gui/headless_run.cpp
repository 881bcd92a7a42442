#include "gui/headless_run.h"

#include "gui/main_window.h"
#include "gui/results_panel.h"

#include <QEventLoop>

#include <cstdio>

namespace draftscope {

bool HeadlessRun::loadAndRun(const ModelRequest& models, QString* error) {
    AnalysisController* controller = window_.controller();
    QEventLoop loop;
    QString failure;
    bool loaded = false, analysed = false, attention = false;
    auto c1 = QObject::connect(controller, &AnalysisController::modelsLoaded, &loop, [&] { loaded = true; loop.quit(); });
    auto c2 = QObject::connect(controller, &AnalysisController::failed, &loop, [&](quint64, FailureKind kind, const QString& m) {
        if (kind == FailureKind::HiddenStates || kind == FailureKind::DdTree) return;  // logged; the run itself stands
        failure = failureName(kind) + ": " + m;
        loop.quit();
    });
    auto c3 = QObject::connect(controller, &AnalysisController::analysisFinished, &loop, [&] { analysed = true; loop.quit(); });
    auto c4 = QObject::connect(controller, &AnalysisController::attentionReady, &loop, [&] { attention = true; loop.quit(); });
    auto c5 = QObject::connect(controller, &AnalysisController::cancelled, &loop, [&] {
        failure = QStringLiteral("the analysis was cancelled");
        loop.quit();
    });
    auto wait = [&](bool& flag) {
        while (!flag && failure.isEmpty()) loop.exec();
        return failure.isEmpty();
    };
    window_.loadModels(models);
    bool ok = wait(loaded);
    if (ok) {
        window_.runAnalysis();
        ok = wait(analysed) && wait(attention);  // showing the finished run selects step 0, which requests attention
    }
    for (auto c : {c1, c2, c3, c4, c5}) QObject::disconnect(c);
    if (!ok && error) *error = failure;
    return ok;
}

int HeadlessRun::writeFigures(const QString& dir) {
    QString err;
    const auto written = window_.exportAllFigures(dir, &err);
    if (!err.isEmpty()) {
        std::fprintf(stderr, "error: %s\n", qPrintable(err));
        return 1;
    }
    for (const auto& p : written) std::printf("%s\n", qPrintable(p));
    std::printf("wrote %lld files to %s\n", static_cast<long long>(written.size()), qPrintable(dir));
    return 0;
}

int HeadlessRun::exportLive(const ModelRequest& models, const QString& dir) {
    window_.resize(1600, 1000);
    QString err;
    if (!loadAndRun(models, &err)) {
        std::fprintf(stderr, "error: %s\n", qPrintable(err));
        return 1;
    }
    return writeFigures(dir);
}

int HeadlessRun::exportRecorded(const QString& resultsPath, const QString& dir, const std::optional<QString>& promptId,
                                int drafter) {
    window_.resize(1600, 1000);
    QString err;
    if (!window_.openResultsFileNow(resultsPath, &err)) {
        std::fprintf(stderr, "error: %s\n", qPrintable(err));
        return 1;
    }
    const auto& r = *window_.results();
    if (drafter >= static_cast<int>(r.drafters.size())) {
        std::fprintf(stderr, "error: --results-drafter %d: '%s' has %lld drafter(s)\n", drafter + 1,
                     qPrintable(resultsPath), static_cast<long long>(r.drafters.size()));
        return 2;
    }
    window_.resultsPanel()->setCurrentDrafter(drafter);
    if (promptId) {
        int found = -1;
        for (std::size_t i = 0; i < r.prompts.size(); ++i)
            if (QString::fromStdString(r.prompts[i].id) == *promptId) found = static_cast<int>(i);
        if (found < 0) {
            std::fprintf(stderr, "error: --results-prompt: '%s' has no prompt '%s'\n", qPrintable(resultsPath),
                         qPrintable(*promptId));
            return 2;
        }
        window_.resultsPanel()->selectPrompt(found);
    }
    return writeFigures(dir);
}

}  // namespace draftscope
