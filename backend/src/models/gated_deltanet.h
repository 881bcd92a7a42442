#pragma once
// Gated DeltaNet token mixer of Qwen3.5 / Qwen3.5-MoE / Qwen3-Next `linear_attention` layers,
// as HF transformers 5.x `Qwen3_5GatedDeltaNet` / `Qwen3NextGatedDeltaNet` with their torch
// fallbacks (no fla / causal-conv1d kernels): `causal_conv1d_fn` / `causal_conv1d_update`, `torch_chunk_gated_delta_rule` (chunk 64) and
// `torch_recurrent_gated_delta_rule`, `Qwen3_5RMSNormGated`. Activations are 2-D [T, H].

#include "draftscope/model_config.h"
#include "models/layers.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

namespace draftscope {

struct TensorSpec;

/// The Gated DeltaNet gates from a, b ([T, Hv], the in_proj_a/in_proj_b outputs) and the
/// layer's A_log, dt_bias ([Hv]): HF g = -A_log.float().exp() * softplus(a.float() + dt_bias)
/// (float32 [T, Hv]) and beta = b.sigmoid() (b's dtype). One fused CUDA kernel where
/// kernels::deltaNetGates allows.
std::pair<at::Tensor, at::Tensor> deltaNetGates(const at::Tensor& a, const at::Tensor& b, const at::Tensor& aLog,
                                                const at::Tensor& dtBias);

/// Gated RMSNorm of the DeltaNet output (HF Qwen3_5RMSNormGated, plain w, not 1 + w):
/// y = (w * norm(x).to(dtype) * silu(gate.float())).to(dtype), norm in float32.
struct GatedRmsNorm {
    at::Tensor weight;  ///< [value head dim]
    double eps = 1e-6;
    /// x, gate: [N, value head dim] in the compute dtype; returns x's shape and dtype. One
    /// fused CUDA kernel where kernels::gatedRmsNorm allows.
    at::Tensor operator()(const at::Tensor& x, const at::Tensor& gate) const;
};

/// What the chunk rule keeps of one run so that chunkRuleStateAfter can rebuild the final
/// state of a run over only the first n of its T tokens (float32, on the run's device).
struct ChunkRuleTrace {
    std::int64_t rows = 0;                ///< T
    std::int64_t chunk = 64;              ///< C
    std::vector<at::Tensor> chunkStates;  ///< state before each chunk [H, Dk, Dv]
    at::Tensor keys;                      ///< l2-normalised k, zero-padded [H, N, C, Dk]
    at::Tensor logDecay;                  ///< g, zero-padded [H, N, C]
    std::vector<at::Tensor> newValues;    ///< per chunk, the corrected values v_new [H, C, Dv]
};

/// The gated delta rule over a sequence (HF `torch_chunk_gated_delta_rule`, chunk size
/// `chunk`), in float32. q, k: [T, Hk, Dk]; v: [T, Hv, Dv] (Hv a multiple of Hk; each q/k
/// head serves Hv/Hk consecutive value heads); g (log decay), beta: [T, Hv].
/// q and k are l2-normalised inside and q is scaled by Dk^-0.5. `initial`: float32
/// [Hv, Dk, Dv] or undefined (zeros). Returns the output [T, Hv, Dv] in q's dtype and the
/// final state (float32 [Hv, Dk, Dv]). `trace`, if given, receives what
/// chunkRuleStateAfter needs (references to intermediates: no extra work).
std::pair<at::Tensor, at::Tensor> chunkGatedDeltaRule(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                      const at::Tensor& g, const at::Tensor& beta,
                                                      const at::Tensor& initial, std::int64_t chunk = 64,
                                                      ChunkRuleTrace* trace = nullptr);

/// The final state that chunkGatedDeltaRule over only the first n (1 <= n <= trace.rows)
/// of the traced run's tokens, from the same initial state, returns: the same operations
/// on the same shapes, with rows >= n of the last chunk zero as that run pads them
/// (docs/ENGINE.md, "Hybrid targets: state rollback"). Throws Error if n is out of range.
at::Tensor chunkRuleStateAfter(const ChunkRuleTrace& trace, std::int64_t n);

/// The same rule token by token (HF `torch_recurrent_gated_delta_rule`), used by HF for
/// single-token steps on a cache. Same arguments and results as chunkGatedDeltaRule.
std::pair<at::Tensor, at::Tensor> recurrentGatedDeltaRule(const at::Tensor& q, const at::Tensor& k,
                                                          const at::Tensor& v, const at::Tensor& g,
                                                          const at::Tensor& beta, const at::Tensor& initial);

/// What GatedDeltaNet::forward on a cache keeps of its T tokens (LinearAttentionState::block).
struct DeltaNetBlockTrace {
    std::int64_t rows = 0;            ///< T
    at::Tensor convBefore, recurrentBefore;  ///< the state before the forward
    at::Tensor window;                ///< conv inputs [conv_dim, kernel + T]: previous window, then the tokens
    at::Tensor q, k, v, g, beta;      ///< the rule's inputs [T, ...] (a one-token prefix reruns the recurrent rule)
    ChunkRuleTrace chunk;             ///< set when T > 1 (the chunk rule ran)
};

/// The layer state after the first n (0 <= n <= block.rows) tokens of a traced forward: what
/// GatedDeltaNet::forward over exactly those n tokens from the state before it leaves (HF
/// semantics: n = 1 the recurrent rule, n > 1 the chunk rule via chunkRuleStateAfter; the
/// conv state is the last `kernel` conv inputs up to token n). The result has no trace.
/// Throws Error if n is out of range.
LinearAttentionState blockPrefixState(const DeltaNetBlockTrace& block, std::int64_t n);

/// One Gated DeltaNet mixer (weights under `<layer>.linear_attn.`). Qwen3.5 stores the
/// input projections as `in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a`; Qwen3-Next
/// (`linearAttention.fusedProjections`) as `in_proj_qkvz` [2 Hk Dk + 2 Hv Dv, H] and
/// `in_proj_ba` [2 Hv, H] grouped per key head (HF `fix_query_key_value_ordering`), which
/// load() regroups into the Qwen3.5 layout; everything after the projections is shared.
class GatedDeltaNet {
public:
    /// Loads the mixer's tensors under `prefix` (ending in "linear_attn.") in the layout
    /// that `c.linearAttention.fusedProjections` selects.
    static GatedDeltaNet load(const LoadTarget& lt, const std::string& prefix, const TransformerConfig& c);
    /// The checkpoint tensors under `prefix` and their shapes (layout as load()).
    static void specs(std::vector<TensorSpec>& out, const std::string& prefix, const TransformerConfig& c);

