#pragma once
// The two parts DFlash2 adds to a DFlash drafter (DFLASH.md section 12; reference: z-lab
// dflash/model.py @ 10129599, GroupedDynamicCausalConv, _grouped_dynamic_convolve and
// CandidateSelector; docs/ENGINE.md "DFlash2").

#include "models/layers.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace draftscope {

/// A grouped dynamic causal convolution over the block positions, wrapped around one branch
/// (attention or MLP) of a DFlash2 layer. `base_kernel` [2, K, H] holds the static taps of the
/// two sides (0: before the branch, 1: after it); `kernel_projection` [2*K*G, H] predicts from
/// the branch's normalised input one dynamic tap per side, tap and channel group (G = H /
/// group size). For a side s with base taps b[k] [H] and dynamic taps d[t, k] [G] (broadcast
/// over the group's channels), row t of the output is
///     sum_{k=0}^{K-1} (b[k] + d[t, k]) * x[t - k]     (x[t - k] = 0 for t - k < 0),
/// accumulated as the reference does: out = out + b[k] * x_k, then out = addcmul(out, d_k, x_k)
/// for k = 0..K-1 (so float32 results match it bit for bit). Only the block rows are
/// convolved; the anchor (row 0) sees no earlier row.
struct DynamicCausalConv {
    at::Tensor baseKernel;  ///< [2, K, H], compute dtype
    Linear projection;      ///< kernel_projection: [2*K*G, H] -> dynamic taps
    std::int64_t groupSize = 0;

    /// The side-0 convolution of `x` [L, H] and the side-1 dynamic taps [L, K, G] that finish()
    /// takes (both sides' taps come from this one projection of the branch input).
    std::pair<at::Tensor, at::Tensor> prepare(const at::Tensor& x) const;
    /// The side-1 convolution of the branch output `y` [L, H] with the taps prepare() returned.
    at::Tensor finish(const at::Tensor& y, const at::Tensor& dynamic) const;

    /// Loads `<prefix>base_kernel` and `<prefix>kernel_projection.weight`.
    static DynamicCausalConv load(const LoadTarget& lt, const std::string& prefix, std::int64_t groupSize);
    /// Their expected shapes for hidden size H, K taps and groups of `groupSize` channels.
    static void specs(std::vector<TensorSpec>& out, const std::string& prefix, std::int64_t hidden,
                      std::int64_t kernelSize, std::int64_t groupSize);

    /// The convolution itself (reference `_grouped_dynamic_convolve`): x [L, H], dynamic
    /// [L, K, G], base [K, H]. Public for tests.
    static at::Tensor convolve(const at::Tensor& x, const at::Tensor& dynamic, const at::Tensor& base,
                               std::int64_t groupSize);
};

/// What the candidate selector chose for one block (D = B - 1 drafted positions).
struct SelectorChoice {
    at::Tensor path;        ///< int64 [D]: the chosen token per position, on the logits' device
    at::Tensor candidates;  ///< int64 [D, k]: the top-k token ids of each position (descending logit)
    at::Tensor scores;      ///< float32 [D, k]: unary + pairwise score of each candidate, given the path
    at::Tensor q;           ///< float32 [D, k] on the host: softmax(scores / T) at T > 0; undefined at T = 0
    at::Tensor index;       ///< int64 [D]: the chosen candidate's column in `candidates`, on the logits' device
};

/// DFlash2's candidate selector (reference CandidateSelector.select). Per position j of the
/// block (left to right, predecessor p_0 = the anchor, p_{j+1} = the token chosen at j):
///     scores_j[c] = logit_j[c] + sum_r pred[p_j, r] * h_j[r] * succ[c, r]   for c in top-k(logit_j)
/// with h = hidden_projection(drafter hidden rows 1..), pred/succ the codebooks [V, r]. At
/// T = 0 the argmax is chosen; at T > 0 one candidate is drawn from q_j = softmax(scores_j / T)
/// (no top-p/top-k filter, as the reference), which is also the drafter distribution that
/// rejection sampling tests the token against. The candidates are sorted by descending logit
/// (the reference's topk is unsorted): the greedy choice is the same unless two scores tie
/// exactly (then the higher logit wins here), and a draw follows the same q.
class CandidateSelector {
public:
    CandidateSelector() = default;
    /// Loads `candidate_selector.{predecessor_codebook, successor_codebook}` (stored without
    /// `.weight` by the reference; a `.weight` suffix is accepted too) and
    /// `candidate_selector.hidden_projection.weight`.
    CandidateSelector(const LoadTarget& lt, std::int64_t topK);
    /// From tensors: codebooks [V, r], hidden_projection [r, H] (tests).
    CandidateSelector(at::Tensor predecessor, at::Tensor successor, at::Tensor hiddenProjection, std::int64_t topK)
        : predecessor_(std::move(predecessor)), successor_(std::move(successor)),
          hiddenProjection_{std::move(hiddenProjection), {}}, topK_(topK) {}

    /// `hidden` [D, H] (drafter output rows 1.., compute dtype), `logits` float32 [D, V] (after
    /// output_multiplier and soft-capping), `anchor` the block's first token. At temperature > 0
    /// the draws use `generator` (a CPU generator: reproducible across devices) and q is set.
    /// With `follow` ([D] tokens), the walk takes those tokens instead of choosing (scores and q
    /// along a given path, e.g. a reference's sampled one). Throws Error if `hidden` and `logits`
    /// differ in rows, the anchor is outside the codebooks, T > 0 comes without a generator (and
    /// no path), `follow` has another length or one of its tokens is not a candidate.
    SelectorChoice select(const at::Tensor& hidden, const at::Tensor& logits, std::int64_t anchor,
                          double temperature, at::Generator* generator,
                          const std::vector<std::int64_t>* follow = nullptr) const;

    std::int64_t topK() const { return topK_; }
    std::int64_t rank() const { return predecessor_.defined() ? predecessor_.size(1) : 0; }

    /// Whether a checkpoint holds a tensor of this name.
    using HasTensor = std::function<bool(const std::string&)>;
    /// The checkpoint name of codebook `which` ("predecessor_codebook" or
    /// "successor_codebook"): bare as the reference stores it, or with `.weight` if only
    /// that exists (or `has` is empty: bare).
    static std::string codebookName(const HasTensor& has, const std::string& which);
    /// Expected tensors for vocab V, hidden H, rank r, codebook names as stored.
    static void specs(std::vector<TensorSpec>& out, const HasTensor& has, std::int64_t vocab, std::int64_t hidden,
                      std::int64_t rank);

private:
    at::Tensor predecessor_, successor_;  ///< [V, r]
    Linear hiddenProjection_;             ///< [r, H]
    std::int64_t topK_ = 0;
};

}  // namespace draftscope
