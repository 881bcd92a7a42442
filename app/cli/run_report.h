#pragma once
// Human-readable terminal report of a DFlash run: one block per verify step showing the
// drafted pieces against the target's, where the accepted prefix ends, then the summary.

#include "draftscope/run_types.h"

#include <ostream>

namespace draftscope {

class Tokenizer;

/// Options of the step table.
struct ReportOptions {
    int maxPiecesAfterCut = 4;  ///< drafted positions shown after the first rejection
    bool color = false;         ///< ANSI colours (accepted green, rejected red)
};

/// Prints the per-step table of `run` to `out`. `tok` may be null (ids are shown).
void printRunReport(std::ostream& out, const RunResult& run, const Tokenizer* tok, const ReportOptions& opt);
/// Prints tau, the acceptance-length histogram and the per-position acceptance rates.
void printRunSummary(std::ostream& out, const RunResult& run);
/// A token as a short quoted display string (newlines and tabs escaped).
std::string displayPiece(const Tokenizer* tok, std::int64_t id);

}  // namespace draftscope
