#pragma once
// Statistics of teacher-forced probes (docs/DIAGNOSE.md, "Convention probes"): per-anchor
// acceptance and a paired bootstrap of the difference between two conventions over the
// same anchors. Torch-free, deterministic.

#include "draftscope/run_types.h"

#include <cstdint>
#include <vector>

namespace draftscope {

/// Per-anchor acceptance of teacher-forced drafts: for anchor i at position a, 1 + the
/// number of leading slots j with drafts[i][j] == sequence[a + 1 + j + labelShift] (the
/// probe's tau is their mean). A slot whose position lies past the sequence never matches.
/// [anchors]; labelShift >= 0.
std::vector<double> perAnchorAcceptance(const TeacherForcedDrafts& probe, int labelShift = 0);

/// Per-anchor expected acceptance of teacher-forced drafts under the drafter's own
/// probabilities: 1 + sum over k of prod_{j <= k} sequenceProbs[labelShift][i][j] (the
/// acceptance a drafter sampling its block at temperature 1 would reach against the
/// sequence, DFLASH.md section 10's chain without the target's resampling). A smooth
/// version of perAnchorAcceptance: paired differences of it have a lower variance.
/// [anchors]; labelShift 0 or 1. Throws Error if the probe holds no probabilities.
std::vector<double> perAnchorExpectedAcceptance(const TeacherForcedDrafts& probe, int labelShift = 0);

/// Per drafted slot j (0-based, [B-1] of the first probe's block size): the fraction of
/// anchors, pooled over `probes`, whose draft slot j equals the token at
/// a + 1 + j + labelShift, over the anchors where that position exists (0 where none).
std::vector<double> slotMatchRates(const std::vector<TeacherForcedDrafts>& probes, int labelShift = 0);

/// A bootstrap interval of the mean paired difference alternative - declared.
struct PairedInterval {
    double mean = 0;          ///< observed mean difference
    double lower = 0;         ///< lower bound of the central `confidence` interval
    double upper = 0;         ///< upper bound
    std::int64_t pairs = 0;   ///< number of pairs (anchors)
};

/// Paired bootstrap (percentile method) of mean(alternative[i] - declared[i]): `resamples`
/// resamples of the n pairs drawn with replacement, each resample's mean difference; the
/// bounds are the sorted resample means at index t and resamples-1-t, t =
/// round((1 - confidence) / 2 * resamples). The draws come from splitmix64 seeded with
/// `seed` (index = draw mod n), so the result is the same on every platform. Throws Error if
/// the sizes differ, n == 0, resamples < 1 or confidence is outside (0, 1).
PairedInterval pairedBootstrap(const std::vector<double>& declared, const std::vector<double>& alternative,
                               int resamples, double confidence, std::uint64_t seed);

}  // namespace draftscope
