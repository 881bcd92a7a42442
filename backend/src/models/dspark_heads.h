#pragma once
// The two heads DSpark adds to a DFlash drafter (DFLASH.md section 12; references:
// vllm-project/speculators src/speculators/models/dspark/model_definitions.py MarkovHead and
// ConfidenceHead, core.py DSparkDraftModel.forward; vLLM model_executor/models/qwen3_dspark.py
// DSparkMarkovHead / DSparkConfidenceHead and v1/spec_decode/dspark_sampling.py for the walk;
// docs/ENGINE.md "DSpark").

#include "models/layers.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace draftscope {

/// DSpark's vanilla (first-order) Markov logit bias, low rank r: for the previous block token
/// t (a *target* vocabulary id), bias(t) = W2 W1[t] over the draft vocabulary, added to the
/// slot's drafter logits. `markov_w1` is an embedding [V, r] (V = the target's vocabulary),
/// `markov_w2` a bias-free linear [V_d, r] (V_d = draft_vocab_size).
class MarkovHead {
public:
    /// Loads `markov_head.markov_w1.weight` and `markov_head.markov_w2.weight`.
    explicit MarkovHead(const LoadTarget& lt);
    /// Their expected shapes: [vocab, rank] and [draftVocab, rank].
    static void specs(std::vector<TensorSpec>& out, std::int64_t vocab, std::int64_t draftVocab, std::int64_t rank);

    /// W1 rows of `prev` (int64 [n], target ids on the head's device): [n, r], compute dtype.
    at::Tensor embed(const at::Tensor& prev) const;
    /// W2 e: the draft-vocabulary bias [n, V_d] float32 for Markov embeddings `e` [n, r]
    /// (computed in the compute dtype, as the reference's linear, then widened).
    at::Tensor bias(const at::Tensor& e) const;
    std::int64_t rank() const { return w1_.size(1); }

private:
    at::Tensor w1_, w2_;
};

/// DSpark's confidence head: sigmoid(w . f + b) per slot, with f = [z; W1[prev]] (the drafter's
/// output row and the slot's Markov embedding; `confidence_head_with_markov`) or f = z. Trained
/// against the slot's acceptance probability (speculators metrics: 1 - TV between the draft and
/// target distributions), so a calibrated head predicts how often the slot is accepted given
/// that its prefix was. vLLM keeps the projection in float32 and widens f first; so does this.
class ConfidenceHead {
public:
    /// Loads `confidence_head.proj.weight` [1, in] and `confidence_head.proj.bias` [1].
    ConfidenceHead(const LoadTarget& lt, bool withMarkov);
    /// Their expected shapes for hidden size H and Markov rank r (0 without the Markov input).
    static void specs(std::vector<TensorSpec>& out, std::int64_t hidden, std::int64_t markovInput);

    /// The predicted acceptance probability of each slot: float32 [n] for drafter rows `z`
    /// [n, H] and Markov embeddings `e` [n, r] (ignored without the Markov input).
    at::Tensor probability(const at::Tensor& z, const at::Tensor& e) const;
    bool withMarkov() const { return withMarkov_; }

private:
    at::Tensor weight_, bias_;  ///< float32
    bool withMarkov_ = true;
};

}  // namespace draftscope
