#include "draftscope/target_comparison.h"

#include "draftscope/errors.h"

#include <algorithm>
#include <cmath>

namespace draftscope {

TargetLoadComparison compareTargetForwards(const ForwardResult& a, const ForwardResult& b) {
    if (a.ids != b.ids)
        throw Error("the two loads tokenized the prompt differently (" + std::to_string(a.ids.size()) + " vs " +
                    std::to_string(b.ids.size()) + " tokens): give --prompt-ids, or targets with the same tokenizer");
    auto same = [](const char* what, std::int64_t x, std::int64_t y) {
        if (x != y)
            throw Error(std::string("the two targets differ in ") + what + ": " + std::to_string(x) + " vs " +
                        std::to_string(y) + "; only loads of the same model can be compared");
    };
    same("layer count", a.numLayers, b.numLayers);
    same("hidden size", a.hiddenSize, b.hiddenSize);
    same("vocabulary size", a.vocabSize, b.vocabSize);
    const auto T = static_cast<std::int64_t>(a.ids.size()), H = a.hiddenSize, V = a.vocabSize, L = a.numLayers;
    if (static_cast<std::int64_t>(a.hiddenStates.size()) != (L + 1) * T * H ||
        static_cast<std::int64_t>(b.hiddenStates.size()) != (L + 1) * T * H)
        throw Error("hidden states of unexpected size (expected [L+1, T, H])");
    TargetLoadComparison r;
    r.ids = a.ids;
    for (std::int64_t l = 0; l <= L; ++l) {
        LayerDifference d;
        d.index = l;
        double scale = 0, cosSum = 0;
        d.minCosine = 1;
        for (std::int64_t t = 0; t < T; ++t) {
            const float* x = a.hiddenStates.data() + (l * T + t) * H;
            const float* y = b.hiddenStates.data() + (l * T + t) * H;
            double dot = 0, nx = 0, ny = 0;
            for (std::int64_t h = 0; h < H; ++h) {
                d.maxAbs = std::max(d.maxAbs, static_cast<double>(std::fabs(x[h] - y[h])));
                scale = std::max(scale, static_cast<double>(std::fabs(y[h])));
                dot += static_cast<double>(x[h]) * y[h];
                nx += static_cast<double>(x[h]) * x[h];
                ny += static_cast<double>(y[h]) * y[h];
            }
            const double c = nx > 0 && ny > 0 ? dot / std::sqrt(nx * ny) : (nx == ny ? 1.0 : 0.0);
            d.cosine.push_back(c);
            d.minCosine = std::min(d.minCosine, c);
            cosSum += c;
        }
        d.meanCosine = T ? cosSum / static_cast<double>(T) : 1.0;
        d.relativeMaxAbs = scale > 0 ? d.maxAbs / scale : 0.0;
        r.layers.push_back(std::move(d));
    }
    if (static_cast<std::int64_t>(a.logits.size()) == T * V && static_cast<std::int64_t>(b.logits.size()) == T * V) {
        std::int64_t agree = 0;
        for (std::int64_t t = 0; t < T; ++t) {
            const float* x = a.logits.data() + t * V;
            const float* y = b.logits.data() + t * V;
            for (std::int64_t v = 0; v < V; ++v) r.logitsMaxAbs = std::max(r.logitsMaxAbs, static_cast<double>(std::fabs(x[v] - y[v])));
            r.argmaxA.push_back(std::max_element(x, x + V) - x);
            r.argmaxB.push_back(std::max_element(y, y + V) - y);
            agree += r.argmaxA.back() == r.argmaxB.back();
        }
        r.argmaxAgreement = T ? static_cast<double>(agree) / static_cast<double>(T) : 1.0;
    }
    return r;
}

}  // namespace draftscope
