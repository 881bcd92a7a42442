#pragma once
// Building blocks shared by the target and the drafter: RMSNorm, rotary embedding, the
// SwiGLU MLP and a croppable KV cache. Activations are 2-D [T, H] (no batch dimension);
// attention heads are [heads, T, head_dim].

#include "draftscope/model_config.h"

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace draftscope {

class WeightLoader;
struct TensorSpec;
struct DeltaNetBlockTrace;

/// Weights are loaded in the compute dtype onto the compute device.
struct LoadTarget {
    const WeightLoader& weights;
    at::ScalarType dtype;
    at::Device device;
    at::Tensor get(const std::string& name) const;
};

/// Qwen3/Llama RMSNorm: normalise in float32, cast back to the input dtype, multiply by w.
/// (HF Qwen3RMSNorm.) x: [..., D]; returns x's shape and dtype.
/// With `zeroCentered` (HF Qwen3_5RMSNorm): normalise in float32, multiply by (1 + w) in
/// float32, then cast to the input dtype; the checkpoint stores w centred on 0.
/// With `weightFirst` (HF GptOssRMSNorm): normalise in float32, multiply by w in float32 (HF's
/// bf16 weight times float32 activations promotes to float32), then cast.
/// With `powHalf` (HF Gemma4RMSNorm, with weightFirst): the inverse root as
/// pow(mean + eps, -0.5) instead of rsqrt, and `weight` may be undefined (with_scale=False).
struct RmsNorm {
    at::Tensor weight;  ///< [D]
    double eps = 1e-6;
    bool zeroCentered = false;
    bool weightFirst = false;
    bool powHalf = false;
    /// Uses the fused CUDA kernel where kernels::rmsNorm allows (same roundings).
    at::Tensor operator()(const at::Tensor& x) const;
    /// Query/key heads: x [T, H, D] normalised per head, then rotated with cos/sin [T, rot]
    /// (RotaryEmbedding::apply), as attention heads [H, T, D]. One fused CUDA kernel where
    /// kernels::rmsNormRotary allows; the two plain steps otherwise (the reference).
    at::Tensor normRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const;
    /// The residual add before a norm: {x + delta, norm(x + delta)} (x, delta [..., D], the
    /// sum rounded to their dtype as `x + delta` is). One fused CUDA kernel where
    /// kernels::addRmsNorm allows; the add and operator() otherwise (the reference).
    std::pair<at::Tensor, at::Tensor> addNorm(const at::Tensor& x, const at::Tensor& delta) const;
};

/// y = x W^T (+ b).
struct Linear {
    at::Tensor weight;  ///< [out, in]
    at::Tensor bias;    ///< [out] or undefined
    at::Tensor operator()(const at::Tensor& x) const;
};

/// SwiGLU MLP: down(silu(gate(x)) * up(x)).
struct SwiGluMlp {
    Linear gate, up, down;
    /// [2I, H]: gate rows then up rows, one GEMM for both. Set by load() where
    /// compat::fastKernels holds (bf16 on CUDA); gate/up then are views into it.
    at::Tensor gateUp;
    at::Tensor operator()(const at::Tensor& x) const;
    static SwiGluMlp load(const LoadTarget& lt, const std::string& prefix);
    static void specs(std::vector<TensorSpec>& out, const std::string& prefix, std::int64_t hidden,
                      std::int64_t intermediate);
};

/// Rotary position embedding (rotate-half convention, HF `apply_rotary_pos_emb`) with
/// default, linear, llama3, yarn and proportional frequency schedules (HF
/// `ROPE_INIT_FUNCTIONS`) and partial rotary dimensions. YaRN also scales cos and sin by its
/// attention factor; proportional (Gemma 4) spans the whole head with zero frequencies for
/// the unrotated pairs.
class RotaryEmbedding {
public:
    /// `invFreqStorage`, if set, rounds the inverse frequencies through that dtype, as a
    /// module whose float32 `inv_freq` buffer was cast with the model (see DFlashDrafter).
    RotaryEmbedding(const RopeConfig& rope, std::int64_t headDim, const at::Device& device,
                    std::optional<at::ScalarType> invFreqStorage = std::nullopt);
    /// cos and sin for `positions` (int64 [T]) as [T, rotaryDim] in `dtype`.
    std::pair<at::Tensor, at::Tensor> cosSin(const at::Tensor& positions, at::ScalarType dtype) const;
    /// Rotates the first rotaryDim dims of x [heads, T, D] with cos/sin [T, rotaryDim].
    static at::Tensor apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

private:
    at::Tensor invFreq_;  ///< float32 [rotaryDim / 2]
    double attentionFactor_ = 1.0;  ///< HF `attention_scaling` (yarn), 1 otherwise
};

/// State of one Gated DeltaNet (linear_attention) layer after the committed tokens, as HF
/// `LinearAttentionLayer` keeps it. Both tensors are undefined before the layer's first
/// forward ("no previous state"). The layer replaces the tensors after each forward and
/// never writes into them, so copies of this struct are cheap, independent snapshots;
/// except while a VerifyGraph (decoding/verify_graph.h) runs steps on the cache, whose fixed
/// state buffers and graph outputs are rewritten in place by later steps.
struct LinearAttentionState {
    at::Tensor conv;       ///< [conv_dim, kernel]: the last `kernel` conv inputs, compute dtype
    at::Tensor recurrent;  ///< [value heads, key head dim, value head dim], float32
    /// Set by a forward on a cache (GatedDeltaNet::forward with previous state): what rebuilds
    /// the state after any prefix of that forward's tokens (blockPrefixState, gated_deltanet.h),
    /// so KVCache::crop can go back within the last verify block. Null otherwise.
    std::shared_ptr<const DeltaNetBlockTrace> block;
};

/// Per-layer key/value cache of shape [Hkv, capacity, D] per tensor. Rows [0, length) are
/// committed; append() writes after them and returns views that include the new rows, and
/// the caller commits with advance() or drops them by not advancing. crop() shortens.
/// Hybrid targets also keep a LinearAttentionState per linear_attention layer; that state
/// summarises every committed token: crop() goes back only within the last forward on a
/// cache (the verify block), by adopting the state after the kept prefix of that block;
/// further back, restore() a snapshot() (docs/ENGINE.md, "Hybrid targets: state rollback").
class KVCache {
public:
    explicit KVCache(std::int64_t numLayers = 0)
        : keys_(numLayers),
          values_(numLayers),
          linear_(static_cast<std::size_t>(numLayers)),
          treeLinear_(static_cast<std::size_t>(numLayers)) {}
    std::int64_t length() const { return length_; }
    /// Allocates room for `rows` rows at the first append() of each layer (the DFlash loop
    /// reserves prompt + max new + one block), so no step reallocates or copies the cache.
    void reserve(std::int64_t rows) { reserved_ = rows; }
    /// Writes k, v ([Hkv, T, D]) at rows [length, length+T) of layer `layer`; returns the
    /// cached keys and values for rows [0, length+T).
    std::pair<at::Tensor, at::Tensor> append(std::size_t layer, const at::Tensor& k, const at::Tensor& v);
    /// Static-shape write for a captured verify step (decoding/verify_graph.h): writes k, v
    /// ([Hkv, T, D]) at rows `rows` (int64 [T] on the cache's device) of layer `layer`'s
    /// storage without reallocating, and returns the whole storage [Hkv, capacity, D] (rows
    /// never written hold zeros). Does not advance. Throws Error if the layer's storage is
    /// not allocated yet; the caller keeps rows < capacity() (not checked: device values).
    std::pair<at::Tensor, at::Tensor> writeRows(std::size_t layer, const at::Tensor& k, const at::Tensor& v,
                                                const at::Tensor& rows);
    /// Rows allocated per layer (a multiple of 16; 0 before the first append()).
    std::int64_t capacity() const;
    /// Identifies the cache's current storage, unique in the process (0 before the first
    /// append()): it changes whenever the cache allocates, which invalidates a captured graph.
    std::uint64_t storageId() const { return storageId_; }
    void advance(std::int64_t rows) { length_ += rows; }
    /// Keeps only the first `length` rows. With linear-attention state, each layer's state
    /// becomes the state after the first n = length - (rows before the last forward) tokens
    /// of that forward (blockPrefixState: no forward, bit-exact to HF's arithmetic on the same
    /// inputs). Throws Error if length > current length, or, with linear-attention state,
    /// if length is before the last forward on a cache or a tree forward is not committed.
    void crop(std::int64_t length);
    /// Keeps rows [0, prefix) and then `rows` (absolute row indices >= prefix), in order;
    /// the new length is prefix + rows.size(). Used to compact to an accepted tree path.
    /// Throws Error if the cache holds linear-attention state.
    void compact(std::int64_t prefix, const std::vector<std::int64_t>& rows);
    /// Tree verification on a hybrid target: keeps rows [0, prefix) and then `rows` (as
    /// compact()), and makes each linear-attention layer's state the one after tree node
    /// `lastNode` (a row index of the last tree forward), taken from treeLinearState().
    /// On a target without linear-attention state this is compact(). Throws Error if the
    /// cache holds linear-attention state but the last forward left no per-node states, or
    /// lastNode is out of range.
    void commitTreePath(std::int64_t prefix, const std::vector<std::int64_t>& rows, std::int64_t lastNode);
    /// Drops every row and every linear-attention state.
    void clear();

    /// Linear-attention state of `layer` (throws Error if out of range).
    LinearAttentionState& linearState(std::size_t layer);
    /// True if some layer holds linear-attention state (a hybrid target has run on it).
    bool hasLinearState() const;
    /// Per-node linear-attention states of `layer` left by the last tree forward: conv
    /// [N, conv_dim, kernel], recurrent float32 [N, value heads, key dim, value dim], row i =
    /// the state after the path root..node i. Undefined outside tree verification.
    LinearAttentionState& treeLinearState(std::size_t layer);
    /// Drops the per-node states of the last tree forward (every other forward does this).
    void clearTreeStates();

    /// The committed length and every layer's linear-attention state (shared tensors, no
    /// copy: see LinearAttentionState). Keys/values need no copy: rows below the length are
    /// never rewritten by later appends.
    struct Snapshot {
        std::int64_t length = 0;
        std::vector<LinearAttentionState> linear;
    };
    Snapshot snapshot() const { return {length_, linear_}; }
    /// Returns to `s` (taken from this cache): length s.length, the snapshot's states.
    /// Throws Error if s.length exceeds the current length or the layer count differs.
    void restore(const Snapshot& s);
    /// Committed keys and values of `layer` ([Hkv, length, D] views; undefined before the
    /// layer's first append). Throws Error if layer is out of range.
    std::pair<at::Tensor, at::Tensor> rows(std::size_t layer) const;

private:
    std::vector<at::Tensor> keys_, values_;
    /// Every layer's linear-attention state at `length` (crop()'s rule and errors).
    std::vector<LinearAttentionState> linearStatesAt(std::int64_t length) const;
    void compactRows(std::int64_t prefix, const std::vector<std::int64_t>& rows);
    std::vector<LinearAttentionState> linear_;
    std::vector<LinearAttentionState> treeLinear_;  ///< per layer, stacked per tree node
    std::int64_t length_ = 0;
    std::int64_t reserved_ = 0;
    std::uint64_t storageId_ = 0;
};

}  // namespace draftscope
