#pragma once
// Decoder-only target models: dense attention (Qwen3, Qwen2, Llama 3.x, Qwen3-MoE) with a
// croppable KV cache, and the hybrids (Qwen3.5, Qwen3.5-MoE, Qwen3-Next: Gated DeltaNet +
// gated attention layers) whose cache also carries recurrent state. MLPs are dense SwiGLU or
// sparse MoE (moe_mlp.h). Semantics: HF transformers modeling_qwen3.py / modeling_llama.py /
// modeling_qwen3_moe.py (eager attention) and modeling_qwen3_5.py / modeling_qwen3_5_moe.py /
// modeling_qwen3_next.py (torch fallbacks, no fla kernels), gpt-oss (models/gpt_oss.h) and
// Gemma 4 text models (models/gemma4.h).

#include "checkpoints/weight_loader.h"
#include "draftscope/model_config.h"
#include "draftscope/placement.h"
#include "models/gated_attention.h"
#include "models/gated_deltanet.h"
#include "models/gemma4.h"
#include "models/gpt_oss.h"
#include "models/layers.h"
#include "models/moe_mlp.h"

#include <ATen/ATen.h>

#include <optional>
#include <vector>

namespace draftscope {

/// What a target forward should return besides updating the cache.
struct TargetForwardRequest {
    /// HF `hidden_states` indices to return: 0 = embedding output, k = output of decoder
    /// layer k-1 for k < L, L = output of the last layer after the final norm.
    std::vector<std::int64_t> hiddenIndices;
    /// Rows whose logits to compute: [logitsFrom, T). logitsFrom = T computes none.
    std::int64_t logitsFrom = 0;
    /// Optional per-row absolute positions (int64 [T]); default start..start+T-1.
    std::optional<at::Tensor> positions;
    /// Optional visibility of the new rows over [cache rows | new rows]: bool [T, cache+T].
    /// Default: causal (row i sees cache rows and new rows 0..i). Hybrid targets need
    /// treeParents with it (their recurrent layers follow the tree, not the mask).
    std::optional<at::Tensor> visible;
    /// Tree verification: parent row of each new row (-1 = the cached prefix), parents
    /// before children. Required with `visible` on hybrid targets, whose Gated DeltaNet
    /// layers then run GatedDeltaNet::forwardTree and leave per-node states in the cache
    /// (KVCache::commitTreePath). Ignored by full-attention layers (the mask rules there).
    std::vector<int> treeParents;
    /// Static shapes for a captured verify step (decoding/verify_graph.h): `positions`
    /// (required, on the embeddings' device) are also the KV rows written
    /// (KVCache::writeRows); attention spans the cache's whole capacity under a causal mask
    /// computed on the device from `positions`; the cache is not advanced (the caller does).
    /// Gated DeltaNet layers (hybrid targets) run as in the dynamic forward: they only read
    /// the cache's linear-attention states and replace them, so a captured graph can feed
    /// them from fixed buffers (VerifyGraph). Only where staticShapeUnsupportedReason() is
    /// empty; throws Error otherwise.
    bool staticShapes = false;
    /// Decoder layers whose router choices to return (TargetForwardResult::routing).
    std::vector<std::int64_t> routingLayers;
};

/// How DFlash verify steps run (LoadOptions::cudaGraphs; decoding/verify_graph.h).
enum class CudaGraphMode {
    Auto,         ///< captured where possible, else eager (the reason is recorded)
    On,           ///< captured; a run where that is impossible is an Error
    Off,          ///< always the eager, dynamic-shape forward
    StaticEager,  ///< the static-shape forward without capture (tests, CPU)
};

struct TargetForwardResult {
    std::vector<at::Tensor> hidden;  ///< one [T, H] per requested index, compute dtype
    at::Tensor logits;               ///< [T - logitsFrom, V] float32
    /// One per TargetForwardRequest::routingLayers entry: the experts each new row's router
    /// chose (int64 [T, k], by descending weight, on the layer's device); undefined for a
    /// layer without routed experts.
    std::vector<at::Tensor> routing;
};

/// The devices of a target's placement groups and the modules each holds
/// (draftscope/placement.h; docs/ENGINE.md, "Placement across devices").
struct TargetPlacement {
    std::vector<at::Device> devices;  ///< one per group; groups may share a device ("cpu,cpu")
    std::vector<std::string> names;   ///< the groups as the user named them ("cuda:0"); may be empty
    PlacementPlan plan;
    /// MXFP4-packed experts are dequantised to the compute dtype at load (the plan counted
    /// them so) instead of per forward (LoadOptions::mxfp4Experts).
    bool unpackExperts = false;
};

/// A loaded target model. Not thread-safe; owned by one worker thread.
class TargetModel {
public:
    /// Loads weights from `dir` (config already parsed) in `dtype`, each tensor straight onto
    /// the device of its module's group in `placement`. Throws Error listing missing or
    /// mis-shaped tensors, or for a plan whose layer count differs from the config's.
    TargetModel(const TransformerConfig& config, const WeightLoader& weights, at::ScalarType dtype,
                TargetPlacement placement);

