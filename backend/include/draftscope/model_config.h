#pragma once
// Parsed HF `config.json` for targets and DFlash drafters. Torch-free.
// Semantics: HF transformers configs (4.x `rope_theta` / `rope_scaling` and 5.x
// `rope_parameters`), `text_config` nesting of vision-language checkpoints, and the DFlash
// drafter fields of ../shared/docs/DFLASH.md section 1.

#include "draftscope/attention_layout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace draftscope {

/// Decoder families the engine implements.
/// The family fixes the attention / token-mixer numerics; the MLP kind (dense or MoE) is
/// given separately by TransformerConfig::moe.
enum class TargetFamily {
    Qwen3,  ///< Qwen3 dense and Qwen3-MoE: per-head RMSNorm on q and k, no bias.
    Qwen2,  ///< Qwen2 dense: q/k/v bias, no q/k norm.
    Llama,  ///< Llama 2/3.x: no q/k norm, optional bias, llama3 rope scaling.
    /// Qwen3.5 / Qwen3.5-MoE / Qwen3-Next hybrids (HF `modeling_qwen3_5.py`,
    /// `modeling_qwen3_5_moe.py`, `modeling_qwen3_next.py`): `linear_attention` (Gated
    /// DeltaNet) and `full_attention` (gated softmax attention) layers per `layer_types`,
    /// `(1 + w)` RMSNorms. Qwen3-Next differs only in its fused DeltaNet projections
    /// (LinearAttentionConfig::fusedProjections) and its rope_theta default.
    Qwen3_5,
    /// gpt-oss (HF `modeling_gpt_oss.py`): q/k/v/o with bias, per-head attention sinks,
    /// `sliding_attention` / `full_attention` layers, YaRN, a biased top-k router softmaxed
    /// over the chosen k, clamped `(up + 1) * gate * sigmoid(1.702 gate)` experts with biases
    /// (bf16 or MXFP4-packed), RMSNorm weights applied in float32 before the cast.
    GptOss,
    /// Gemma 4 text models (HF `models/gemma4/modeling_gemma4.py`, `Gemma4TextModel`):
    /// embeddings x sqrt(hidden), sandwich RMSNorms (weights in float32, `pow(ms + eps,
    /// -0.5)`), per-head q/k norms and a weightless v norm, attention scale 1,
    /// `sliding_attention` / `full_attention` layers with their own head size, kv heads and
    /// rotary schedule (Gemma4Config), GELU-tanh MLPs, optionally a parallel MoE block,
    /// per-layer inputs and KV sharing, a per-layer output scalar and final logit
    /// soft-capping.
    Gemma4,
};

/// "Qwen3", "Qwen2", "Llama", "Qwen3_5", "GptOss" or "Gemma4".
const char* targetFamilyName(TargetFamily family);

/// Gated DeltaNet hyper-parameters of a hybrid target (HF `Qwen3_5TextConfig.linear_*`;
/// defaults are HF's). Unused for dense targets.
struct LinearAttentionConfig {
    std::int64_t numKeyHeads = 16;    ///< `linear_num_key_heads` (query/key heads)
    std::int64_t numValueHeads = 32;  ///< `linear_num_value_heads`, a multiple of numKeyHeads
    std::int64_t keyHeadDim = 128;    ///< `linear_key_head_dim`
    std::int64_t valueHeadDim = 128;  ///< `linear_value_head_dim`
    std::int64_t convKernel = 4;      ///< `linear_conv_kernel_dim` (causal depthwise conv width)
    /// Qwen3-Next layout: one `in_proj_qkvz` and one `in_proj_ba` whose rows are grouped per
    /// key head ([q | k | v | z] and [b | a] of each key head's group, HF
    /// `Qwen3NextGatedDeltaNet.fix_query_key_value_ordering`), instead of Qwen3.5's
    /// separate `in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a`.
    bool fusedProjections = false;
};

