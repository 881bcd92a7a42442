// Following a training run (draftscope/training_run.h; docs/TRACK.md): each checkpoint of a
// run directory through runEvaluation into its own results file, the teacher-forced probe
// along each prompt's chain output, the run index, and the findings over the series.

#include "draftscope/training_run.h"

#include "draftscope/errors.h"
#include "draftscope/probe_statistics.h"
#include "draftscope/results_summary.h"
#include "draftscope/sha256.h"

#include <nlohmann/json.hpp>

#include "draftscope/results_json.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace draftscope {

namespace {

namespace fs = std::filesystem;

double finiteMean(const std::vector<double>& v) {
    double sum = 0;
    int n = 0;
    for (double x : v)
        if (std::isfinite(x)) sum += x, ++n;
    return n ? sum / n : NAN;
}

std::string fixed(double v, int digits = 2) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string signedFixed(double v, int digits = 2) { return (v >= 0 ? "+" : "") + fixed(v, digits); }

/// Per-prompt values of two checkpoints over the prompt ids both have a finite value for.
std::pair<std::vector<double>, std::vector<double>> paired(const TrackedCheckpoint& a, const std::vector<double>& av,
                                                           const TrackedCheckpoint& b, const std::vector<double>& bv) {
    std::map<std::string, double> byId;
    for (std::size_t i = 0; i < a.promptIds.size() && i < av.size(); ++i)
        if (std::isfinite(av[i])) byId[a.promptIds[i]] = av[i];
    std::pair<std::vector<double>, std::vector<double>> out;
    for (std::size_t i = 0; i < b.promptIds.size() && i < bv.size(); ++i) {
        const auto it = byId.find(b.promptIds[i]);
        if (it == byId.end() || !std::isfinite(bv[i])) continue;
        out.first.push_back(it->second);
        out.second.push_back(bv[i]);
    }
    return out;
}

std::vector<double> promptGaps(const TrackedCheckpoint& c) {
    std::vector<double> g;
    for (std::size_t i = 0; i < c.promptTaus.size(); ++i)
        g.push_back(i < c.promptTeacherForcedExpected.size() ? c.promptTeacherForcedExpected[i] - c.promptTaus[i] : NAN);
    return g;
}

std::string stepName(std::int64_t step) { return "step " + std::to_string(step); }

std::string resultsFileName(std::int64_t step, const ResultsShard& shard) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "step-%012lld", static_cast<long long>(step));
    std::string name = buf;
    if (shard.count > 1) name += ".shard-" + std::to_string(shard.index) + "-of-" + std::to_string(shard.count);
    return name + ".dsresults";
}

/// Refuses to extend an index made with other inputs: the field, expected vs found.
void checkSameRun(const TrackIndex& old, const TrackIndex& now, const std::string& path) {
    auto refuse = [&](const std::string& what, const std::string& was, const std::string& is) {
        throw Error("the run index '" + path + "' was made with " + what + " " + was + ", this run has " + is +
                    "; pass another --out, or delete the index to start over");
    };
    if (old.targetConfigSha256 != now.targetConfigSha256)
        refuse("the target", old.targetDir + " (config.json sha256 " + old.targetConfigSha256.substr(0, 12) + ")",
               now.targetDir + " (" + now.targetConfigSha256.substr(0, 12) + ")");
    if (old.promptSetSha256 != now.promptSetSha256)
        refuse("the prompt set", old.promptSetPath + " (sha256 " + old.promptSetSha256.substr(0, 12) + ")",
               now.promptSetPath + " (" + now.promptSetSha256.substr(0, 12) + ")");
    auto a = toJson(old.settings), b = toJson(now.settings);
    a.erase("device");  // a run may resume on another GPU of the same kind
    b.erase("device");
    for (const auto& [key, value] : b.items())
        if (!a.contains(key) || a[key] != value)
            refuse("settings." + key, a.contains(key) ? a[key].dump() : std::string("(absent)"), value.dump());
    if (!(old.shard == now.shard))
        refuse("the shard", std::to_string(old.shard.index) + "/" + std::to_string(old.shard.count),
               std::to_string(now.shard.index) + "/" + std::to_string(now.shard.count));
}

