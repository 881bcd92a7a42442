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
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

namespace draftscope {

double EvalProgress::itemFraction() const {
    const double inRun = tokensTotal > 0 ? std::clamp(static_cast<double>(tokensDone) / tokensTotal, 0.0, 1.0) : 0.0;
    return std::clamp((run + inRun) / std::max(1, runsPerItem), 0.0, 1.0);
}

double EvalProgress::fraction() const {
    if (items == 0) return 0;
    return std::clamp((othersDone + itemFraction()) / static_cast<double>(items), 0.0, 1.0);
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
    // A .pt drafter's config sits beside it or elsewhere (ModelSummary::configFile).
    const auto config = m.configFile.empty() ? (std::filesystem::path(m.directory) / "config.json").string() : m.configFile;
    r.configSha256 = sha256File(config);
    return r;
}

constexpr const char* kShardExpected = "I/N with 0 <= I < N (e.g. 0/8)";

/// Throws InvalidSetting for "shard" unless 0 <= index < count; `found` spells the value.
void checkShard(const ResultsShard& s, const std::string& found) {
    if (s.count < 1 || s.index < 0 || s.index >= s.count) throw InvalidSetting("shard", kShardExpected, found);
}

/// One prompt-set line of a run's plan: its turns run in order on one replica.
struct EvalUnit {
    std::size_t line = 0;          ///< index into the entries
    int turns = 1;                 ///< items it runs
    std::int64_t firstIndex = 0;   ///< whole-set index of its first item (PromptResult::index)
    std::size_t firstPlanned = 0;  ///< position of its first item in this run's plan
};

/// The lines of `shard` among the first settings.limit lines, in order (ResultsShard).
std::vector<EvalUnit> planUnits(const std::vector<PromptSetEntry>& entries, const EvalSettings& settings,
                                const ResultsShard& shard) {
    checkShard(shard, std::to_string(shard.index) + "/" + std::to_string(shard.count));
    std::vector<EvalUnit> units;
    std::int64_t index = 0;
    std::size_t planned = 0;
    const auto lines = linesTaken(entries, settings);
    for (std::size_t li = 0; li < lines; ++li) {
        const int turns = settings.allTurns ? entries[li].userTurns() : 1;
        if (li % static_cast<std::size_t>(shard.count) == static_cast<std::size_t>(shard.index)) {
            units.push_back({li, turns, index, planned});
            planned += static_cast<std::size_t>(turns);
        }
        index += turns;
    }
    return units;
}

/// The answer a later turn sees: drafter 0's generated tokens, special tokens skipped.
std::string answerOf(const Engine& engine, const PromptResult& pr) {
    const auto& first = pr.drafters.front().run;
    const std::vector<std::int64_t> generated(first.outputIds.begin() + static_cast<std::ptrdiff_t>(first.promptIds.size()),
                                              first.outputIds.end());
    return engine.tokenizer() ? engine.tokenizer()->decode(generated, /*skipSpecial=*/true) : std::string();
}

/// One evaluation: the plan, the replicas taking its lines from a shared counter, the
/// results per line, and the progress of every replica (callbacks serialised by `mutex_`).
class EvalRun {
public:
    EvalRun(const std::vector<Engine*>& replicas, const std::vector<PromptSetEntry>& entries, const EvalSettings& settings,
            const ResultsShard& shard, const EvalCallbacks& cb, const std::atomic<bool>* cancel, const ResultsFile* resume)
        : replicas_(replicas), entries_(entries), settings_(settings), shard_(shard), cb_(cb), cancel_(cancel) {
        checkReplicas();
        validate(settings.run);
        validateTreeBudgets(settings.ddtreeBudgets, settings.run.temperature);  // before any work
        units_ = planUnits(entries, settings, shard);
        done_.resize(units_.size());
        drafters_ = replicas.front()->drafterCount();
        runsPerDrafter_ = 1 + static_cast<int>(settings.ddtreeBudgets.size());
        prog_.resize(replicas.size());
        busy_.assign(replicas.size(), 0);
        for (std::size_t r = 0; r < replicas.size(); ++r) {
            prog_[r].items = plannedItems(entries, settings, shard);
            prog_[r].runsPerItem = drafters_ * runsPerDrafter_;
            prog_[r].replica = static_cast<int>(r);
        }
        kept_.assign(units_.size(), 0);
        if (resume) keepFinishedLines(*resume);
    }