/// Mixture-of-experts MLP hyper-parameters (HF `Qwen3MoeConfig`, `Qwen3NextConfig`,
/// `Qwen3_5MoeTextConfig`). `numExperts == 0` means every layer has a dense SwiGLU MLP.
struct MoeConfig {
    std::int64_t numExperts = 0;                    ///< `num_experts` (alias `num_local_experts`)
    std::int64_t numExpertsPerToken = 0;            ///< `num_experts_per_tok` (top-k), 1..numExperts
    std::int64_t expertIntermediateSize = 0;        ///< `moe_intermediate_size`
    std::int64_t sharedExpertIntermediateSize = 0;  ///< `shared_expert_intermediate_size`; 0 = no shared expert
    /// Renormalise the top-k routing probabilities to sum to 1 (`norm_topk_prob`; always
    /// true for Qwen3.5-MoE, whose HF router renormalises unconditionally).
    bool normTopkProb = false;
    std::int64_t decoderSparseStep = 1;             ///< `decoder_sparse_step`
    std::vector<std::int64_t> mlpOnlyLayers;        ///< `mlp_only_layers`: dense layers (intermediate_size)

    bool enabled() const { return numExperts > 0; }
    /// HF rule: layer l is sparse iff l is not in mlp_only_layers, num_experts > 0 and
    /// (l + 1) % decoder_sparse_step == 0; otherwise it has a dense MLP of intermediate_size.
    bool isSparseLayer(std::int64_t layer) const {
        if (!enabled()) return false;
        for (auto l : mlpOnlyLayers)
            if (l == layer) return false;
        return (layer + 1) % decoderSparseStep == 0;
    }
};

/// Rotary embedding parameters. `type` is "default", "linear", "llama3", "yarn" or (Gemma 4's
/// full-attention layers) "proportional": HF `_compute_proportional_rope_parameters`, which
/// rotates the first floor(partial_rotary_factor * head_dim / 2) frequency pairs of the whole
/// head (frequency base^(-2i / head_dim)) and leaves the other pairs unrotated.
struct RopeConfig {
    double theta = 10000.0;
    std::string type = "default";
    double factor = 1.0;
    double lowFreqFactor = 1.0;
    double highFreqFactor = 4.0;
    /// `original_max_position_embeddings`; for yarn it defaults to max_position_embeddings.
    std::int64_t originalMaxPositions = 8192;
    double partialRotaryFactor = 1.0;  ///< fraction of head_dim that is rotated
    // YaRN only (HF `_compute_yarn_parameters`; unset = HF default).
    double betaFast = 32.0;                  ///< `beta_fast`
    double betaSlow = 1.0;                   ///< `beta_slow`
    std::optional<double> mscale;            ///< `mscale`
    std::optional<double> mscaleAllDim;      ///< `mscale_all_dim`
    std::optional<double> attentionFactor;   ///< `attention_factor` (overrides the mscale rule)
    bool truncate = true;                    ///< `truncate`: floor/ceil the correction range
};

/// Gemma 4's fields (HF `Gemma4TextConfig`, transformers 5.17; defaults are HF's). The
/// sliding layers use TransformerConfig::headDim, numKvHeads, rope and slidingWindow; the
/// full layers the values below.
struct Gemma4Config {
    /// Head size of the full_attention layers (`global_head_dim`, or their `per_layer_config`
    /// `head_dim`): what their proportional rotary schedule spans.
    std::int64_t globalHeadDim = 512;
    /// `num_global_key_value_heads`: kv heads of full layers when attentionKEqV (HF applies it
    /// only then); 0 = num_key_value_heads.
    std::int64_t numGlobalKvHeads = 0;
    /// Per layer: head size and kv heads, as resolved from the flat keys above or, in configs
    /// saved by transformers >= 5.15, from `per_layer_config` {layer: {head_dim,
    /// num_key_value_heads}} (which then wins, as in HF).
    std::vector<std::int64_t> layerHeadDims, layerKvHeads;
    /// Gemma4ForConditionalGeneration: the image, video and audio placeholder ids, which HF
    /// embeds as `padTokenId` (also for the per-layer inputs) even in a text-only prompt.
    std::vector<std::int64_t> placeholderIds;
    std::int64_t padTokenId = 0;
    /// `attention_k_eq_v`: full layers have no v_proj; their values are the raw key projection
    /// (before the key norm and rotary), normalised by the weightless v norm.
    bool attentionKEqV = false;
    std::int64_t perLayerInputSize = 256;   ///< `hidden_size_per_layer_input` P; 0 = no per-layer inputs
    std::int64_t perLayerVocabSize = 262144;  ///< `vocab_size_per_layer_input`
    /// `num_kv_shared_layers` n: layers L-n..L-1 compute no keys/values and attend with those
    /// of the last earlier layer of their type.
    std::int64_t numKvSharedLayers = 0;
    bool doubleWideMlp = false;  ///< `use_double_wide_mlp`: KV-shared layers' MLP is 2 x intermediate_size
    std::optional<double> finalLogitSoftcapping;  ///< `final_logit_softcapping` c: logits = c tanh(l / c)
    RopeConfig fullRope;  ///< `rope_parameters.full_attention` (HF default: proportional, 0.25, theta 1e6)
    /// `enable_moe_block`: every layer adds a routed expert block (TransformerConfig::moe:
    /// `num_experts`, `top_k_experts`, `moe_intermediate_size`) to its dense MLP.
    bool moeBlock = false;
};

