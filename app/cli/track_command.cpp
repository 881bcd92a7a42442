#include "cli/track_command.h"

#include "cli/progress_bar.h"
#include "cli/replicas.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/prompt_set.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace draftscope {

namespace {

std::string num(double v, int digits = 3) {
    if (!std::isfinite(v)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string where(const RunCheckpoint& c) {
    return c.layout + " " + std::filesystem::path(c.path).filename().string() +
           (c.stepFrom != "name" ? ", step from " + c.stepFrom : std::string());
}

nlohmann::json summaryJson(const TrackIndex& x, const std::string& indexPath) {
    nlohmann::json cps = nlohmann::json::array();
    for (const auto& c : x.checkpoints) {
        nlohmann::json trees = nlohmann::json::array();
        for (std::size_t i = 0; i < c.treeBudgets.size() && i < c.treeTaus.size(); ++i)
            trees.push_back({{"budget", c.treeBudgets[i]}, {"tau", c.treeTaus[i]}});
        cps.push_back({{"step", c.checkpoint.step}, {"path", c.checkpoint.path}, {"status", c.status}, {"error", c.error},
                       {"results_file", c.resultsFile}, {"tau", c.tau}, {"teacher_forced_tau", c.teacherForcedTau},
                       {"teacher_forced_expected", c.teacherForcedExpected}, {"gap", c.gap}, {"ddtree", trees},
                       {"position_acceptance", c.positionAcceptance}});
    }
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : x.findings)
        findings.push_back({{"id", f.id}, {"step", f.step}, {"from_step", f.fromStep}, {"message", f.message},
                            {"positions", f.positions}});
    return {{"index", indexPath}, {"best_step", x.bestStep}, {"checkpoints", cps}, {"findings", findings}};
}

}  // namespace

void printCheckpointLine(std::ostream& out, const TrackedCheckpoint& c) {
    out << "step " << c.checkpoint.step << " (" << where(c.checkpoint) << "): ";
    if (c.status == "failed") {
        out << "failed: " << c.error << "\n";
        return;
    }
    if (c.status == "partial") {
        out << "interrupted; its finished prompts are kept in " << c.resultsFile << "\n";
        return;
    }
    out << "tau " << num(c.tau) << ", teacher-forced " << num(c.teacherForcedTau) << " (expected " << num(c.teacherForcedExpected)
        << "), gap " << num(c.gap);
    for (std::size_t i = 0; i < c.treeBudgets.size() && i < c.treeTaus.size(); ++i)
        out << ", DDTree " << c.treeBudgets[i] << ": " << num(c.treeTaus[i]);
    out << "  [" << ProgressBar::formatDuration(c.seconds) << ", " << c.promptIds.size() << " prompts]\n";
}

void printTrackSummary(std::ostream& out, const TrackIndex& x) {
    out << "\n" << x.checkpoints.size() << " checkpoint(s) of " << x.runDir << "\n";
    out << "  step        tau     tf-exp  gap     status\n";
    for (const auto& c : x.checkpoints) {
        char line[160];
        std::snprintf(line, sizeof line, "  %-10lld  %-6s  %-6s  %-6s  %s%s\n", static_cast<long long>(c.checkpoint.step),
                      num(c.tau).c_str(), num(c.teacherForcedExpected).c_str(), num(c.gap).c_str(), c.status.c_str(),
                      c.checkpoint.step == x.bestStep ? "  <- best" : "");
        out << line;
    }
    if (x.trainerLog)
        out << "trainer log: " << x.trainerLog->path << " (" << x.trainerLog->metric << ", " << x.trainerLog->points.size()
            << " points)\n";
    else if (!x.trainerLogNote.empty())
        out << "trainer log: " << x.trainerLogNote << "\n";
    if (x.findings.empty()) out << "findings: none (no regression, no widening train-vs-inference gap)\n";
    for (const auto& f : x.findings) out << "finding [" << f.id << "] " << f.message << "\n";
}

int trackCommand(const TrackArgs& args, const std::atomic<bool>* cancel) {
    TrackSettings settings = args.settings;
    if (settings.outDir.empty()) settings.outDir = (std::filesystem::path(args.runDir) / "draftscope-track").string();
    std::vector<cli::InputPath> inputs{{"RUN_DIR", args.runDir, PathKind::Directory},
                                       {"--prompts", args.promptsPath, PathKind::File},
                                       {"--target", args.targetDir, PathKind::Directory},
                                       {"--log", settings.trainerLogPath, PathKind::File},
                                       {"--drafter-config", settings.drafterConfig, PathKind::File}};
    cli::checkPaths(inputs, {{"--json", args.jsonOut}});
    {
        std::error_code ec;
        if (std::filesystem::exists(settings.outDir, ec) && !std::filesystem::is_directory(settings.outDir, ec))
            throw Error("--out: '" + settings.outDir + "' exists and is not a directory");
    }
    const auto entries = loadPromptSetFile(args.promptsPath);
    if (!settings.trainerLogPath.empty()) readTrainerLog(settings.trainerLogPath, settings.logMetric);  // fail early
    resumableTrackIndex(args.runDir, args.targetDir, args.promptsPath, settings);  // an index of another run: refused now
    const auto engines = cli::loadReplicas(args.targetDir, {}, args.load, args.replicas);
    std::vector<Engine*> replicas;
    for (const auto& e : engines) replicas.push_back(e.get());
    std::cerr << "tracking " << args.runDir << " into " << settings.outDir << " (" << plannedItems(entries, settings.eval, settings.shard)
              << " prompt(s) per checkpoint" << (settings.watch ? "; watching for new checkpoints, Ctrl-C stops" : "")
              << ")\n";

    const bool tty = ::isatty(STDERR_FILENO);
    ProgressBar bar(std::cerr, tty);
    std::int64_t currentStep = -1;
    std::string counter;
    TrackCallbacks cb;
    cb.log = [&](const std::string& line) {
        bar.clear();
        std::cerr << line << "\n";
    };
    cb.checkpointStarted = [&](const RunCheckpoint& c, std::size_t i, std::size_t n) {
        currentStep = c.step;
        counter = std::to_string(i + 1) + "/" + std::to_string(n);
        bar.clear();
        std::cerr << "checkpoint " << counter << ": step " << c.step << " (" << where(c) << ")\n";
    };
    cb.progress = [&](const EvalProgress& p) {
        bar.update(p.fraction(), "step " + std::to_string(currentStep) + " (" + counter + ") prompt " +
                                     std::to_string(p.item + 1) + "/" + std::to_string(p.items) + " " + p.id,
                   false);
    };
    bool failed = false;
    cb.checkpointDone = [&](const TrackedCheckpoint& c, const TrackIndex&) {
        bar.clear();
        failed = failed || c.status == "failed";
        printCheckpointLine(std::cout, c);
        std::cout << std::flush;
    };
    const auto index = trackRun(replicas, args.runDir, entries, args.promptsPath, settings, cb, cancel);
    bar.clear();
    printTrackSummary(std::cout, index);
    std::cout << std::flush;
    const auto indexPath = (std::filesystem::path(settings.outDir) / "track.json").string();
    std::cerr << "\nrun index " << indexPath << " (open it with: draftscope --track " << settings.outDir << ")\n";
    if (!args.jsonOut.empty()) {
        writeFileAtomically(args.jsonOut, summaryJson(index, indexPath).dump(1, ' ', false,
                                                                             nlohmann::json::error_handler_t::replace) + "\n");
        std::cerr << "wrote " << args.jsonOut << "\n";
    }
    for (const auto& c : index.checkpoints) failed = failed || c.status == "failed";
    bool partial = false;
    for (const auto& c : index.checkpoints) partial = partial || c.status == "partial";
    if (partial) {
        std::cerr << "interrupted: run the same command again to continue where it stopped\n";
        return 130;
    }
    if (failed) {
        std::cerr << "error: some checkpoints failed (their errors are above and in the run index)\n";
        return 1;
    }
    return cancel && cancel->load() && !settings.watch ? 130 : 0;
}

namespace cli {

void TrackCommand::add(CLI::App& app) {
    auto* t = command = app.add_subcommand(
        "track", "evaluate every checkpoint of a training run on one prompt set (tau over training steps, regressions, "
                 "the train-vs-inference gap); resumes where it stopped");
    t->add_option("RUN_DIR", args.runDir,
                  "the trainer's output directory: SpecForge epoch_E_step_S/, step_S/, HF Trainer / speculators "
                  "checkpoint-N/ folders, or .pt files (config.json beside them)")
        ->required();
    t->add_option("--target", args.targetDir, "target model directory (HF layout)")->required();
    t->add_option("--prompts", args.promptsPath, "prompt set, JSONL (as eval)")->required();
    t->add_option("--out", args.settings.outDir, "where the run index and one results file per checkpoint go "
                                                 "(default RUN_DIR/draftscope-track)");
    t->add_option("--json", args.jsonOut, "also write a JSON summary of the series");
    t->add_option("--max-new", args.settings.eval.run.maxNewTokens, "tokens to generate per prompt")->capture_default_str();
    t->add_option("--limit", args.settings.eval.limit, "use only the first N lines of the prompt set (0 = all)")
        ->capture_default_str();
    budgets.add(*t);
    t->add_option("--turns", turns, "chat prompts: 'first' user turn only, or 'all' turns")
        ->capture_default_str()->check(CLI::IsMember({"first", "all"}));
    t->add_flag("--chat", args.settings.eval.chatWrapRaw, "wrap raw 'prompt' texts as one ChatML user turn");
    t->add_flag("--no-thinking", noThinking, "chat prompts: append Qwen3's empty <think></think> block");
    t->add_flag("--ignore-eos", args.settings.eval.run.ignoreEos, "do not stop at end-of-sequence tokens");
    loop.add(*t, args.settings.eval.run);
    device.add(*t);
    t->add_option("--replicas", args.replicas, "engine replicas, as eval")->capture_default_str();
    t->add_option("--shard", shard, "evaluate part I of N of the prompt set, as eval");
    t->add_flag("--watch", args.settings.watch, "keep polling RUN_DIR for new checkpoints until Ctrl-C");
    t->add_option("--poll", args.settings.pollSeconds, "seconds between scans with --watch")->capture_default_str();
    t->add_option("--settle", args.settings.settleSeconds,
                  "a checkpoint whose newest file is younger than this many seconds is left for the next scan "
                  "(a trainer may still be writing it)")
        ->capture_default_str();
    t->add_flag("--probe-conventions", args.settings.probeConventions,
                "where the train-vs-inference gap widens, run diagnose's convention probes on that checkpoint");
    t->add_option("--log", args.settings.trainerLogPath,
                  "the trainer's log (JSON lines, CSV, trainer_state.json); default: found in RUN_DIR");
    t->add_option("--log-metric", args.settings.logMetric, "the log's key or column to plot (default: an acceptance "
                                                           "metric found by name)");
    t->add_option("--drafter-config", args.settings.drafterConfig,
                  "config.json for .pt checkpoints (default: RUN_DIR/config.json)");
}

int TrackCommand::run(const std::atomic<bool>& cancel) const {
    TrackArgs a = args;
    loop.apply(a.settings.eval.run);
    a.settings.eval.ddtreeBudgets = budgets.budgets(a.settings.eval.run.temperature);
    a.load = device.load;
    a.settings.eval.allTurns = turns == "all";
    a.settings.eval.thinking = !noThinking;
    a.settings.eval.device = device.load.device;
    a.settings.eval.dtype = device.load.dtype;
    checkOptions([&] {
        if (device.gpuMemoryError) throw *device.gpuMemoryError;
        for (const auto& o : replicaLoadOptions(a.load, a.replicas)) validate(o);
        a.settings.shard = shard.empty() ? ResultsShard{} : parseShard(shard);
        if (!(a.settings.pollSeconds >= 0.1 && a.settings.pollSeconds <= 86400))
            throw InvalidSetting("--poll", "seconds from 0.1 to 86400", std::to_string(a.settings.pollSeconds));
        if (!(a.settings.settleSeconds >= 0 && a.settings.settleSeconds <= 86400))
            throw InvalidSetting("--settle", "seconds from 0 to 86400", std::to_string(a.settings.settleSeconds));
        if (a.settings.eval.limit < 0) throw InvalidSetting("--limit", "an integer >= 0 (0 = all)", std::to_string(a.settings.eval.limit));
    });
    return trackCommand(a, &cancel);
}

}  // namespace cli

}  // namespace draftscope