/// The index header of this run (no checkpoints).
TrackIndex headerOf(const std::string& runDir, const std::string& targetDir, const std::string& promptSetPath,
                    const TrackSettings& settings) {
    std::error_code ec;
    TrackIndex x;
    x.runDir = fs::absolute(runDir, ec).lexically_normal().string();
    x.targetDir = fs::absolute(targetDir, ec).lexically_normal().string();
    x.targetConfigSha256 = sha256File((fs::path(targetDir) / "config.json").string());
    x.promptSetPath = fs::absolute(promptSetPath, ec).lexically_normal().string();
    x.promptSetSha256 = sha256File(promptSetPath);
    x.settings = settings.eval;
    x.shard = settings.shard;
    return x;
}

/// One scan's work: evaluating checkpoints into the index.
class Tracker {
public:
    Tracker(const std::vector<Engine*>& replicas, const std::string& runDir, const std::vector<PromptSetEntry>& entries,
            const std::string& promptSetPath, const TrackSettings& settings, const TrackCallbacks& cb,
            const std::atomic<bool>* cancel)
        : replicas_(replicas), runDir_(runDir), entries_(entries), settings_(settings), cb_(cb), cancel_(cancel) {
        if (replicas.empty() || !replicas.front()->hasTarget()) throw Error("track: load the target first");
        if (entries.empty()) throw Error("track: the prompt set '" + promptSetPath + "' has no prompts");
        if (settings.outDir.empty()) throw Error("track: no output directory");
        std::error_code ec;
        fs::create_directories(settings.outDir, ec);
        if (!fs::is_directory(settings.outDir, ec))
            throw Error("track: cannot create the output directory '" + settings.outDir + "'");
        indexPath_ = (fs::path(settings.outDir) / "track.json").string();
        const auto targetDir = replicas.front()->targetSummary().directory;
        index_ = headerOf(runDir, targetDir, promptSetPath, settings);
        if (auto old = resumableTrackIndex(runDir, targetDir, promptSetPath, settings))
            index_.checkpoints = std::move(old->checkpoints);
    }

    TrackIndex run() {
        for (bool first = true;; first = false) {
            if (!first && !sleepOrCancel()) break;
            readLog();
            const bool interrupted = scan();
            if (interrupted || cancelled() || !settings_.watch) break;
        }
        return index_;
    }

private:
    bool cancelled() const { return cancel_ && cancel_->load(); }

