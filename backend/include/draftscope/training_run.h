#pragma once
// Following a training run checkpoint by checkpoint (`draftscope-cli track`, the GUI's
// Training run dock; docs/TRACK.md): finding the checkpoints a trainer wrote, evaluating each
// one on a fixed prompt set into its own results file, the run index that records every
// checkpoint's numbers, the trainer's own log, and the findings over the series
// (regressions, a widening train-vs-inference gap). Torch-free and Qt-free.

#include "draftscope/diagnosis.h"
#include "draftscope/evaluation.h"
#include "draftscope/prompt_set.h"
#include "draftscope/results_file.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace draftscope {

/// One checkpoint of a run directory.
struct RunCheckpoint {
    std::int64_t step = -1;   ///< the training step
    std::int64_t epoch = -1;  ///< SpecForge's epoch_E_step_S; -1 otherwise
    std::string path;         ///< absolute: a drafter directory, or a .pt file (config.json beside it)
    /// How the trainer wrote it: "specforge" (epoch_E_step_S/), "step" (step_S/, step-S/),
    /// "hf-trainer" (checkpoint-N/, HF Trainer and speculators), "pt" (a torch.save file).
    std::string layout;
    /// Where the step came from: "name", "trainer_state.json" (its global_step) or
    /// "checkpoint field" (a .pt's top-level step / global_step / iteration entry).
    std::string stepFrom;
    /// Sizes and modification times of the weight files and config: a checkpoint rewritten
    /// in place gets another signature and is evaluated again.
    std::string signature;
};

/// A run-directory entry that looks like a checkpoint but was not taken, and why.
struct SkippedCheckpoint {
    std::string path;
    std::string reason;
};

/// Finds the checkpoints directly inside `runDir`: directories named epoch_E_step_S,
/// step_S / step-S / stepS, checkpoint-N (step from trainer_state.json's global_step where it
/// has one), each holding a drafter (config.json and *.safetensors weights); and torch.save
/// files (*.pt, *.pth) with a config.json in `runDir`, whose step is the checkpoint's own
/// top-level step / global_step / iteration entry or else the last number in the file name.
/// Sorted by step. Entries whose newest file is younger than `settleSeconds` (a trainer may
/// still be writing them), directories without weights, files without a step, and a second
/// checkpoint claiming a step already taken (directories win over files) go to `skipped`.
/// Throws Error naming `runDir` if it is not a readable directory.
std::vector<RunCheckpoint> findRunCheckpoints(const std::string& runDir, double settleSeconds = 0,
                                              std::vector<SkippedCheckpoint>* skipped = nullptr);

/// A trainer's own metric over training steps, read from its log.
struct TrainerLog {
    std::string path;    ///< the log file
    std::string metric;  ///< the key or column plotted
    std::vector<std::pair<std::int64_t, double>> points;  ///< (step, value), step order
};

/// Reads `metric` (empty: the first key whose name contains "accept", else "acc_len", "tau",
/// "acc", in the records' order) per step from a trainer log: JSON lines (`*.jsonl`: one
/// object per line with a "step" / "global_step" / "iteration" number), CSV with a header
/// row naming a step column, or HF Trainer's trainer_state.json (`log_history`). Records
/// without the step or the metric are skipped; a later record for a step replaces an
/// earlier one. Throws Error naming the file and line for unreadable input, a CSV without a
/// step column, or a metric that no record has (listing the numeric keys found).
TrainerLog readTrainerLog(const std::string& path, const std::string& metric = {});

/// The trainer log of `runDir`: the newest checkpoint-N/trainer_state.json, else the one
/// *.jsonl or *.csv file directly inside the run directory (the first by name if several);
/// empty if none. TensorBoard event files are not read (docs/TRACK.md says why).
std::string findTrainerLog(const std::string& runDir);

/// One checkpoint's evaluation as the run index records it.
struct TrackedCheckpoint {
    RunCheckpoint checkpoint;
    /// "done", "partial" (interrupted: its results file holds the finished prompts, which a
    /// resumed run keeps) or "failed" (the drafter did not load or the evaluation threw).
    std::string status;
    std::string error;           ///< why it failed
    std::string resultsFile;     ///< the results file, relative to the index's directory
    std::string evaluatedUtc;
    double seconds = 0;          ///< wall-clock time of its evaluation
    std::vector<std::string> promptIds;  ///< the prompts that count, in results order
    double tau = 0;              ///< macro mean over prompts of the chain tau (aggregateDrafter)
    std::vector<double> promptTaus;                ///< per prompt (promptIds order)
    std::vector<double> positionAcceptance;        ///< aggregateDrafter's perPositionAcceptance [B]
    std::vector<int> treeBudgets;                  ///< EvalSettings::ddtreeBudgets
    std::vector<double> treeTaus;                  ///< per budget, macro mean
    /// Teacher-forced probe along each prompt's chain output (every anchor, the declared
    /// convention; Engine::teacherForcedDrafts): mean 1 + leading argmax matches, and the
    /// expected acceptance under the drafter's own probabilities (perAnchorExpectedAcceptance),
    /// macro means over the prompts long enough for a block. NaN-free: prompts too short count
    /// in neither.
    double teacherForcedTau = 0;
    double teacherForcedExpected = 0;
    std::vector<double> promptTeacherForcedExpected;  ///< per prompt; NaN where too short
    /// Train vs inference: teacherForcedExpected - tau (tokens per block).
    double gap = 0;
    /// With TrackSettings::probeConventions, the convention findings of diagnose run on this
    /// checkpoint (where the gap first widened).
    std::vector<Finding> conventionFindings;
};

