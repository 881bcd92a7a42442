#include "cli/merge_command.h"

#include "cli/eval_report.h"
#include "draftscope/results_merge.h"
#include "draftscope/version.h"

#include <filesystem>
#include <iostream>

namespace draftscope::cli {

void MergeCommand::add(CLI::App& app) {
    command = app.add_subcommand("merge", "combine the shard files of one eval (--shard I/N) into the results file "
                                          "the unsharded eval writes");
    command->add_option("files", inputs, "the shard files, one per shard 0..N-1, in any order")->required();
    command->add_option("--out", outPath, "merged results file to write")->required();
    command->add_option("--json", jsonOut, "also write the JSON summary, as eval --json");
}

int MergeCommand::run() const {
    std::vector<InputPath> read;
    for (const auto& f : inputs) read.push_back({"input file", f, PathKind::File});
    checkPaths(read, {{"--out", outPath}, {"--json", jsonOut}});
    ResultsFile merged = mergeResultsFiles(inputs);
    merged.producer = "draftscope-cli merge " DRAFTSCOPE_VERSION;
    writeResultsFile(outPath, merged);
    printEvalSummary(std::cout, merged);
    std::cout << std::flush;
    std::cerr << "\nwrote " << outPath << " (" << merged.prompts.size() << " prompt(s) from " << inputs.size()
              << " shard file(s), " << std::filesystem::file_size(outPath) / 1024 << " KiB)\n";
    if (!jsonOut.empty()) {
        writeJson(jsonOut, evalSummaryJson(merged, outPath));
        std::cerr << "wrote " << jsonOut << "\n";
    }
    std::size_t failed = 0;
    for (const auto& p : merged.prompts) failed += !p.error.empty();
    if (failed) std::cerr << "error: " << failed << " of " << merged.prompts.size() << " prompt(s) failed (their errors are in the results file)\n";
    return failed ? 1 : 0;
}

}  // namespace draftscope::cli
