#include "draftscope/confidence_calibration.h"

#include <algorithm>
#include <cmath>

namespace draftscope {

ConfidenceCalibration confidenceCalibration(const RunResult& run, int bins) {
    ConfidenceCalibration c;
    bins = std::max(bins, 1);
    for (const auto& step : run.steps) c.available = c.available || !step.confidence.empty();
    if (!c.available) return c;
    c.temperature = run.settings.temperature;
    c.bins.resize(static_cast<std::size_t>(bins));
    for (int b = 0; b < bins; ++b) {
        c.bins[static_cast<std::size_t>(b)].lower = static_cast<double>(b) / bins;
        c.bins[static_cast<std::size_t>(b)].upper = static_cast<double>(b + 1) / bins;
    }
    std::vector<double> confSum(c.bins.size(), 0), accSum(c.bins.size(), 0);
    double brier = 0, confAll = 0, accAll = 0;
    for (const auto& step : run.steps) {
        const bool sampled = !step.rejectionTested.empty();
        const auto n = std::min(step.confidence.size(), step.drafted.size());
        for (std::size_t j = 0; j < n; ++j) {
            bool accepted = false;
            if (sampled) {
                if (j >= step.rejectionTested.size() || step.rejectionTested[j] < 0) break;  // not tested
                accepted = step.rejectionTested[j] == 1;
            } else {
                if (j >= step.targetTokens.size()) break;
                accepted = step.drafted[j] == step.targetTokens[j];
            }
            if (!std::isfinite(step.confidence[j])) break;  // a NaN head output says nothing: the step is skipped from here
            const double p = std::clamp(static_cast<double>(step.confidence[j]), 0.0, 1.0);
            const auto b = std::min(static_cast<std::size_t>(p * bins), c.bins.size() - 1);
            ++c.bins[b].tested;
            confSum[b] += p;
            accSum[b] += accepted;
            brier += (p - accepted) * (p - accepted);
            confAll += p;
            accAll += accepted;
            ++c.tested;
            if (!accepted) break;  // the slots after the first rejection were not tested
        }
    }
    for (std::size_t b = 0; b < c.bins.size(); ++b) {
        auto& bin = c.bins[b];
        if (!bin.tested) continue;
        bin.meanConfidence = confSum[b] / bin.tested;
        bin.acceptedRate = accSum[b] / bin.tested;
        c.ece += static_cast<double>(bin.tested) * std::abs(bin.meanConfidence - bin.acceptedRate);
    }
    if (c.tested) {
        c.ece /= c.tested;
        c.brier = brier / c.tested;
        c.meanConfidence = confAll / c.tested;
        c.acceptedRate = accAll / c.tested;
    }
    return c;
}

}  // namespace draftscope
