#pragma once
// Lossless speculative rejection sampling (DFLASH.md section 10; Leviathan et al. 2023,
// Chen et al. 2023; as vLLM and SGLang): the accept/resample rule of the current DFlash
// loop at temperature > 0, torch-free so that it can be checked on hand-made p and q.
// Distributions are flat row-major float arrays of V probabilities per row (each row sums
// to 1 up to rounding); sums run in double.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace draftscope {

/// Outcome of verifying one block of drafted tokens by rejection sampling.
struct RejectionVerdict {
    int acceptedCount = 0;       ///< leading drafted tokens accepted (0..D)
    std::int64_t nextToken = 0;  ///< resampled token at the first rejection, else the bonus token drawn from p
    std::vector<int> tested;     ///< [D] per drafted token: 1 accepted, 0 rejected, -1 not tested (after a rejection)
};

/// sum_x min(p(x), q(x)) over V entries: the probability that a token drawn from q passes
/// the test against p (the expected acceptance of that position).
inline double acceptanceProbability(const float* p, const float* q, std::size_t V) {
    double s = 0;
    for (std::size_t x = 0; x < V; ++x) s += std::min(static_cast<double>(p[x]), static_cast<double>(q[x]));
    return s;
}

/// normalize(max(p - q, 0)) over V entries, the distribution a rejected position is
/// resampled from; p itself when max(p - q, 0) is all zero (p == q).
inline std::vector<double> residualDistribution(const float* p, const float* q, std::size_t V) {
    std::vector<double> r(V);
    double sum = 0;
    for (std::size_t x = 0; x < V; ++x) sum += r[x] = std::max(static_cast<double>(p[x]) - static_cast<double>(q[x]), 0.0);
    if (!(sum > 0)) {
        sum = 0;
        for (std::size_t x = 0; x < V; ++x) sum += r[x] = p[x];
    }
    for (auto& v : r) v /= sum;
    return r;
}

/// Index drawn from non-negative weights `w` (not necessarily normalised) by inverse CDF with
/// u in [0, 1): the first index whose cumulative weight exceeds u * total. Zero-weight
/// entries are never returned; rounding at the top end falls on the last positive entry.
inline std::int64_t sampleIndex(const std::vector<double>& w, double u) {
    double total = 0;
    for (double v : w) total += v;
    const double target = u * total;
    double c = 0;
    std::int64_t last = -1;
    for (std::size_t i = 0; i < w.size(); ++i) {
        if (w[i] <= 0) continue;
        last = static_cast<std::int64_t>(i);
        c += w[i];
        if (target < c) return last;
    }
    return last;
}

/// The rule of section 10 for one block of D drafted tokens: drafted[i] was drawn from row i
/// of q ([D, V]); p ([D+1, V]) row i is the target's distribution for the same position
/// (row D: the position after the last drafted token). For i = 0.. accept drafted[i] while
/// u_i * q_i(x_i) < p_i(x_i) (u_i = uniform()); at the first rejection draw the next token
/// from residualDistribution(p_i, q_i); if all D are accepted draw the bonus token from p_D.
/// Draw order: u_0, u_1, ... (one per tested token), then one uniform for the next token.
/// The output then follows p exactly (lossless). p and q must be filtered and tempered alike.
inline RejectionVerdict verifyByRejection(const std::vector<std::int64_t>& drafted, const float* p, const float* q,
                                          std::size_t V, const std::function<double()>& uniform) {
    RejectionVerdict v;
    const std::size_t D = drafted.size();
    v.tested.assign(D, -1);
    std::size_t i = 0;
    for (; i < D; ++i) {
        const auto x = static_cast<std::size_t>(drafted[i]);
        const double u = uniform();
        const bool ok = u * static_cast<double>(q[i * V + x]) < static_cast<double>(p[i * V + x]);
        v.tested[i] = ok ? 1 : 0;
        if (!ok) break;
    }
    v.acceptedCount = static_cast<int>(i);
    std::vector<double> next;
    if (i < D) {
        next = residualDistribution(p + i * V, q + i * V, V);
    } else {
        next.assign(p + D * V, p + (D + 1) * V);
    }
    v.nextToken = sampleIndex(next, uniform());
    return v;
}

}  // namespace draftscope
