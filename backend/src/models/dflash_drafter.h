#pragma once
// The DFlash block-diffusion drafter (DFLASH.md sections 1-3; reference: the official
// DFlash `dflash.py`, DFlashDraftModel / Qwen3DFlashAttention).

#include "draftscope/model_config.h"
#include "draftscope/run_types.h"
#include "models/dflash2_parts.h"
#include "models/dspark_heads.h"
#include "models/layers.h"
#include "models/target_model.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

namespace draftscope {

/// One drafter call's outputs.
struct DraftOutput {
    at::Tensor hidden;  ///< [B, H] after the final norm, compute dtype
    /// float32 [draft slots, V]; row j predicts the token at block position j+1: rows 1..B-1 of
    /// the block (B-1 of them), or rows 0..B-1 for a drafter that samples from the anchor
    /// (DrafterConfig::sampleFromAnchor). Without a DSpark Markov bias (markovBias()).
    at::Tensor logits;
    std::vector<at::Tensor> attention;  ///< per layer [heads, B, keys] float32, if requested
};

/// A DFlash or DFlash2 drafter bound to a target (it borrows the target's embedding and LM
/// head). DFlash2 (DrafterConfig::family) adds a DynamicCausalConv around each layer's
/// attention and MLP and a CandidateSelector that picks the block tokens (selector()).
class DFlashDrafter {
public:
    /// Loads and validates the drafter against `target`: hidden size equal, fc input width
    /// == len(target_layer_ids) * H, every tapped id < target depth, mask token id < target
    /// vocab. Each failure throws Error naming the expected and found values. Mismatches
    /// that still run (num_target_layers differing from the target's depth) become warnings().
    /// Builds the rotary embedding of both reference revisions (see rotary()).
    DFlashDrafter(const DrafterConfig& config, const WeightLoader& weights, const TargetModel& target);

    const DrafterConfig& config() const { return config_; }
    const std::vector<std::string>& warnings() const { return warnings_; }
    const WeightReport& weightReport() const { return report_; }
    std::int64_t parameterCount() const { return parameters_; }
    /// Rows of the drafter's block (the anchor and block_size - 1 mask tokens).
    std::int64_t blockSize() const { return config_.blockSize; }
    /// Tokens a full block drafts (DrafterConfig::draftSlots) and one verify pass holds.
    std::int64_t draftSlots() const { return config_.draftSlots(); }
    std::int64_t verifyWidth() const { return config_.verifyWidth(); }
    KVCache makeCache() const { return KVCache(config_.body.numLayers); }

    /// Target hidden-state indices (HF convention, id + 1) that form the context features.
    std::vector<std::int64_t> featureIndices() const;

    /// c = hidden_norm(fc(features)): [C, K*H] -> [C, H].
    at::Tensor projectContext(const at::Tensor& features) const;

    /// One drafter call (DFLASH.md section 3). `features`: [C, K*H] target features of the
    /// C positions not yet in `cache`; `block`: int64 [B] = [anchor, MASK...]; the block
    /// starts at absolute position cache.length() + C. Positions are contiguous from
    /// cache.length(). The cache keeps the context rows and drops the block rows.
    /// `revision` selects the rotary numerics (rotary()); the cache holds rotated keys, so
    /// every call on one cache must pass the same revision.
    /// With `keepAttention`, DraftOutput::attention holds every layer's attention weights.
    /// `blockStart` >= 0 places the block at that absolute position instead (diagnosis
    /// probes that put the anchor's own feature into the context, or move the block: DFLASH.md
    /// section 7). `layout`, if given, replaces the configured per-layer attention layout
    /// (one entry per drafter layer; convention probes, probeLayout()); Error if its size differs.
    DraftOutput draft(const at::Tensor& features, const at::Tensor& block, KVCache& cache, LoopRevision revision,
                      bool keepAttention = false, std::int64_t blockStart = -1,
                      const std::vector<LayerAttention>* layout = nullptr) const;

    /// The same call with static shapes, for a captured CUDA graph (decoding/draft_graph.h):
    /// `positions` (int64 [C + B] on the drafters' device, consecutive from cache.length())
    /// are also the cache rows written (KVCache::writeRows); attention spans the cache's
    /// whole capacity under `key row <= last position` (rows not yet written hold zeros);
    /// the cache is not advanced (the caller advances it by C). Only where
    /// staticShapeUnsupportedReason() is empty; throws Error otherwise.
    DraftOutput draftStatic(const at::Tensor& features, const at::Tensor& block, KVCache& cache,
                            LoopRevision revision, const at::Tensor& positions) const;
    /// Why draftStatic() cannot run this drafter (a masked attention layout), or "".
    std::string staticShapeUnsupportedReason() const;

