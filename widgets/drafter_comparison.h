#pragma once
// Drafter A against drafter B on the same target and prompt: which drafter accepted each
// output position, which grid cells differ, and how steps of the two runs map onto each
// other. Pure functions over the engine's plain result structs (no widgets).
//
// Greedy A and B produce the same output (speculative decoding is lossless) but different
// verify steps. Position p is *decided* in a run by the step that committed it
// (start < p <= start + acc + 1): there the drafter's token at p was accepted
// (p - start <= acc), or rejected / never drafted (the bonus position p = start + acc + 1).

#include "draftscope/run_types.h"

#include <QColor>
#include <QString>

#include <vector>

namespace draftscope {

/// What the step that committed one output position did with it.
struct DecidingDraft {
    int step = -1;                 ///< verify step that committed the position, -1 for prompt / first anchor
    int blockPosition = -1;        ///< position - start of that step (1..B)
    std::int64_t drafted = -1;     ///< the drafter's token there, -1 if none (block position B)
    bool accepted = false;         ///< the drafted token was accepted (else the position is that step's bonus)
};

/// One entry per output position of `run` (prompt + generated).
std::vector<DecidingDraft> decidingDrafts(const RunResult& run);

/// Which drafter's draft was accepted at an output position.
enum class AcceptedBy {
    Prompt,   ///< prompt token, or the first anchor (committed by the prefill)
    Both,     ///< accepted from A's draft and from B's draft
    AOnly,    ///< accepted from A's draft; a bonus token in B's run
    BOnly,    ///< accepted from B's draft; a bonus token in A's run
    Neither,  ///< a bonus (target) token in both runs
};

/// Per output position of `a` (positions past the end of `b` count as not accepted by B).
std::vector<AcceptedBy> acceptedBy(const RunResult& a, const RunResult& b);
QColor colorOf(AcceptedBy origin);
/// "prompt", "A and B", "A only", "B only", "neither (bonus)".
QString nameOf(AcceptedBy origin);

/// Where step `step` of `run` and the other run part from the same anchor: when `other` has a
/// step with the same start and the same committed tokens up to and including its anchor
/// (outputIds[0..start]), and the two accepted different counts acc != acc', the block
/// position min(acc, acc') + 1 (the first the one drafter got right and the other wrong);
/// else 0. Given the same input, this is where the drafters' decisions differ in effect,
/// so it marks at most one cell per shared anchor (steps that start elsewhere never match:
/// their inputs differ).
int partingPosition(const RunResult& run, const RunResult& other, int step);

/// True if cell (step, blockPosition) of `run`'s grid is partingPosition(run, other, step).
bool cellDiffers(const RunResult& run, const RunResult& other, int step, int blockPosition);

/// The step of `run` whose block covers absolute `position` (start <= position <
/// start + acceptance length); the last step before it if none does; -1 for no steps.
int chainStepCovering(const RunResult& run, std::int64_t position);

/// Short display names of two drafter directories: their last path components, or the last
/// two when those are equal (".../step20000/dflash" vs ".../step40000/dflash").
std::pair<QString, QString> drafterNames(const QString& dirA, const QString& dirB);

/// Colours of drafter A and B in every overlaid figure.
QColor drafterColor(int which);  // 0 = A (blue), 1 = B (orange)

}  // namespace draftscope
