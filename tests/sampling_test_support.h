#pragma once
// Test helper for the lossless property (DFLASH.md section 10): tokens a sampled loop produced
// after a fixed prefix, tested against the target's own softmax(logits / T) by chi-square
// (tst_dflash2, tst_dspark).

#include "draftscope/engine.h"
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace testsupport {

/// A chi-square fit and the critical value at p = 1e-4 (a correct sampler fails 1 run in 10,000).
struct ChiSquareFit {
    double chi2 = 0, critical = 0;
    int df = 0, n = 0;
    std::string describe() const {
        char b[160];
        std::snprintf(b, sizeof b, "chi2 %.2f on %d df (critical %.2f) over %d draws", chi2, df, critical, n);
        return b;
    }
};

/// Fits `observed` (token -> count) to the target's next-token distribution after `prefix` at
/// temperature T. Bins: tokens with expected count >= 10, and one bin for all others (if its
/// expected count is >= 5). Critical value by Wilson-Hilferty.
inline ChiSquareFit chiSquareAgainstTarget(draftscope::Engine& engine, const std::vector<std::int64_t>& prefix,
                                           double temperature, const std::map<std::int64_t, int>& observed) {
    const auto f = engine.forward(idsPrompt(prefix));
    const auto V = static_cast<std::size_t>(f.vocabSize);
    std::vector<double> p(V);
    const float* last = f.logits.data() + (prefix.size() - 1) * V;
    const double mx = *std::max_element(last, last + V);
    double z = 0;
    for (std::size_t t = 0; t < V; ++t) z += p[t] = std::exp((last[t] - mx) / temperature);
    for (auto& v : p) v /= z;
    ChiSquareFit fit;
    for (const auto& [_, c] : observed) fit.n += c;
    double restP = 0;
    int bins = 0, restN = 0;
    for (std::size_t t = 0; t < V; ++t) {
        const auto it = observed.find(static_cast<std::int64_t>(t));
        const int o = it == observed.end() ? 0 : it->second;
        if (p[t] * fit.n >= 10) {
            fit.chi2 += std::pow(o - p[t] * fit.n, 2) / (p[t] * fit.n);
            ++bins;
        } else {
            restP += p[t];
            restN += o;
        }
    }
    if (restP * fit.n >= 5) {
        fit.chi2 += std::pow(restN - restP * fit.n, 2) / (restP * fit.n);
        ++bins;
    }
    fit.df = bins - 1;
    const double zq = 3.719, a = 2.0 / (9.0 * std::max(fit.df, 1));
    fit.critical = fit.df * std::pow(1 - a + zq * std::sqrt(a), 3);
    return fit;
}

}  // namespace testsupport