    /// Lines of `resume` that finished (every planned item present, none failed) fill their
    /// unit's results and are not run again.
    void keepFinishedLines(const ResultsFile& resume) {
        std::map<std::int64_t, const PromptResult*> byIndex;
        for (const auto& p : resume.prompts)
            if (p.index >= 0 && p.error.empty()) byIndex[p.index] = &p;
        for (std::size_t u = 0; u < units_.size(); ++u) {
            const auto& unit = units_[u];
            std::vector<PromptResult> kept;
            for (int t = 0; t < unit.turns; ++t) {
                const auto it = byIndex.find(unit.firstIndex + t);
                if (it == byIndex.end() || it->second->drafters.size() != static_cast<std::size_t>(drafters_)) break;
                kept.push_back(*it->second);
            }
            if (kept.size() != static_cast<std::size_t>(unit.turns)) continue;
            done_[u] = std::move(kept);
            kept_[u] = 1;
            accounted_ += unit.turns;
        }
    }

    /// Runs every replica (the first on this thread) and collects the file.
    ResultsFile run() {
        ResultsFile out = header();
        {
            std::vector<std::jthread> threads;
            for (std::size_t r = 1; r < replicas_.size(); ++r) threads.emplace_back([this, r] { replicaLoop(r); });
            replicaLoop(0);
        }
        if (failure_) std::rethrow_exception(failure_);
        for (auto& line : done_)
            for (auto& p : line) out.prompts.push_back(std::move(p));
        out.complete = !cancelled_;
        noteRuns(out);
        return out;
    }

private:
    void checkReplicas() const {
        if (replicas_.empty()) throw Error("an evaluation needs at least one engine");
        for (std::size_t r = 0; r < replicas_.size(); ++r) {
            const Engine& e = *replicas_[r];
            if (!e.hasTarget() || e.drafterCount() == 0)
                throw Error("an evaluation needs a loaded target and at least one drafter" +
                            (r ? " (replica " + std::to_string(r) + ")" : std::string()));
            if (e.drafterCount() != replicas_.front()->drafterCount())
                throw Error("replica " + std::to_string(r) + " has " + std::to_string(e.drafterCount()) +
                            " drafter(s), expected " + std::to_string(replicas_.front()->drafterCount()) + " as replica 0");
        }
        // Refused before the first prompt rather than once per prompt.
        const Engine& e = *replicas_.front();
        for (int d = 0; d < e.drafterCount(); ++d) {
            const auto& s = e.drafterSummary(d);
            const auto why = runRefusal(s.family, s.draftsFromAnchor, settings_.run.loop, !settings_.ddtreeBudgets.empty());
            if (!why.empty()) throw Error("drafter " + std::to_string(d + 1) + " (" + s.directory + "): " + why);
        }
    }

    ResultsFile header() const {
        const Engine& engine = *replicas_.front();
        ResultsFile out;
        out.createdUtc = utcTimestamp();
        out.complete = false;
        out.settings = settings_;
        out.shard = shard_;
        out.promptSetLines = static_cast<std::int64_t>(entries_.size());
        out.target = identity(engine.targetSummary());
        for (int d = 0; d < drafters_; ++d) out.drafters.push_back(identity(engine.drafterSummary(d)));
        return out;
    }

    /// Device and dtype (if empty) from the first successful run, and every run's token pieces.
    void noteRuns(ResultsFile& out) const {
        const Tokenizer* tok = replicas_.front()->tokenizer();
        for (const auto& pr : out.prompts) {
            if (!pr.error.empty()) continue;
            const auto& first = pr.drafters.front().run;
            if (out.settings.device.empty()) out.settings.device = first.device;
            if (out.settings.dtype.empty()) out.settings.dtype = first.dtype;
            if (!tok) continue;
            for (const auto& dr : pr.drafters)
                for (auto id : collectTokenIds(dr.run, dr.trees))
                    if (!out.tokenPieces.count(id)) out.tokenPieces.emplace(id, tok->tokenPiece(id));
        }
    }

    /// Takes lines until none is left, `cancel` is set or another replica failed.
    void replicaLoop(std::size_t r) {
        try {
            for (;;) {
                const std::size_t u = next_++;
                if (u >= units_.size()) return;
                if (kept_[u]) continue;  // taken from the interrupted run
                if ((cancel_ && *cancel_) || failed_) {
                    cancelled_ = true;
                    return;
                }
                runUnit(r, units_[u], done_[u]);
            }
        } catch (const Cancelled&) {
            cancelled_ = true;
        } catch (...) {
            std::lock_guard lock(mutex_);
            if (!failure_) failure_ = std::current_exception();
            failed_ = true;
        }
    }

