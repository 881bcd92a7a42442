#pragma once
// How well a DSpark drafter's confidence head predicts acceptance (docs/ENGINE.md "DSpark"):
// a reliability diagram over the slots the target tested in a run. Torch-free, from
// RunResult alone (VerifyStep::confidence).

#include "draftscope/run_types.h"

#include <vector>

namespace draftscope {

/// One confidence bin [lower, upper) (the last bin includes 1).
struct CalibrationBin {
    double lower = 0, upper = 0;
    int tested = 0;               ///< tested slots whose confidence falls in the bin
    double meanConfidence = 0;    ///< their mean predicted acceptance probability
    double acceptedRate = 0;      ///< the share of them the target accepted
};

/// A run's confidence-vs-acceptance statistics; available false when the run has no
/// confidence (not a DSpark drafter with a confidence head).
struct ConfidenceCalibration {
    bool available = false;
    std::vector<CalibrationBin> bins;
    int tested = 0;      ///< tested slots in all
    double brier = 0;    ///< mean (confidence - accepted)^2 over the tested slots
    double ece = 0;      ///< expected calibration error: sum over bins of tested/total * |mean - rate|
    double meanConfidence = 0, acceptedRate = 0;
    double temperature = 0;  ///< the run's (0: greedy, acceptance is an argmax match)
};

/// The calibration of `run` over `bins` equal-width bins of [0, 1] (Error-free: bins < 1 is
/// taken as 1). A slot counts when the target tested it, i.e. every drafted token before it in
/// its step was accepted (the confidence head is trained for that case: speculators' target is
/// the slot's acceptance probability given its prefix, 1 - TV). Greedy runs: accepted when
/// the drafted token is the target's; rejection-sampled runs: VerifyStep::rejectionTested.
/// Independent of where a run's end or a stop token cut the produced tokens. A non-finite
/// confidence ends its step's count. The head is trained for sampling at T = 1 without filters:
/// in a greedy run (an argmax match) or at another temperature a calibrated head can look off;
/// the view says which regime a run is in.
ConfidenceCalibration confidenceCalibration(const RunResult& run, int bins = 10);

}  // namespace draftscope
