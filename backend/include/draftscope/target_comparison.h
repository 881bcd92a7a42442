#pragma once
// The same target loaded two ways (text-only vs vision-language layout, float32 vs
// bfloat16, CPU vs CUDA): per-layer hidden-state differences on one prompt. Exposes a
// target loaded through the wrong class or with the wrong kernels (DFLASH.md section 7).
// Torch-free.

#include "draftscope/run_types.h"

#include <string>
#include <vector>

namespace draftscope {

/// Differences of one hidden state (HF index: 0 = embeddings, L = after the final norm).
struct LayerDifference {
    std::int64_t index = 0;
    double maxAbs = 0;                  ///< max |a - b| over positions and channels
    double relativeMaxAbs = 0;          ///< maxAbs / max |b|
    std::vector<double> cosine;         ///< [T] cos(a_t, b_t) per position
    double minCosine = 1, meanCosine = 1;
};

/// Load A against load B on the same token ids.
struct TargetLoadComparison {
    std::vector<std::int64_t> ids;
    std::vector<LayerDifference> layers;  ///< L+1 entries
    double logitsMaxAbs = 0;
    double argmaxAgreement = 1;           ///< fraction of positions whose argmax token agrees
    std::vector<std::int64_t> argmaxA, argmaxB;
};

/// Compares two forwards of the same ids (Engine::forward). Throws Error naming what
/// differs when the ids, layer count, hidden size or vocabulary size differ.
TargetLoadComparison compareTargetForwards(const ForwardResult& a, const ForwardResult& b);

}  // namespace draftscope