    /// The turns of one line; a failed turn skips the turns that build on it.
    void runUnit(std::size_t r, const EvalUnit& unit, std::vector<PromptResult>& out) {
        std::vector<std::string> answers;
        for (int turn = 0; turn < unit.turns; ++turn) {
            const std::size_t planned = unit.firstPlanned + static_cast<std::size_t>(turn);
            out.push_back(runItem(r, entries_[unit.line], turn, unit.firstIndex + turn, planned, answers));
            const bool failed = !out.back().error.empty();
            if (!failed) answers.push_back(answerOf(*replicas_[r], out.back()));
            finishItem(r, out.back(), planned, failed ? static_cast<std::size_t>(unit.turns - turn) : 1);
            if (failed) break;
        }
    }

    PromptResult runItem(std::size_t r, const PromptSetEntry& entry, int turn, std::int64_t index, std::size_t planned,
                         const std::vector<std::string>& answers) {
        PromptResult pr;
        pr.sourceId = entry.id;
        pr.id = turn == 0 ? entry.id : entry.id + "#turn" + std::to_string(turn + 1);
        pr.line = entry.line;
        pr.turn = turn;
        pr.index = index;
        report(r, true, [&](EvalProgress& p) {
            p.item = planned;
            p.run = 0;
            p.tokensDone = p.tokensTotal = 0;
            p.id = pr.id;
            busy_[r] = 1;
        });
        try {
            pr.prompt = promptSpecForTurn(entry, turn, answers, settings_.thinking, settings_.chatWrapRaw);
            for (int d = 0; d < drafters_; ++d) pr.drafters.push_back(runDrafter(r, pr.prompt, d));
        } catch (const Cancelled&) {
            throw;
        } catch (const Error& e) {
            pr.error = e.what();
            pr.drafters.clear();
        }
        return pr;
    }

    /// analysePrompt with drafter `d`; a failing DDTree run fails the item.
    DrafterPromptResult runDrafter(std::size_t r, const PromptSpec& prompt, int d) {
        PromptAnalysisRequest request{prompt, settings_.run, settings_.ddtreeBudgets, HiddenStatsScope::Prompt,
                                      settings_.histogramBins};
        request.settings.drafter = d;
        const int firstRun = d * runsPerDrafter_;
        AnalysisCallbacks acb;
        acb.stageStarted = [&](const AnalysisStage& stage) {
            if (stage.kind == AnalysisStage::Kind::Chain) return;
            report(r, false, [&](EvalProgress& p) {
                p.run = firstRun + 1 + static_cast<int>(stage.index);
                p.tokensDone = p.tokensTotal = 0;
            });
        };
        acb.progress = [&](std::int64_t done, std::int64_t total) {
            report(r, true, [&](EvalProgress& p) {
                p.tokensDone = done;
                p.tokensTotal = total;
            });
        };
        auto analysis = analysePrompt(*replicas_[r], request, acb, cancel_);
        if (!analysis.treeError.empty()) throw Error(analysis.treeError);
        report(r, false, [&](EvalProgress& p) { p.run = firstRun + runsPerDrafter_; });
        DrafterPromptResult dr;
        dr.run = std::move(analysis.run);
        dr.trees = std::move(analysis.trees);
        dr.hiddenStats = std::move(analysis.hiddenStats);
        dr.hiddenStatsError = std::move(analysis.hiddenStatsError);
        return dr;
    }

    /// Applies `change` to replica r's progress and, if `notify`, reports it with the
    /// other replicas' share.
    template <class F>
    void report(std::size_t r, bool notify, F&& change) {
        std::lock_guard lock(mutex_);
        change(prog_[r]);
        if (!notify || !cb_.progress) return;
        EvalProgress p = prog_[r];
        p.othersDone = accounted_;
        for (std::size_t s = 0; s < prog_.size(); ++s)
            if (s != r && busy_[s]) p.othersDone += prog_[s].itemFraction();
        cb_.progress(p);
    }

    /// Counts an item (and the turns it skips) as done and reports it.
    void finishItem(std::size_t r, const PromptResult& pr, std::size_t planned, std::size_t accounted) {
        std::lock_guard lock(mutex_);
        accounted_ += static_cast<double>(accounted);
        busy_[r] = 0;
        if (cb_.itemDone) cb_.itemDone(pr, planned, prog_[r].items);
    }

    const std::vector<Engine*>& replicas_;
    const std::vector<PromptSetEntry>& entries_;
    const EvalSettings& settings_;
    const ResultsShard shard_;
    const EvalCallbacks& cb_;
    const std::atomic<bool>* cancel_;
    std::vector<EvalUnit> units_;
    std::vector<std::vector<PromptResult>> done_;  ///< per unit; written by the replica that took it
    std::vector<char> kept_;                       ///< per unit: taken from the resumed file
    int drafters_ = 0, runsPerDrafter_ = 1;