    /// Waits pollSeconds; false if cancelled meanwhile.
    bool sleepOrCancel() const {
        const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(settings_.pollSeconds);
        while (std::chrono::steady_clock::now() < until) {
            if (cancelled()) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return !cancelled();
    }

    void log(const std::string& line) const {
        if (cb_.log) cb_.log(line);
    }

    void readLog() {
        std::string path = settings_.trainerLogPath.empty() ? findTrainerLog(runDir_) : settings_.trainerLogPath;
        index_.trainerLog.reset();
        index_.trainerLogNote.clear();
        if (path.empty()) {
            std::error_code ec;
            bool tensorboard = false;
            for (const auto& e : fs::recursive_directory_iterator(runDir_, ec))
                if (e.path().filename().string().rfind("events.out.tfevents", 0) == 0) tensorboard = true;
            index_.trainerLogNote = tensorboard ? "TensorBoard event files only: draftscope reads JSON lines, CSV and "
                                                  "trainer_state.json (docs/TRACK.md); export the scalars to CSV and pass --log"
                                                : "no trainer log in the run directory";
            return;
        }
        try {
            index_.trainerLog = readTrainerLog(path, settings_.logMetric);
        } catch (const Error& e) {
            index_.trainerLogNote = e.what();
            if (!settings_.trainerLogPath.empty()) throw;  // the user named it
        }
    }

    TrackedCheckpoint* entryOf(std::int64_t step) {
        for (auto& c : index_.checkpoints)
            if (c.checkpoint.step == step) return &c;
        return nullptr;
    }

    /// One pass over the run directory; true if a checkpoint was interrupted.
    bool scan() {
        std::vector<SkippedCheckpoint> skipped;
        const auto found = findRunCheckpoints(runDir_, settings_.settleSeconds, &skipped);
        for (const auto& s : skipped)
            if (reported_.insert(s.path + "\n" + s.reason).second) log("skipping " + s.path + ": " + s.reason);
        std::vector<RunCheckpoint> todo;
        for (const auto& c : found) {
            const auto* e = entryOf(c.step);
            if (e && e->status == "done" && e->checkpoint.signature == c.signature) continue;
            if (e && e->status == "failed" && e->checkpoint.signature == c.signature) continue;  // reported once
            todo.push_back(c);
        }
        if (todo.empty() && !found.empty() && !announced_) log("every checkpoint found is evaluated");
        // Nothing to evaluate: the index is still rewritten on the first scan (findings by this
        // build's rules) and whenever the trainer log grew, so the GUI follows the log too.
        const std::size_t logPoints = index_.trainerLog ? index_.trainerLog->points.size() : 0;
        if (todo.empty() && !index_.checkpoints.empty() && (!announced_ || logPoints != writtenLogPoints_)) write();
        announced_ = true;
        for (std::size_t i = 0; i < todo.size(); ++i) {
            if (cancelled()) return true;
            if (cb_.checkpointStarted) cb_.checkpointStarted(todo[i], i, todo.size());
            auto t = evaluate(todo[i]);
            const bool partial = t.status == "partial";
            store(std::move(t));
            if (settings_.probeConventions && !partial) probeWhereGapWidens();
            write();
            if (cb_.checkpointDone) cb_.checkpointDone(*entryOf(todo[i].step), index_);
            if (partial) return true;
        }
        return false;
    }

    void store(TrackedCheckpoint t) {
        if (auto* e = entryOf(t.checkpoint.step)) *e = std::move(t);
        else index_.checkpoints.push_back(std::move(t));
        std::sort(index_.checkpoints.begin(), index_.checkpoints.end(),
                  [](const auto& a, const auto& b) { return a.checkpoint.step < b.checkpoint.step; });
    }

    void write() {
        index_.findings = trackFindings(index_);
        index_.bestStep = -1;
        double best = -1;
        for (const auto& c : index_.checkpoints)
            if (c.status == "done" && c.tau > best) best = c.tau, index_.bestStep = c.checkpoint.step;
        index_.updatedUtc = utcTimestamp();
        writeTrackIndex(indexPath_, index_);
        writtenLogPoints_ = index_.trainerLog ? index_.trainerLog->points.size() : 0;
    }

    /// The drafter config of a .pt checkpoint.
    std::string configFor(const RunCheckpoint& c) const {
        if (c.layout != "pt") return {};
        return settings_.drafterConfig.empty() ? (fs::path(runDir_) / "config.json").string() : settings_.drafterConfig;
    }

    TrackedCheckpoint evaluate(const RunCheckpoint& c) {
        TrackedCheckpoint t;
        t.checkpoint = c;
        t.resultsFile = resultsFileName(c.step, settings_.shard);
        t.treeBudgets = settings_.eval.ddtreeBudgets;
        const auto resultsPath = (fs::path(settings_.outDir) / t.resultsFile).string();
        const auto start = std::chrono::steady_clock::now();
        auto finish = [&](std::string status) {
            t.status = std::move(status);
            t.evaluatedUtc = utcTimestamp();
            t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            return t;
        };
        std::optional<ResultsFile> resume;
        if (const auto* e = entryOf(c.step); e && e->status == "partial" && e->checkpoint.signature == c.signature) {
            try {
                resume = readResultsFile(resultsPath);
                log(stepName(c.step) + ": continuing the interrupted evaluation (" +
                    std::to_string(resume->prompts.size()) + " prompt(s) kept)");
            } catch (const Error&) {
                resume.reset();
            }
        }
        try {
            for (auto* e : replicas_) {
                e->truncateDrafters(0);
                e->loadDrafter(c.path, configFor(c));
            }
            EvalCallbacks ecb;
            ecb.progress = cb_.progress;
            auto results = runEvaluation(replicas_, entries_, settings_.eval, settings_.shard, ecb, cancel_,
                                         resume ? &*resume : nullptr);
            results.producer = "draftscope-cli track";
            results.promptSetPath = index_.promptSetPath;
            results.promptSetSha256 = index_.promptSetSha256;
            writeResultsFile(resultsPath, results);
            if (!results.complete) return finish("partial");
            summarise(t, results);
            if (!teacherForced(t, results)) return finish("partial");
        } catch (const Cancelled&) {
            return finish("partial");
        } catch (const Error& e) {
            t.error = e.what();
            log(stepName(c.step) + " failed: " + t.error);
            return finish("failed");
        }
        return finish("done");
    }

    /// aggregateDrafter's numbers (the same as `eval`'s) and the per-prompt taus.
    static void summarise(TrackedCheckpoint& t, const ResultsFile& results) {
        const auto agg = aggregateDrafter(results, 0);
        t.tau = agg.macroTau;
        t.positionAcceptance = agg.perPositionAcceptance;
        t.treeTaus = agg.treeMacroTau;
        for (const auto& p : results.prompts) {
            if (!p.error.empty() || p.drafters.empty() || p.drafters.front().run.steps.empty()) continue;
            t.promptIds.push_back(p.id);
            t.promptTaus.push_back(p.drafters.front().run.tau);
        }
    }

    /// The teacher-forced probe along each counted prompt's chain output, prompts spread over
    /// the replicas. False if cancelled.
    bool teacherForced(TrackedCheckpoint& t, const ResultsFile& results) {
        std::vector<const RunResult*> runs;
        for (const auto& p : results.prompts)
            if (p.error.empty() && !p.drafters.empty() && !p.drafters.front().run.steps.empty())
                runs.push_back(&p.drafters.front().run);
        std::vector<double> tfTau(runs.size(), NAN), tfExpected(runs.size(), NAN);
        const auto& summary = replicas_.front()->drafterSummary(0);
        const auto width = summary.blockSize + (summary.draftsFromAnchor ? 1 : 0);
        std::atomic<std::size_t> next{0};
        std::exception_ptr failure;
        std::mutex m;
        auto work = [&](Engine& engine) {
            try {
                for (std::size_t i; (i = next++) < runs.size();) {
                    const auto& run = *runs[i];
                    const auto P = static_cast<std::int64_t>(run.promptIds.size());
                    if (static_cast<std::int64_t>(run.outputIds.size()) - width < P) continue;
                    const auto probe = engine.teacherForcedDrafts(run.outputIds, P, 0, ProbeConvention{},
                                                                  settings_.eval.run.loop, cancel_);
                    tfTau[i] = finiteMean(perAnchorAcceptance(probe, 0));
                    tfExpected[i] = finiteMean(perAnchorExpectedAcceptance(probe, 0));
                }
            } catch (...) {
                std::lock_guard lock(m);
                if (!failure) failure = std::current_exception();
                next = runs.size();
            }
        };
        {
            std::vector<std::jthread> threads;
            for (std::size_t r = 1; r < replicas_.size(); ++r) threads.emplace_back([&, r] { work(*replicas_[r]); });
            work(*replicas_.front());
        }
        if (failure) {
            try {
                std::rethrow_exception(failure);
            } catch (const Cancelled&) {
                return false;
            }
        }
        t.teacherForcedTau = finiteMean(tfTau);
        t.teacherForcedExpected = finiteMean(tfExpected);
        t.promptTeacherForcedExpected = tfExpected;
        t.gap = finiteMean(promptGaps(t));
        if (!std::isfinite(t.teacherForcedTau)) t.teacherForcedTau = 0;
        if (!std::isfinite(t.teacherForcedExpected)) t.teacherForcedExpected = 0;
        if (!std::isfinite(t.gap)) t.gap = 0;
        return true;
    }

    /// With probeConventions: diagnose's convention probes on the checkpoint where the gap
    /// first widened, once.
    void probeWhereGapWidens() {
        for (const auto& f : trackFindings(index_)) {
            if (f.id != "gap-widening") continue;
            auto* e = entryOf(f.step);
            if (!e || !e->conventionFindings.empty() || probed_.count(f.step)) return;
            probed_.insert(f.step);
            log(stepName(f.step) + ": the gap widened; running diagnose's convention probes");
            std::vector<DiagnosePrompt> prompts;
            for (const auto& entry : entries_) {
                if (prompts.size() >= 8) break;
                prompts.push_back({entry.id, promptSpecForTurn(entry, 0, {}, settings_.eval.thinking,
                                                               settings_.eval.chatWrapRaw)});
            }
            DiagnoseSettings ds;
            ds.maxNewTokens = std::max<std::int64_t>(settings_.eval.run.maxNewTokens, 32);
            ds.sampling = settings_.eval.run;
            auto& engine = *replicas_.front();
            engine.truncateDrafters(0);
            try {
                const auto report = diagnoseDrafters(engine, {e->checkpoint.path}, prompts, ds, {}, cancel_);
                for (const auto& finding : report.drafters.front().findings)
                    if (finding.severity != Severity::Info) e->conventionFindings.push_back(finding);
                if (e->conventionFindings.empty())
                    e->conventionFindings.push_back({"no-convention-finding", Severity::Info,
                                                     "diagnose found no convention the drafter prefers over the declared one", {}});
            } catch (const Cancelled&) {
            } catch (const Error& err) {
                e->conventionFindings.push_back({"diagnose-failed", Severity::Info, err.what(), {}});
            }
            return;
        }
    }

    const std::vector<Engine*>& replicas_;
    std::string runDir_;
    const std::vector<PromptSetEntry>& entries_;
    const TrackSettings& settings_;
    const TrackCallbacks& cb_;
    const std::atomic<bool>* cancel_;
    std::string indexPath_;
    TrackIndex index_;
    std::set<std::string> reported_;
    std::set<std::int64_t> probed_;
    bool announced_ = false;
    std::size_t writtenLogPoints_ = 0;  ///< trainer log points in the index as last written
};

}  // namespace

