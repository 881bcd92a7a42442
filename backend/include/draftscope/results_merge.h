#pragma once
// Merging the shard files of one evaluation (`eval --shard I/N`) into the file the unsharded
// run writes (docs/RESULTS_FORMAT.md, "Shards"). Used by `draftscope-cli merge`; torch-free
// and Qt-free, so the GUI can merge too.

#include "draftscope/results_file.h"

#include <string>
#include <vector>

namespace draftscope {

/// One input of mergeResults: a results file and the name its errors use (its path).
struct NamedResults {
    std::string name;
    ResultsFile results;
};

/// Merges shards 0..N-1 of one evaluation: prompts of every file in `index` order,
/// tokenPieces united, shard {0, 1}, complete true, createdUtc now; producer and the
/// prompt-set path are the first file's (the caller sets its own producer). Equal to the
/// unsharded file: prompt-set sha256 and line count, target, drafters, settings,
/// tokenPieces, prompts. Throws Error naming the file and the field, expected (as the
/// first file) vs found, for: no files; an interrupted file; a prompt without a recorded
/// index; a different prompt set (sha256, lines), target or drafter (count, config_sha256,
/// every summary field but the directory), settings field or shard count; a shard given
/// twice; a prompt index in two files; a missing shard; a token piece that differs.
ResultsFile mergeResults(const std::vector<NamedResults>& parts);

/// Reads every file of `paths` (readResultsFile: a non-results, damaged or truncated file is
/// refused naming it), refuses a file given twice (the same file under any spelling), and
/// merges them (mergeResults, each named by its path).
ResultsFile mergeResultsFiles(const std::vector<std::string>& paths);

}  // namespace draftscope