/// The derived YaRN quantities (DFLASH.md section 11, HF `_compute_yarn_parameters`).
struct YarnParameters {
    std::int64_t rotaryDim = 0;   ///< int(head_dim * partial_rotary_factor)
    double low = 0, high = 0;     ///< correction range in rotary-frequency index units, after clamping
    double attentionFactor = 1;   ///< cos and sin are multiplied by this
};

/// YaRN correction range and attention factor for `rope` (type "yarn") and `headDim`.
/// Example (DFLASH.md section 11): theta 1e7, dim 128, factor 64, original 4096, truncate
/// gives low 11, high 26, attention factor 1.4158883. Throws Error if the rotary dimension
/// is zero or factor <= 0.
YarnParameters yarnParameters(const RopeConfig& rope, std::int64_t headDim);

/// Architecture hyper-parameters of a decoder-only transformer (target or drafter body).
struct TransformerConfig {
    std::string configPath;    ///< file this was read from, for error messages
    std::string architecture;  ///< `architectures[0]`, e.g. "Qwen3ForCausalLM"
    std::string modelType;     ///< `model_type` of the language model
    TargetFamily family = TargetFamily::Qwen3;
    std::int64_t hiddenSize = 0;
    std::int64_t intermediateSize = 0;
    std::int64_t numLayers = 0;
    std::int64_t numHeads = 0;
    std::int64_t numKvHeads = 0;
    std::int64_t headDim = 0;
    std::int64_t vocabSize = 0;
    std::int64_t maxPositions = 0;
    double rmsNormEps = 1e-6;
    RopeConfig rope;
    bool tieWordEmbeddings = false;
    bool attentionBias = false;
    std::string hiddenAct = "silu";
    /// Per layer: "full_attention", "linear_attention" (Gated DeltaNet, Qwen3_5 targets only)
    /// or "sliding_attention" (drafters, see DrafterConfig::layers; GptOss targets, whose
    /// sliding layers see slidingWindow keys).
    std::vector<std::string> layerTypes;
    /// `sliding_window` of a target's sliding_attention layers: the keys a query sees,
    /// itself included (HF masking_utils: key position > query position - window). 0: none.
    std::int64_t slidingWindow = 0;
    /// `quantization_config.quant_method` of a target ("mxfp4" for gpt-oss's packed experts);
    /// empty for unquantised checkpoints. Other methods are refused at load.
    std::string quantization;
    LinearAttentionConfig linearAttention;  ///< Qwen3_5 only
    MoeConfig moe;                          ///< MoE targets only (numExperts 0 otherwise)
    Gemma4Config gemma4;                    ///< Gemma4 only
    std::vector<std::int64_t> eosTokenIds;
    /// `dtype` (5.x) or `torch_dtype` (4.x): the dtype the checkpoint was saved in, e.g.
    /// "bfloat16"; empty if the config does not say.
    std::string checkpointDtype;
    /// Prefix of the language model's tensors: "model." (text-only) or
    /// "model.language_model." (vision-language layout).
    std::string weightPrefix = "model.";