    std::mutex mutex_;  ///< guards prog_, busy_, accounted_, failure_ and the callbacks
    std::vector<EvalProgress> prog_;
    std::vector<char> busy_;
    double accounted_ = 0;  ///< items finished or skipped
    std::exception_ptr failure_;
    std::atomic<std::size_t> next_{0};
    std::atomic<bool> cancelled_{false}, failed_{false};
};


}  // namespace

std::size_t plannedItems(const std::vector<PromptSetEntry>& entries, const EvalSettings& settings,
                         const ResultsShard& shard) {
    std::size_t n = 0;
    for (const auto& unit : planUnits(entries, settings, shard)) n += static_cast<std::size_t>(unit.turns);
    return n;
}

ResultsShard parseShard(const std::string& text) {
    const auto slash = text.find('/');
    const auto number = [&](const std::string& digits, int& v) {
        if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
        v = std::stoi(digits);
        return true;
    };
    ResultsShard s{-1, 0};
    if (slash == std::string::npos || !number(text.substr(0, slash), s.index) || !number(text.substr(slash + 1), s.count))
        throw InvalidSetting("shard", kShardExpected, "'" + escapeNonPrintable(text) + "'");
    checkShard(s, "'" + text + "'");
    return s;
}

std::vector<std::string> replicaDeviceGroups(const std::string& devices, int replicas) {
    if (replicas < 1 || replicas > kMaxReplicas)
        throw InvalidSetting("replicas", "an integer from 1 to " + std::to_string(kMaxReplicas), std::to_string(replicas));
    const auto entries = deviceList(devices);  // validated entries, no empty ones
    if (entries.size() == 1) {
        if (entries.front() == "auto" && replicas > 1)
            throw InvalidSetting("device", "a list of GPUs to cut into --replicas " + std::to_string(replicas) +
                                               " groups (e.g. cuda:0,cuda:1); auto would give every replica every GPU",
                                 "'auto'");
        return std::vector<std::string>(static_cast<std::size_t>(replicas), entries.front());  // trimmed
    }
    const auto n = static_cast<std::size_t>(replicas);
    if (entries.size() % n != 0)
        throw InvalidSetting("device", "one device, or a list whose length is a multiple of --replicas " +
                                           std::to_string(replicas) + " (cut into equal groups, one per replica)",
                             std::to_string(entries.size()) + " entries ('" + escapeNonPrintable(devices) + "')");
    std::vector<std::string> groups(n);
    const std::size_t per = entries.size() / n;
    for (std::size_t i = 0; i < entries.size(); ++i) groups[i / per] += (i % per ? "," : "") + entries[i];
    return groups;
}

std::vector<LoadOptions> replicaLoadOptions(const LoadOptions& options, int replicas, unsigned hardwareThreads) {
    const auto groups = replicaDeviceGroups(options.device, replicas);
    if (replicas == 1) return {options};
    const auto onCpu = [](const std::string& group) { return ("," + group + ",").find(",cpu,") != std::string::npos; };
    const auto cpuReplicas = std::count_if(groups.begin(), groups.end(), onCpu);
    if (hardwareThreads == 0) hardwareThreads = std::max(1u, std::thread::hardware_concurrency());
    const int total = options.threads > 0 ? options.threads : static_cast<int>(hardwareThreads);
    // --gpu-memory has one limit per entry of --device: each replica takes its group's limits
    // (all of them when every replica shares the one device).
    const auto entries = deviceList(options.device).size();
    const auto per = entries == 1 ? std::size_t(1) : entries / groups.size();
    const bool splitLimits = entries > 1 && options.deviceMemory.size() == entries;
    std::vector<LoadOptions> out;
    for (std::size_t r = 0; r < groups.size(); ++r) {
        LoadOptions o = options;
        o.device = groups[r];
        if (splitLimits)
            o.deviceMemory.assign(options.deviceMemory.begin() + static_cast<std::ptrdiff_t>(r * per),
                                  options.deviceMemory.begin() + static_cast<std::ptrdiff_t>((r + 1) * per));
        if (onCpu(groups[r]) && options.threads >= 0) o.threads = std::max(1, total / static_cast<int>(cpuReplicas));
        out.push_back(o);
    }
    return out;
}

ResultsFile runEvaluation(const std::vector<Engine*>& replicas, const std::vector<PromptSetEntry>& entries,
                          const EvalSettings& settings, const ResultsShard& shard, const EvalCallbacks& callbacks,
                          const std::atomic<bool>* cancel, const ResultsFile* resume) {
    return EvalRun(replicas, entries, settings, shard, callbacks, cancel, resume).run();
}

}  // namespace draftscope
