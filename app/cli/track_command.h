#pragma once
// `draftscope-cli track`: every checkpoint of a training run evaluated on one prompt set, one
// results file per checkpoint and a run index (draftscope/training_run.h, docs/TRACK.md).

#include "cli/cli_args.h"
#include "draftscope/training_run.h"

#include <atomic>
#include <string>
#include <vector>

namespace draftscope {

/// The command line of `track`.
struct TrackArgs {
    std::string runDir;
    std::string targetDir;
    std::string promptsPath;
    std::string jsonOut;      ///< --json: the run index's summary
    LoadOptions load;
    TrackSettings settings;   ///< outDir empty: <runDir>/draftscope-track
    int replicas = 1;
};

/// Runs the tracking; returns the exit code: 0 every checkpoint evaluated (or watching ended
/// by Ctrl-C after the last one finished), 1 some checkpoint failed, 130 interrupted inside a
/// checkpoint (the finished ones and the interrupted one's finished prompts are kept).
/// Throws Error on bad input before any work.
int trackCommand(const TrackArgs& args, const std::atomic<bool>* cancel);

/// One line per checkpoint: step, layout, tau, teacher-forced expected acceptance, gap,
/// DDTree taus, time; or its status and error.
void printCheckpointLine(std::ostream& out, const TrackedCheckpoint& c);
/// The series: a table of every checkpoint, the best one, the trainer log, the findings.
void printTrackSummary(std::ostream& out, const TrackIndex& index);

namespace cli {

/// Options of the track subcommand.
struct TrackCommand {
    CLI::App* command = nullptr;
    TrackArgs args;
    std::string turns = "first";
    std::string shard;
    bool noThinking = false;
    LoopArgs loop;
    TreeBudgetArgs budgets;
    DeviceArgs device;

    void add(CLI::App& app);
    int run(const std::atomic<bool>& cancel) const;
};

}  // namespace cli

}  // namespace draftscope
