#pragma once
// Results files: everything an evaluation over a prompt set produced, in one safetensors
// file that the GUI opens without models or a GPU. Format: docs/RESULTS_FORMAT.md.
// Torch-free and Qt-free (the reader and writer only need the safetensors code and JSON).

#include "draftscope/engine.h"
#include "draftscope/run_types.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace draftscope {

/// The `__metadata__` key that holds the results document, and the format version this
/// build writes (it reads every version up to it). Version 2 added the loop revision and the
/// sampling filters (settings: loop, top_p, top_k as the sampling filter, record_top_k).
inline constexpr const char* kResultsMetadataKey = "draftscope_results";
inline constexpr int kResultsFormatVersion = 2;

/// A model an evaluation ran with: its summary and the identity of its checkpoint.
struct ResultsModel {
    ModelSummary summary;        ///< directory (absolute), architecture, sizes, parameters ...
    std::string configSha256;    ///< SHA-256 of the directory's config.json (hex)
};

/// The settings of an evaluation (same for every prompt).
struct EvalSettings {
    RunSettings run;                 ///< max new tokens, ignore EOS, temperature, seed, top-k (drafter unused)
    std::vector<int> ddtreeBudgets;  ///< DDTree budgets run per prompt and drafter (may be empty)
    bool allTurns = false;           ///< false: first user turn of chat prompts only; true: every turn
    bool chatWrapRaw = false;        ///< raw `prompt` texts were wrapped as one ChatML user turn
    bool thinking = true;            ///< false: Qwen3's empty think block after the generation prompt
    std::int64_t limit = 0;          ///< prompts taken from the set (0 = all)
    int histogramBins = 60;          ///< bins of the hidden-state histograms
    std::string device, dtype;       ///< where the models ran
};

/// What one drafter produced on one prompt.
struct DrafterPromptResult {
    RunResult run;                        ///< the DFlash (chain) run
    std::vector<TreeRunResult> trees;     ///< one DDTree run per EvalSettings::ddtreeBudgets entry, same order
    HiddenStateStats hiddenStats;         ///< statistics of the prompt for this drafter's tapped layers
    std::string hiddenStatsError;         ///< why hiddenStats is empty, if it failed (the run stands)
};

/// Which part of a prompt set an evaluation ran (`eval --shard I/N`). The items are the
/// prompt-set lines taken after --limit, 0-based k; line k belongs to shard k mod N, with all
/// of its turns (a later turn needs the earlier answers). {0, 1} is the whole set.
struct ResultsShard {
    int index = 0;  ///< I, 0 <= I < count
    int count = 1;  ///< N >= 1
    bool operator==(const ResultsShard&) const = default;
};

/// One evaluated prompt (one user turn of a prompt-set line).
struct PromptResult {
    std::string id;               ///< the line's id, with "#turnN" (1-based) for turns after the first
    std::string sourceId;         ///< the prompt-set line's id
    int line = 0;                 ///< 1-based line in the prompt set
    int turn = 0;                 ///< 0-based user turn
    /// 0-based position in the item order of the whole (unsharded) set: every turn of the
    /// lines taken after --limit, line by line (plannedItems order); -1 when not recorded
    /// (files written before sharding).
    std::int64_t index = -1;
    PromptSpec prompt;            ///< what the engine ran (rendered ChatML for later turns)
    std::string error;            ///< non-empty: this prompt failed (e.g. too long); `drafters` is empty
    std::vector<DrafterPromptResult> drafters;  ///< one per ResultsFile::drafters entry, same order
};

/// A whole results file.
struct ResultsFile {
    int version = kResultsFormatVersion;
    std::string producer;            ///< e.g. "draftscope-cli eval 0.1.0"
    std::string createdUtc;          ///< ISO 8601, e.g. "2025-01-31T12:00:00Z"
    bool complete = true;            ///< false: interrupted, `prompts` holds the finished ones
    std::string promptSetPath;
    std::string promptSetSha256;
    std::int64_t promptSetLines = 0; ///< prompts in the set (before --limit)
    ResultsShard shard;              ///< the part of the set this file holds ({0, 1}: all)
    ResultsModel target;
    std::vector<ResultsModel> drafters;
    EvalSettings settings;
    std::vector<PromptResult> prompts;
    /// Display piece (Tokenizer::tokenPiece) of every token id any run mentions: outputs,
    /// anchors, drafts, target tokens, top-k ids, tree nodes and choices.
    std::map<std::int64_t, std::string> tokenPieces;

    /// The piece of `id`, or "#id" if unknown (a file written without a tokenizer).
    std::string pieceOf(std::int64_t id) const;
};

/// Writes `results` to `path` atomically (temporary file + rename): a safetensors file whose
/// `__metadata__["draftscope_results"]` is the JSON document and whose tensors hold its large
/// numeric arrays. Throws Error naming `path` on I/O failure.
void writeResultsFile(const std::string& path, const ResultsFile& results);

/// Reads a results file. Throws Error naming `path` for an unreadable or truncated file,
/// a file that is not safetensors, a safetensors file without draftscope results ("not a
/// draftscope results file: ..."), a newer format version ("written by format version N,
/// this build reads 1"), or a damaged document (the message names the field).
ResultsFile readResultsFile(const std::string& path);

}  // namespace draftscope
