#include "draftscope/probe_statistics.h"

#include "draftscope/errors.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace draftscope {

namespace {
/// The token at `pos` of the sequence, or -1 past its end (never a token id).
std::int64_t tokenAt(const TeacherForcedDrafts& p, std::size_t pos) {
    return pos < p.sequence.size() ? p.sequence[pos] : -1;
}
}  // namespace

std::vector<double> perAnchorAcceptance(const TeacherForcedDrafts& p, int labelShift) {
    std::vector<double> out;
    out.reserve(p.anchors.size());
    for (std::size_t i = 0; i < p.anchors.size(); ++i) {
        const auto a = static_cast<std::size_t>(p.anchors[i]);
        const auto& d = p.drafts[i];
        std::size_t lead = 0;
        while (lead < d.size() && d[lead] == tokenAt(p, a + 1 + lead + static_cast<std::size_t>(labelShift))) ++lead;
        out.push_back(1.0 + static_cast<double>(lead));
    }
    return out;
}

std::vector<double> perAnchorExpectedAcceptance(const TeacherForcedDrafts& p, int labelShift) {
    if (labelShift < 0 || labelShift > 1)
        throw Error("expected acceptance: label shift " + std::to_string(labelShift) + ", expected 0 or 1");
    const auto& probs = p.sequenceProbs[labelShift];
    if (probs.size() != p.anchors.size())
        throw Error("expected acceptance: " + std::to_string(probs.size()) + " probability rows for " +
                    std::to_string(p.anchors.size()) + " anchors");
    std::vector<double> out;
    out.reserve(probs.size());
    for (const auto& row : probs) {
        double sum = 1.0, run = 1.0;
        for (float q : row) {
            run *= static_cast<double>(q);
            sum += run;
        }
        out.push_back(sum);
    }
    return out;
}

std::vector<double> slotMatchRates(const std::vector<TeacherForcedDrafts>& probes, int labelShift) {
    if (probes.empty()) return {};
    const auto D = static_cast<std::size_t>(std::max<std::int64_t>(probes.front().blockSize - 1, 0));
    std::vector<double> hits(D, 0), n(D, 0);
    for (const auto& p : probes)
        for (std::size_t i = 0; i < p.anchors.size(); ++i) {
            const auto a = static_cast<std::size_t>(p.anchors[i]);
            for (std::size_t j = 0; j < D && j < p.drafts[i].size(); ++j) {
                const auto pos = a + 1 + j + static_cast<std::size_t>(labelShift);
                if (pos >= p.sequence.size()) continue;
                hits[j] += p.drafts[i][j] == p.sequence[pos];
                n[j] += 1;
            }
        }
    for (std::size_t j = 0; j < D; ++j) hits[j] = n[j] > 0 ? hits[j] / n[j] : 0.0;
    return hits;
}

PairedInterval pairedBootstrap(const std::vector<double>& declared, const std::vector<double>& alternative,
                               int resamples, double confidence, std::uint64_t seed) {
    if (declared.size() != alternative.size())
        throw Error("paired bootstrap: " + std::to_string(declared.size()) + " declared values but " +
                    std::to_string(alternative.size()) + " alternative values");
    if (declared.empty()) throw Error("paired bootstrap: no pairs");
    if (resamples < 1) throw Error("paired bootstrap: resamples must be >= 1, got " + std::to_string(resamples));
    if (!(confidence > 0 && confidence < 1))
        throw Error("paired bootstrap: confidence must lie in (0, 1), got " + std::to_string(confidence));
    const auto n = declared.size();
    std::vector<double> diff(n);
    for (std::size_t i = 0; i < n; ++i) diff[i] = alternative[i] - declared[i];
    PairedInterval r;
    r.pairs = static_cast<std::int64_t>(n);
    r.mean = std::accumulate(diff.begin(), diff.end(), 0.0) / static_cast<double>(n);
    std::uint64_t state = seed;
    auto next = [&state]() {  // splitmix64
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    };
    std::vector<double> means(static_cast<std::size_t>(resamples));
    for (auto& m : means) {
        double sum = 0;
        for (std::size_t k = 0; k < n; ++k) sum += diff[next() % n];
        m = sum / static_cast<double>(n);
    }
    std::sort(means.begin(), means.end());
    const auto t = static_cast<std::size_t>(std::llround((1.0 - confidence) / 2.0 * resamples));
    const auto hi = means.size() - 1 - std::min(t, means.size() - 1);
    r.lower = means[std::min(t, hi)];
    r.upper = means[hi];
    return r;
}

}  // namespace draftscope
