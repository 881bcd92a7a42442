#pragma once
// Building blocks shared by the target and the drafter: RMSNorm, rotary embedding, the
// SwiGLU MLP and a croppable KV cache. Activations are 2-D [T, H] (no batch dimension);
// attention heads are [heads, T, head_dim].

#include "draftscope/model_config.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

namespace draftscope {

class WeightLoader;
struct TensorSpec;

/// Weights are loaded in the compute dtype onto the compute device.
struct LoadTarget {
    const WeightLoader& weights;
    at::ScalarType dtype;
    at::Device device;
    at::Tensor get(const std::string& name) const;
};

/// Qwen3/Llama RMSNorm: normalise in float32, cast back to the input dtype, multiply by w.
/// (HF Qwen3RMSNorm.) x: [..., D]; returns x's shape and dtype.
struct RmsNorm {
    at::Tensor weight;  ///< [D]
    double eps = 1e-6;
    at::Tensor operator()(const at::Tensor& x) const;
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
    at::Tensor operator()(const at::Tensor& x) const;
    static SwiGluMlp load(const LoadTarget& lt, const std::string& prefix);
    static void specs(std::vector<TensorSpec>& out, const std::string& prefix, std::int64_t hidden,
                      std::int64_t intermediate);
};

/// Rotary position embedding (rotate-half convention, HF `apply_rotary_pos_emb`) with
/// default, linear and llama3 frequency schedules and partial rotary dimensions.
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
};

/// Per-layer key/value cache of shape [Hkv, capacity, D] per tensor. Rows [0, length) are
/// committed; append() writes after them and returns views that include the new rows, and
/// the caller commits with advance() or drops them by not advancing. crop() shortens.
class KVCache {
public:
    explicit KVCache(std::int64_t numLayers = 0) : keys_(numLayers), values_(numLayers) {}
    std::int64_t length() const { return length_; }
    /// Writes k, v ([Hkv, T, D]) at rows [length, length+T) of layer `layer`; returns the
    /// cached keys and values for rows [0, length+T).
    std::pair<at::Tensor, at::Tensor> append(std::size_t layer, const at::Tensor& k, const at::Tensor& v);
    void advance(std::int64_t rows) { length_ += rows; }
    /// Keeps only the first `length` rows. Throws Error if length > current length.
    void crop(std::int64_t length);
    /// Keeps rows [0, prefix) and then `rows` (absolute row indices >= prefix), in order;
    /// the new length is prefix + rows.size(). Used to compact to an accepted tree path.
    void compact(std::int64_t prefix, const std::vector<std::int64_t>& rows);
    void clear() { length_ = 0; }

private:
    std::vector<at::Tensor> keys_, values_;
    std::int64_t length_ = 0;
};

}  // namespace draftscope
