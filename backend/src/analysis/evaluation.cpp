#include "draftscope/evaluation.h"

#include "draftscope/analysis.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/settings_validation.h"
#include "draftscope/sha256.h"
#include "draftscope/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>

namespace draftscope {

double EvalProgress::fraction() const {
    if (items == 0) return 0;
    double inRun = tokensTotal > 0 ? std::clamp(static_cast<double>(tokensDone) / tokensTotal, 0.0, 1.0) : 0.0;
    const double inItem = (run + inRun) / std::max(1, runsPerItem);
    return std::clamp((item + inItem) / items, 0.0, 1.0);
}

std::string utcTimestamp() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

namespace {

std::size_t linesTaken(const std::vector<PromptSetEntry>& entries, const EvalSettings& s) {
    return s.limit > 0 ? std::min(entries.size(), static_cast<std::size_t>(s.limit)) : entries.size();
}

ResultsModel identity(const ModelSummary& m) {
    ResultsModel r;
    r.summary = m;
    std::error_code ec;
    const auto abs = std::filesystem::absolute(m.directory, ec);
    if (!ec) r.summary.directory = abs.lexically_normal().string();
    const auto config = std::filesystem::path(m.directory) / "config.json";
    r.configSha256 = sha256File(config.string());
    return r;
}

}  // namespace

std::size_t plannedItems(const std::vector<PromptSetEntry>& entries, const EvalSettings& settings) {
    std::size_t n = 0;
    const auto lines = linesTaken(entries, settings);
    for (std::size_t i = 0; i < lines; ++i) n += settings.allTurns ? static_cast<std::size_t>(entries[i].userTurns()) : 1;
    return n;
}

ResultsFile runEvaluation(Engine& engine, const std::vector<PromptSetEntry>& entries, const EvalSettings& settings,
                          const EvalCallbacks& cb, const std::atomic<bool>* cancel) {
    if (!engine.hasTarget() || engine.drafterCount() == 0)
        throw Error("an evaluation needs a loaded target and at least one drafter");
    validate(settings.run);
    validateTreeBudgets(settings.ddtreeBudgets, settings.run.temperature);  // before any work
    const auto& target = engine.targetSummary();

    ResultsFile out;
    out.createdUtc = utcTimestamp();
    out.complete = false;
    out.settings = settings;
    out.promptSetLines = static_cast<std::int64_t>(entries.size());
    out.target = identity(target);
    const int D = engine.drafterCount();
    for (int d = 0; d < D; ++d) out.drafters.push_back(identity(engine.drafterSummary(d)));

    const Tokenizer* tok = engine.tokenizer();
    auto note = [&](std::int64_t id) {
        if (tok && !out.tokenPieces.count(id)) out.tokenPieces.emplace(id, tok->tokenPiece(id));
    };

    const std::size_t items = plannedItems(entries, settings);
    const int runsPerDrafter = 1 + static_cast<int>(settings.ddtreeBudgets.size());
    const int runsPerItem = D * runsPerDrafter;
    EvalProgress prog;
    prog.items = items;
    prog.runsPerItem = runsPerItem;
    auto progressFn = [&](std::int64_t done, std::int64_t total) {
        prog.tokensDone = done;
        prog.tokensTotal = total;
        if (cb.progress) cb.progress(prog);
    };

    std::size_t item = 0;
    const auto lines = linesTaken(entries, settings);
    try {
        for (std::size_t li = 0; li < lines; ++li) {
            const auto& entry = entries[li];
            const int turns = settings.allTurns ? entry.userTurns() : 1;
            std::vector<std::string> answers;
            for (int turn = 0; turn < turns; ++turn, ++item) {
                PromptResult pr;
                pr.sourceId = entry.id;
                pr.id = turn == 0 ? entry.id : entry.id + "#turn" + std::to_string(turn + 1);
                pr.line = entry.line;
                pr.turn = turn;
                prog.item = item;
                prog.run = 0;
                prog.tokensDone = prog.tokensTotal = 0;
                prog.id = pr.id;
                if (cb.progress) cb.progress(prog);
                try {
                    pr.prompt = promptSpecForTurn(entry, turn, answers, settings.thinking, settings.chatWrapRaw);
                    for (int d = 0; d < D; ++d) {
                        PromptAnalysisRequest request{pr.prompt, settings.run, settings.ddtreeBudgets,
                                                      HiddenStatsScope::Prompt, settings.histogramBins};
                        request.settings.drafter = d;
                        const int firstRun = d * runsPerDrafter;
                        AnalysisCallbacks acb;
                        acb.stageStarted = [&](const AnalysisStage& stage) {
                            if (stage.kind == AnalysisStage::Kind::Chain) return;
                            prog.run = firstRun + 1 + static_cast<int>(stage.index);
                            prog.tokensDone = prog.tokensTotal = 0;
                        };
                        acb.progress = progressFn;
                        auto analysis = analysePrompt(engine, request, acb, cancel);
                        if (!analysis.treeError.empty()) throw Error(analysis.treeError);  // the item fails
                        prog.run = firstRun + runsPerDrafter;
                        DrafterPromptResult dr;
                        dr.run = std::move(analysis.run);
                        dr.trees = std::move(analysis.trees);
                        dr.hiddenStats = std::move(analysis.hiddenStats);
                        dr.hiddenStatsError = std::move(analysis.hiddenStatsError);
                        pr.drafters.push_back(std::move(dr));
                    }
                } catch (const Cancelled&) {
                    throw;
                } catch (const Error& e) {
                    pr.error = e.what();
                    pr.drafters.clear();
                }
                if (pr.error.empty()) {
                    const auto& first = pr.drafters.front().run;
                    if (out.settings.device.empty()) out.settings.device = first.device;
                    if (out.settings.dtype.empty()) out.settings.dtype = first.dtype;
                    std::vector<std::int64_t> generated(first.outputIds.begin() + static_cast<std::ptrdiff_t>(first.promptIds.size()),
                                                        first.outputIds.end());
                    answers.push_back(tok ? tok->decode(generated, /*skipSpecial=*/true) : std::string());
                    for (const auto& dr : pr.drafters)
                        for (auto id : collectTokenIds(dr.run, dr.trees)) note(id);
                }
                out.prompts.push_back(std::move(pr));
                if (cb.itemDone) cb.itemDone(out.prompts.back(), item, items);
                if (!out.prompts.back().error.empty() && turn + 1 < turns) {
                    item += static_cast<std::size_t>(turns - turn);  // skip the turns that build on it
                    break;
                }
            }
        }
        out.complete = true;
    } catch (const Cancelled&) {
        out.complete = false;
    }
    return out;
}

}  // namespace draftscope