std::vector<TrackFinding> trackFindings(const TrackIndex& index) {
    std::vector<const TrackedCheckpoint*> done;
    for (const auto& c : index.checkpoints)
        if (c.status == "done") done.push_back(&c);
    std::vector<TrackFinding> out;
    // Regressions between consecutive done checkpoints.
    for (std::size_t k = 1; k < done.size(); ++k) {
        const auto& a = *done[k - 1];
        const auto& b = *done[k];
        const auto [before, after] = paired(a, a.promptTaus, b, b.promptTaus);
        if (before.size() < 2) continue;
        const auto iv = pairedBootstrap(before, after, kTrackResamples, kTrackConfidence, kTrackSeed);
        if (!(iv.mean < -kRegressionMargin && iv.upper < 0)) continue;
        TrackFinding f;
        f.id = "regression";
        f.step = b.checkpoint.step;
        f.fromStep = a.checkpoint.step;
        std::vector<std::pair<double, int>> lost;
        for (std::size_t j = 1; j < std::min(a.positionAcceptance.size(), b.positionAcceptance.size()); ++j)
            if (b.positionAcceptance[j] < a.positionAcceptance[j])
                lost.emplace_back(b.positionAcceptance[j] - a.positionAcceptance[j], static_cast<int>(j));
        std::sort(lost.begin(), lost.end());
        std::string where;
        for (std::size_t i = 0; i < lost.size() && i < 3; ++i) {
            f.positions.push_back(lost[i].second);
            where += (i ? ", " : "") + std::to_string(lost[i].second) + " (" + signedFixed(lost[i].first * 100, 1) + " points)";
        }
        f.message = "tau fell from " + fixed(a.tau) + " at " + stepName(a.checkpoint.step) + " to " + fixed(b.tau) +
                    " at " + stepName(b.checkpoint.step) + ": " + signedFixed(iv.mean) + " tokens per step over " +
                    std::to_string(iv.pairs) + " prompts, " + fixed(kTrackConfidence * 100, 0) + "% paired-bootstrap interval [" +
                    signedFixed(iv.lower) + ", " + signedFixed(iv.upper) + "]" +
                    (where.empty() ? std::string() : "; the block positions that lost most: " + where);
        f.evidence = {{"tau_before", a.tau}, {"tau_after", b.tau}, {"mean_change", iv.mean},
                      {"lower", iv.lower},   {"upper", iv.upper},  {"prompts", static_cast<double>(iv.pairs)}};
        // What the trainer logged over the same steps: the number that did not show the drop.
        const auto logged = [&](std::int64_t step) -> std::optional<double> {
            std::optional<double> v;
            if (index.trainerLog)
                for (const auto& [s, value] : index.trainerLog->points)
                    if (s <= step) v = value;
            return v;
        };
        if (const auto la = logged(a.checkpoint.step), lb = logged(b.checkpoint.step); la && lb) {
            f.message += "; meanwhile the trainer logged " + index.trainerLog->metric + " " + fixed(*la, 3) + " -> " +
                         fixed(*lb, 3);
            f.evidence.emplace_back("logged_before", *la);
            f.evidence.emplace_back("logged_after", *lb);
        }
        out.push_back(std::move(f));
    }
    // The train-vs-inference gap widening from its smallest earlier value (first time only).
    for (std::size_t k = 1; k < done.size(); ++k) {
        std::size_t m = 0;
        for (std::size_t i = 1; i < k; ++i)
            if (done[i]->gap < done[m]->gap) m = i;
        const auto& a = *done[m];
        const auto& b = *done[k];
        const auto [before, after] = paired(a, promptGaps(a), b, promptGaps(b));
        if (before.size() < 2) continue;
        const auto iv = pairedBootstrap(before, after, kTrackResamples, kTrackConfidence, kTrackSeed);
        // The teacher-forced acceptance must stand above tau (a drafter that merely got worse
        // shrinks a negative gap towards 0 without drafting better under teacher forcing).
        if (!(iv.mean > kGapMargin && iv.lower > 0 && b.gap > kGapMargin)) continue;
        TrackFinding f;
        f.id = "gap-widening";
        f.step = b.checkpoint.step;
        f.fromStep = a.checkpoint.step;
        f.message = "from " + stepName(b.checkpoint.step) +
                    " the teacher-forced expected acceptance (training-style) and the free-running tau drift apart: the "
                    "gap is " + signedFixed(b.gap) + " tokens per block there against " + signedFixed(a.gap) + " at " +
                    stepName(a.checkpoint.step) + " (" + signedFixed(iv.mean) + ", " + fixed(kTrackConfidence * 100, 0) +
                    "% paired-bootstrap interval [" + signedFixed(iv.lower) + ", " + signedFixed(iv.upper) + "] over " +
                    std::to_string(iv.pairs) + " prompts)";
        for (const auto& c : b.conventionFindings)
            f.message += (c.id == "no-convention-finding" || c.id == "diagnose-failed" ? "; " : "; diagnose at this step: ") +
                         c.message;
        f.evidence = {{"gap_before", a.gap}, {"gap_after", b.gap}, {"mean_change", iv.mean},
                      {"lower", iv.lower},   {"upper", iv.upper}, {"prompts", static_cast<double>(iv.pairs)}};
        out.push_back(std::move(f));
        break;
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.step < y.step; });
    return out;
}

std::optional<TrackIndex> resumableTrackIndex(const std::string& runDir, const std::string& targetDir,
                                              const std::string& promptSetPath, const TrackSettings& settings) {
    const auto path = (fs::path(settings.outDir) / "track.json").string();
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::nullopt;
    auto old = readTrackIndex(path);
    checkSameRun(old, headerOf(runDir, targetDir, promptSetPath, settings), path);
    return old;
}

TrackIndex trackRun(const std::vector<Engine*>& replicas, const std::string& runDir,
                    const std::vector<PromptSetEntry>& entries, const std::string& promptSetPath,
                    const TrackSettings& settings, const TrackCallbacks& callbacks, const std::atomic<bool>* cancel) {
    return Tracker(replicas, runDir, entries, promptSetPath, settings, callbacks, cancel).run();
}

}  // namespace draftscope