    /// Mixes x ([T, H], already input-normed, compute dtype) given the layer's state after
    /// the committed tokens, and replaces `state` with the state after x's tokens.
    /// As HF: without previous state (state.conv undefined) the conv sees zero padding and
    /// the chunk rule starts from zeros; with previous state the conv window continues
    /// from state.conv, a single token takes the recurrent rule and several tokens (a
    /// verify block) the chunk rule from state.recurrent; the new state then carries a
    /// DeltaNetBlockTrace (state.block) for KVCache::crop. Returns [T, H].
    at::Tensor forward(const at::Tensor& x, LinearAttentionState& state) const;

    /// Tree verification (DDTree on a hybrid target): mixes the N tree rows x ([N, H],
    /// input-normed) where row i continues the sequence of its parent row parents[i]
    /// (-1: the committed prefix, whose state is `committed`; parents[i] < i). Each row gets
    /// exactly what a causal forward of its root-to-row path would give it: its conv window
    /// is the last `kernel` inputs along that path and its recurrent state comes from its
    /// parent's, one token at a time (HF's recurrent rule; the rows of one depth run
    /// together, stacked as heads). `committed` is not changed; `perNode` receives the state
    /// after every row (conv [N, conv_dim, kernel], recurrent [N, Hv, Dk, Dv]) so the
    /// accepted path's last row can be adopted (KVCache::commitTreePath). Throws Error if
    /// `committed` is empty (no prefix has run) or parents are not a tree in creation order.
    /// Returns [N, H]. Semantics: docs/ENGINE.md, "DDTree on hybrid targets".
    at::Tensor forwardTree(const at::Tensor& x, const std::vector<int>& parents, const LinearAttentionState& committed,
                           LinearAttentionState& perNode) const;

private:
    Linear inQkv_, inZ_, inB_, inA_, out_;
    at::Tensor convWeight_;  ///< [conv_dim, 1, kernel]
    at::Tensor aLog_, dtBias_;  ///< [Hv]
    GatedRmsNorm norm_;
    std::int64_t hk_ = 0, hv_ = 0, dk_ = 0, dv_ = 0, kernel_ = 0;
};

}  // namespace draftscope