    /// True if any layer is a recurrent (linear_attention) layer: its cache then carries
    /// state that crops only within the last forward (see KVCache::crop in the backend).
    bool isHybrid() const {
        for (const auto& t : layerTypes)
            if (t == "linear_attention") return true;
        return false;
    }
    bool isSlidingLayer(std::int64_t layer) const {
        return layerTypes.at(static_cast<std::size_t>(layer)) == "sliding_attention";
    }
    /// Head size of `layer`: Gemma 4's full layers have their own (Gemma4Config::layerHeadDims).
    std::int64_t headDimOf(std::int64_t layer) const {
        const auto l = static_cast<std::size_t>(layer);
        return family == TargetFamily::Gemma4 && l < gemma4.layerHeadDims.size() ? gemma4.layerHeadDims[l] : headDim;
    }
    /// Key/value heads of `layer` (Gemma 4: Gemma4Config::layerKvHeads).
    std::int64_t kvHeadsOf(std::int64_t layer) const {
        const auto l = static_cast<std::size_t>(layer);
        return family == TargetFamily::Gemma4 && l < gemma4.layerKvHeads.size() ? gemma4.layerKvHeads[l] : numKvHeads;
    }
    /// Gemma 4 KV sharing: the layer whose keys and values `layer` attends with (HF
    /// `Gemma4TextAttention.is_kv_shared_layer`: the last layer of the same type before the
    /// shared ones), or -1 where it computes its own.
    std::int64_t kvSourceLayer(std::int64_t layer) const {
        if (family != TargetFamily::Gemma4 || gemma4.numKvSharedLayers <= 0) return -1;
        const auto first = numLayers - gemma4.numKvSharedLayers;
        if (layer < first) return -1;
        for (auto l = first - 1; l >= 0; --l)
            if (layerTypes[static_cast<std::size_t>(l)] == layerTypes[static_cast<std::size_t>(layer)]) return l;
        return -1;
    }
};

/// Block-drafter families draftscope implements (docs/ENGINE.md, "Drafter families").
enum class DrafterFamily {
    DFlash,   ///< `DFlashDraftModel` (z-lab dflash/model.py; SpecForge and ModelOpt dialects)
    /// `DFlash2DraftModel` (z-lab dflash/model.py @ 10129599): a grouped dynamic causal
    /// convolution around each layer's attention and MLP, and a candidate selector that picks
    /// each block token among the top-k of the drafter's logits.
    DFlash2,
    /// speculators `dspark` (vllm-project/speculators models/dspark; vLLM qwen3_dspark.py): a
    /// DFlash body plus a low-rank Markov logit bias over the previous block token, walked
    /// left to right, and a confidence head predicting each slot's acceptance.
    DSpark,
};

/// "DFlash", "DFlash2" or "DSpark": the name results files and the Models panel use.
const char* drafterFamilyName(DrafterFamily family);

struct DrafterConfig;
/// What sets the drafter's family apart, in words for summaries ("" for plain DFlash), e.g.
/// "conv kernel 2, groups of 16 around attention and MLP; candidate selector rank 16, top-8".
std::string describeFamily(const DrafterConfig& config);

/// DFlash2's extra hyper-parameters (`dflash_config` first, then the top level).
struct DFlash2Config {
    std::int64_t convKernelSize = 0;  ///< `conv_kernel_size`: taps of the causal convolution (>= 1)
    std::int64_t convGroupSize = 0;   ///< `conv_group_size`: channels sharing one dynamic tap; divides hidden_size
    std::int64_t selectorRank = 0;    ///< `selector_rank`: width of the predecessor/successor codebooks
    std::int64_t selectorTopK = 0;    ///< `selector_top_k`: candidates per block position, <= vocab_size
};

/// DSpark's heads (speculators `DSparkSpeculatorConfig`): only the `vanilla` Markov head is
/// implemented (vLLM serves no other); `gated` / `rnn` are refused by name.
struct DSparkConfig {
    std::int64_t markovRank = 0;        ///< `markov_rank` r (default 256; 0: no Markov head)
    bool confidenceHead = true;         ///< `enable_confidence_head` (default true)
    bool confidenceWithMarkov = true;   ///< `confidence_head_with_markov`: input [z; W1[prev]]
};

/// The checkpoint layout a drafter comes in (DFLASH.md section 12).
enum class DrafterFormat {
    /// z-lab's (SpecForge and ModelOpt write it too): `dflash_config`, taps `target_layer_ids`,
    /// no embedding or head (the target's are borrowed).
    ZLab,
    /// vllm-project/speculators: `speculators_model_type`, the body in
    /// `transformer_layer_config`, taps `aux_hidden_state_layer_ids` (= target_layer_ids + 1),
    /// its own `embed_tokens` and `lm_head` over a draft vocabulary of `draft_vocab_size` tokens
    /// mapped to target ids by `d2t` (target = draft + d2t[draft]) when it is smaller.
    Speculators,
};

