#pragma once
// DSpark's sequential proposal (docs/ENGINE.md "DSpark"; vLLM v1/spec_decode/dspark_sampling.py
// sample_dspark_markov_block, speculators models/dspark/core.py for the slot layout).

#include "draftscope/run_types.h"
#include "models/dflash_drafter.h"

#include <ATen/ATen.h>

namespace draftscope {

/// What the Markov walk drafted for one block (D slots).
struct MarkovChoice {
    at::Tensor path;        ///< int64 [D]: the drafted target ids, on the logits' device
    at::Tensor logits;      ///< float32 [D, V]: the slots' logits with the Markov bias added (what was drafted from)
    at::Tensor q;           ///< float32 [D, V] on the host: samplingProbs of `logits` at T > 0; undefined at T = 0
    at::Tensor confidence;  ///< float32 [D]: the confidence head's acceptance probability; undefined without one
};

/// Walks a DSpark block left to right: slot j's logits are `logits[j]` (the drafter's, [D, V]
/// float32 over target ids) + DFlashDrafter::markovBias(W1[prev_j]), with prev_0 = `anchor` and
/// prev_{j+1} the token drafted at slot j; at T = 0 (or `sample` false) the argmax is drafted,
/// else one token is drawn from samplingProbs (temperature, top-k, top-p: vLLM applies the
/// request's filters to the draft too) with `gen`, and that distribution is slot j's q.
/// The confidence head reads `hidden` [D, H] (the drafting rows) and the same W1[prev_j].
/// Without a Markov head the logits are used as they are (markov_rank 0).
MarkovChoice markovWalk(const DFlashDrafter& drafter, const at::Tensor& hidden, const at::Tensor& logits,
                        std::int64_t anchor, const RunSettings& settings, bool sample, at::Generator& gen);

}  // namespace draftscope