    const TransformerConfig& config() const { return config_; }
    const WeightReport& weightReport() const { return report_; }
    at::ScalarType dtype() const { return dtype_; }
    /// The device of the final norm and LM head: logits (target and drafter) live there.
    const at::Device& device() const { return deviceOf(placement_.plan.headDevice); }
    /// The drafters' device: drafter weights, their caches and the tapped hidden states.
    const at::Device& drafterDevice() const { return deviceOf(placement_.plan.drafterDevice); }
    const TargetPlacement& placement() const { return placement_; }
    std::int64_t parameterCount() const { return parameters_; }
    /// ModelSummary::quantization: how quantised weights are held ("" for none).
    std::string quantizationSummary() const;

    /// What planPlacement() needs of this target: bytes of the embeddings, of each decoder
    /// layer (weights in `dtype` plus its KV cache, or its Gated DeltaNet state, for
    /// `maxContext` tokens) and of the final norm + LM head (a tied head counts a copy of
    /// the table), and the activation reserve per device (docs/ENGINE.md, "Memory
    /// estimate"). Device fields are left to the caller.
    /// `unpackExperts`: MXFP4 experts counted dequantised (TargetPlacement::unpackExperts).
    static PlacementRequest placementRequest(const TransformerConfig& config, const WeightLoader& weights,
                                             at::ScalarType dtype, std::int64_t maxContext, bool unpackExperts = false);

    /// Runs ids (int64 [T] on any device) at positions cache.length() .. +T-1 (or
    /// request.positions), appending their keys/values to `cache` and committing them; for
    /// hybrid targets it also advances each linear_attention layer's state in `cache` (HF
    /// semantics: chunk rule for prefill and multi-token steps, recurrent rule for single
    /// tokens on a cache). Throws Error for a hidden index outside 0..L, or a `visible`
    /// mask on a hybrid target.
    TargetForwardResult forward(const at::Tensor& ids, KVCache& cache, const TargetForwardRequest& request) const;

    /// Embedding rows for ids (int64 [T], any device) -> [T, H] on the embeddings' device:
    /// the raw table rows (Gemma 4's forward scales them by sqrt(H) itself; the drafter's
    /// noise embedding reads the raw rows, as z-lab's `_raw_input_embeddings`).
    at::Tensor embed(const at::Tensor& ids) const;
    /// LM head: [T, H] (already normed, on the head's device) -> float32 logits [T, V]. The
    /// plain linear head (z-lab's `_output_head`), without Gemma 4's soft-capping.
    at::Tensor lmHead(const at::Tensor& normedHidden) const;
    /// embed() of a drafter block, copied to the drafters' group.
    at::Tensor drafterEmbed(const at::Tensor& ids) const;
    /// lmHead() of drafter hidden states [T, H] (on the drafters' group): float32 logits
    /// [T, V] on device().
    at::Tensor drafterLogits(const at::Tensor& drafterHidden) const;
    KVCache makeCache() const { return KVCache(config_.numLayers); }
    /// Why forward() cannot take TargetForwardRequest::staticShapes on this target (MoE
    /// routing on the host, several placement groups), or "" where it can.
    std::string staticShapeUnsupportedReason() const;
    CudaGraphMode cudaGraphMode() const { return graphMode_; }
    /// Set by the engine at load (LoadOptions::cudaGraphs).
    void setCudaGraphMode(CudaGraphMode mode) { graphMode_ = mode; }
    /// True for targets with linear_attention layers: their cache crops only within the
    /// last forward on it (KVCache::crop); further back, restore a KVCache::Snapshot.
    bool isHybrid() const { return config_.isHybrid(); }