/// A finding over the series.
struct TrackFinding {
    std::string id;          ///< "regression", "gap-widening"
    Severity severity = Severity::Warning;
    std::int64_t step = -1;      ///< the checkpoint where it shows
    std::int64_t fromStep = -1;  ///< the checkpoint it is compared with
    std::string message;
    std::vector<std::pair<std::string, double>> evidence;
    std::vector<int> positions;  ///< block positions that lost most (regressions), worst first
};

/// Paired-bootstrap rule of the series findings (docs/TRACK.md, "Findings").
inline constexpr double kTrackConfidence = 0.95;
inline constexpr int kTrackResamples = 2000;
inline constexpr std::uint64_t kTrackSeed = 20261204;
/// A tau drop between consecutive checkpoints is a regression when its mean over the prompts
/// both evaluated exceeds this many tokens per step and the upper bound of its paired
/// bootstrap interval is below 0.
inline constexpr double kRegressionMargin = 0.05;
/// The gap widens when its mean over the prompts exceeds its smallest earlier value by this
/// many tokens per block, the lower bound of the paired interval is above 0, and the gap itself
/// exceeds it (the teacher-forced expected acceptance stands above the free-running tau).
inline constexpr double kGapMargin = 0.25;

/// The run index (`track.json` in the output directory; docs/TRACK.md, "The run index").
struct TrackIndex {
    int version = 1;
    std::string runDir;
    std::string targetDir, targetConfigSha256;
    std::string promptSetPath, promptSetSha256;
    EvalSettings settings;
    ResultsShard shard;
    std::vector<TrackedCheckpoint> checkpoints;  ///< step order
    std::vector<TrackFinding> findings;          ///< trackFindings(), recomputed on every write
    std::optional<TrainerLog> trainerLog;
    std::string trainerLogNote;  ///< why no log is shown (none found, TensorBoard only, unreadable)
    std::int64_t bestStep = -1;  ///< the done checkpoint with the highest tau
    std::string updatedUtc;
};

/// Regressions and gap widening over the done checkpoints of `index`, by the rules above
/// (pairedBootstrap, probe_statistics.h), in step order.
std::vector<TrackFinding> trackFindings(const TrackIndex& index);

/// Writes `index` atomically to `path` (JSON). Throws Error naming the path.
void writeTrackIndex(const std::string& path, const TrackIndex& index);
/// Reads a run index. Throws Error naming the file and the field for a file that is not one.
TrackIndex readTrackIndex(const std::string& path);
/// The index of a track output directory (`dir/track.json`), or of a run directory that holds
/// one in its default output directory (`dir/draftscope-track/track.json`); "" if neither.
std::string trackIndexPathOf(const std::string& dir);

/// What trackRun does.
struct TrackSettings {
    EvalSettings eval;
    ResultsShard shard;
    std::string outDir;        ///< where the index and results files go (created)
    bool watch = false;        ///< keep polling for new checkpoints until cancelled
    double pollSeconds = 30;   ///< between scans with watch
    double settleSeconds = 10; ///< a checkpoint younger than this is left for the next scan
    bool probeConventions = false;  ///< run diagnose's convention probes where the gap widens
    std::string trainerLogPath;     ///< empty: findTrainerLog(runDir)
    std::string logMetric;          ///< readTrainerLog's metric
    std::string drafterConfig;      ///< config.json for .pt checkpoints (default: the run dir's)
};

/// Callbacks of trackRun (each may be empty), called on the calling thread except `progress`
/// (from the evaluation's replicas, one call at a time).
struct TrackCallbacks {
    std::function<void(const std::string&)> log;
    /// Before checkpoint `index` (0-based) of `count` still to do in this scan.
    std::function<void(const RunCheckpoint&, std::size_t index, std::size_t count)> checkpointStarted;
    std::function<void(const EvalProgress&)> progress;
    /// After each checkpoint, with the index as written.
    std::function<void(const TrackedCheckpoint&, const TrackIndex&)> checkpointDone;
};

/// The run index already in `settings.outDir`, if any, checked against this run: the same
/// target (config.json SHA-256), prompt set (SHA-256), settings (all but the device) and
/// shard. Throws Error naming the first field that differs ("settings.max_new_tokens 32,
/// this run has 16"), or for an unreadable index. trackRun applies the same check; the CLI
/// calls this before loading the target.
std::optional<TrackIndex> resumableTrackIndex(const std::string& runDir, const std::string& targetDir,
                                              const std::string& promptSetPath, const TrackSettings& settings);

/// Evaluates every checkpoint of `runDir` not yet done, in step order, on `replicas` (engines
/// with the target loaded; their drafters are replaced per checkpoint), writing
/// `outDir/step-<step>.dsresults` and `outDir/track.json` after each. Resumes from an existing
/// index: done checkpoints whose signature is unchanged are kept, a partial one continues with
/// its unfinished prompts (runEvaluation's resume). With `watch`, scans again every
/// pollSeconds until `cancel`. Returns the index as last written. Throws Error before any work
/// if the existing index was made with another target, prompt set, settings or shard (naming
/// the field, expected vs found), or the prompt set is empty; Cancelled is not thrown: a
/// cancelled run returns with the interrupted checkpoint recorded as partial.
TrackIndex trackRun(const std::vector<Engine*>& replicas, const std::string& runDir,
                    const std::vector<PromptSetEntry>& entries, const std::string& promptSetPath,
                    const TrackSettings& settings, const TrackCallbacks& callbacks = {},
                    const std::atomic<bool>* cancel = nullptr);

}  // namespace draftscope