/// A DFlash drafter's configuration (DFLASH.md section 1).
struct DrafterConfig {
    DrafterFamily family = DrafterFamily::DFlash;  ///< from `architectures` (DFLASH.md section 12)
    DrafterFormat format = DrafterFormat::ZLab;
    std::optional<DFlash2Config> dflash2;          ///< set iff family == DFlash2
    std::optional<DSparkConfig> dspark;            ///< set iff family == DSpark
    /// speculators `sample_from_anchor` (DSpark's default): the anchor's row drafts too, so a
    /// block of B rows drafts B tokens (row j predicts block position j + 1) and a verify pass
    /// holds B + 1 tokens; false (DFlash): rows 1..B-1 draft, B tokens per verify pass.
    bool sampleFromAnchor = false;
    /// Speculators format: rows of its `lm_head` (`draft_vocab_size`, speculators' default
    /// 32000 when absent); 0 for the z-lab format.
    std::int64_t draftVocabSize = 0;
    TransformerConfig body;  ///< the drafter's own layers (no embedding, no LM head)
    std::int64_t blockSize = 16;
    std::int64_t maskTokenId = -1;
    std::vector<std::int64_t> targetLayerIds;  ///< tapped target layers, 0-based
    bool targetLayerIdsDerived = false;        ///< true if computed by the fallback rule
    std::int64_t numTargetLayers = 0;          ///< 0 if the config does not say
    /// Resolved per-layer attention (DFLASH.md section 9), one entry per drafter layer:
    /// from `layer_types`, `sliding_window` + `use_sliding_window`, `is_causal`, and
    /// `dflash_config.{causal, use_swa, swa_window_size}`.
    std::vector<LayerAttention> layers;
    std::optional<bool> isCausal;       ///< top-level `is_causal` as written (wins over dflashCausal)
    std::optional<bool> dflashCausal;   ///< `dflash_config.causal` as written
    double inputEmbeddingScale = 1.0;   ///< `input_embedding_scale`: block embeddings x s
    double outputMultiplier = 1.0;      ///< `output_multiplier`: draft logits x m
    std::optional<double> finalLogitSoftcapping;  ///< `final_logit_softcapping` c: tanh(l/c)*c

    /// Tokens one drafter call drafts for a full block: B, or B - 1 (sampleFromAnchor false).
    std::int64_t draftSlots() const { return sampleFromAnchor ? blockSize : blockSize - 1; }
    /// Tokens one verify pass holds for a full block: the anchor and draftSlots() drafts.
    std::int64_t verifyWidth() const { return draftSlots() + 1; }
    /// The first block row whose output drafts a token: 0 (sampleFromAnchor) or 1.
    std::int64_t firstDraftRow() const { return sampleFromAnchor ? 0 : 1; }
};

/// Reads `<dir>/config.json` of a target model. Accepts `text_config` nesting.
/// Throws Error naming the file and field when the directory, file or a required field is
/// missing, a value has the wrong type, or the architecture is not supported.
TransformerConfig loadTargetConfig(const std::string& dir);

/// Reads `<dir>/config.json` of a block drafter: `architectures` ["DFlashDraftModel"] (or
/// none, with a `dflash_config`) or ["DFlash2DraftModel"] (its conv_* and selector_* keys then
/// required); any other architecture is refused by name. `mask_token_id`, `target_layer_ids`,
/// `block_size`, `input_embedding_scale`, `output_multiplier` and `final_logit_softcapping`
/// are read from `dflash_config` first, then the top level; the per-layer layout is resolved
/// as DFLASH.md section 9. Throws Error as loadTargetConfig, and for a layout that cannot be
/// resolved (layer_types length, unknown layer type, a sliding layer without a window, a
/// window smaller than block_size) or a key that changes the math and is not implemented
/// (speculators `transformer_layer_config`, `draft_vocab_size`, ...), naming the key.
DrafterConfig loadDrafterConfig(const std::string& dir);

/// DFlash's fallback for a missing `target_layer_ids`: n == 1 gives [L/2], otherwise
/// round(1 + i*(L-4)/(n-1)) for i in 0..n-1 with round-half-to-even (Python's round).
/// Example: L=30, n=5 gives [1, 8, 14, 20, 27]. Throws Error for n < 1 or L < 1.
std::vector<std::int64_t> fallbackTargetLayerIds(std::int64_t numTargetLayers,
                                                 std::int64_t numDraftLayers);

}  // namespace draftscope