    /// The tensors this architecture expects in a checkpoint; sparse MoE layers in
    /// `experts` layout (see ExpertLayout).
    static std::vector<TensorSpec> expectedTensors(const TransformerConfig& config,
                                                   ExpertLayout experts = ExpertLayout::PerExpert);
    /// Prefixes of checkpoint tensors that are not part of the language model and are
    /// reported as ignored: vision towers and multi-token-prediction heads, Gemma 4's vision
    /// and audio towers, and the k/v weights HF also drops on Gemma 4's KV-shared layers.
    static std::vector<std::string> ignoredTensorPrefixes(const TransformerConfig& config);

private:
    struct Layer {
        RmsNorm inputNorm, postNorm;
        Linear q, k, v, o;  ///< dense attention (unused by Qwen3_5 layers)
        std::optional<RmsNorm> qNorm, kNorm;
        std::optional<GatedDeltaNet> deltaNet;          ///< Qwen3_5 linear_attention
        std::optional<GatedAttention> gatedAttention;   ///< Qwen3_5 full_attention
        SwiGluMlp mlp;                   ///< dense MLP (unused when moe is set)
        std::optional<SparseMoeMlp> moe;  ///< sparse MoE layers of MoE targets
        std::optional<GptOssMoe> gptOssMoe;  ///< gpt-oss's MoE block
        at::Tensor sinks;                 ///< gpt-oss: per-head sink logits [Hq], float32
        bool sliding = false;             ///< a sliding_attention layer (TransformerConfig::slidingWindow)
        std::optional<Gemma4Layer> gemma;  ///< a Gemma 4 layer (all of it: attention, MLP, MoE)
    };
    /// `t` of group `from` in group `to`: a copy when the groups differ (even on one
    /// device, so "cpu,cpu" makes the same boundary copies as two GPUs), else `t` itself.
    at::Tensor move(const at::Tensor& t, int from, int to) const;
    const at::Device& deviceOf(int group) const { return placement_.devices[static_cast<std::size_t>(group)]; }
    int layerGroup(std::int64_t layer) const { return placement_.plan.layerDevice[static_cast<std::size_t>(layer)]; }
    void loadLayers(const WeightLoader& weights, ExpertLayout experts);
    /// The family's RMSNorm over weight `name` (Qwen3_5: 1 + w; GptOss: float32 w first).
    RmsNorm normAt(const LoadTarget& lt, const std::string& name) const;

    TransformerConfig config_;
    WeightReport report_;
    at::ScalarType dtype_;
    TargetPlacement placement_;
    at::Tensor embedTokens_;
    at::Tensor lmHead_;
    RmsNorm finalNorm_;
    std::vector<Layer> layers_;
    RotaryEmbedding rotary_;                 ///< every layer's; Gemma 4: the sliding layers'
    std::optional<RotaryEmbedding> fullRotary_;  ///< Gemma 4's full_attention layers (Gemma4Config::fullRope)
    std::optional<Gemma4PerLayerInputs> perLayerInputs_;  ///< Gemma 4 with hidden_size_per_layer_input
    at::Tensor embedScale_;  ///< Gemma 4: sqrt(H) as a 0-dim tensor in the compute dtype (HF's embed_scale)
    std::int64_t parameters_ = 0;
    CudaGraphMode graphMode_ = CudaGraphMode::Auto;
};

}  // namespace draftscope