    /// The rotary embedding the reference of `revision` runs this drafter with
    /// (docs/ENGINE.md, "Drafter call"). April2026: that reference loads the drafter in its
    /// checkpoint dtype (config `dtype` / `torch_dtype`, else the dtype of fc.weight), which
    /// rounds the float32 inv_freq buffer through bfloat16 or float16; a float32 checkpoint
    /// rounds nothing. Current: the newest official code keeps inv_freq in float32.
    const RotaryEmbedding& rotary(LoopRevision revision) const;
    /// True if the checkpoint dtype rounds inv_freq, i.e. the two revisions' rotary
    /// numerics differ for this drafter.
    bool revisionsDifferInRotary() const { return aprilRotary_.has_value(); }

    /// The attention layout layer `layer` runs with (DrafterConfig::layers; the base layout
    /// if the layer is out of range).
    LayerAttention layerAttention(std::size_t layer) const;

    /// DFlash2's candidate selector, or nullptr for a DFlash drafter (whose block tokens are
    /// the argmax of, or samples from, its logits).
    const CandidateSelector* selector() const { return selector_ ? &*selector_ : nullptr; }

    /// DSpark's Markov head (nullptr for other families, and for markov_rank 0).
    const MarkovHead* markov() const { return markov_ ? &*markov_ : nullptr; }
    /// DSpark's confidence head, or nullptr.
    const ConfidenceHead* confidence() const { return confidence_ ? &*confidence_ : nullptr; }
    /// DSpark: the Markov bias over the target's vocabulary, float32 [n, V], for Markov
    /// embeddings `e` [n, r] (MarkovHead::embed of the previous tokens): W2 e scattered to the
    /// target ids of the draft vocabulary (0 elsewhere, where the logits are -inf) and scaled
    /// by output_multiplier as the logits are. Error without a Markov head.
    at::Tensor markovBias(const at::Tensor& e) const;

    /// The tensors this architecture expects in a drafter checkpoint. `has` tells how the
    /// checkpoint names DFlash2's codebooks (CandidateSelector::codebookName).
    static std::vector<TensorSpec> expectedTensors(const DrafterConfig& config, std::int64_t fcInputWidth,
                                                   const CandidateSelector::HasTensor& has = {});
    /// Tensors a checkpoint may hold that the forward does not use and that are no mistake:
    /// the speculators format's `t2d` (checked against d2t at load) and its training-only
    /// `verifier_norm` / `verifier_lm_head` copies. Empty for the z-lab format.
    static std::vector<std::string> ignoredTensorPrefixes(const DrafterConfig& config);

private:
    /// draft() and draftStatic(): `staticPositions` selects the static-shape variant.
    DraftOutput run(const at::Tensor& features, const at::Tensor& block, KVCache& cache, LoopRevision revision,
                    bool keepAttention, std::int64_t blockStart, const std::vector<LayerAttention>* layout,
                    const at::Tensor* staticPositions) const;

    struct Layer {
        RmsNorm inputNorm, postNorm, qNorm, kNorm;
        Linear q, k, v, o;
        SwiGluMlp mlp;
        std::optional<DynamicCausalConv> attentionConv, mlpConv;  ///< DFlash2 only
    };
    DrafterConfig config_;
    const TargetModel& target_;
    WeightReport report_;
    std::vector<std::string> warnings_;
    Linear fc_;
    RmsNorm hiddenNorm_, finalNorm_;
    std::vector<Layer> layers_;
    std::optional<CandidateSelector> selector_;  ///< DFlash2 only
    std::optional<MarkovHead> markov_;           ///< DSpark only
    std::optional<ConfidenceHead> confidence_;   ///< DSpark only
    // Speculators format: its own embedding [V, H] and head [V_d, H], and the target id of each
    // draft-vocabulary row (int64 [V_d], draft id + d2t; undefined when V_d == V).
    at::Tensor ownEmbed_, ownHead_, draftToTarget_;
    /// Speculators format: loads embed_tokens, lm_head and the d2t map (checked: in range, no
    /// target id twice, agreeing with t2d if present). Throws Error naming the tensor.
    void loadSpeculatorsVocabulary(const WeightLoader& weights, const LoadTarget& lt, const std::string& where);
    /// Block embeddings [B, H]: the own embedding where the format has one, else the target's.
    at::Tensor embedBlock(const at::Tensor& block) const;
    /// Draft logits float32 [rows, V] over the target vocabulary from normed hidden rows: the
    /// own head scattered to target ids (-inf where the draft vocabulary has no row) or the
    /// target's head; then output_multiplier and soft-capping.
    at::Tensor logitsOf(const at::Tensor& hidden) const;
    RotaryEmbedding rotary_;                       ///< float32 inv_freq (current revision)
    std::optional<RotaryEmbedding> aprilRotary_;   ///< inv_freq rounded through the checkpoint dtype, if it rounds
    std::int64_t parameters_ = 0;
};

}  // namespace draftscope
