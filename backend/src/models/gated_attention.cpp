#include "models/gated_attention.h"

#include "checkpoints/weight_loader.h"
#include "core/torch_compat.h"
#include "kernels/fused_ops.h"

#include <cmath>

namespace draftscope {

void GatedAttention::specs(std::vector<TensorSpec>& s, const std::string& p, const TransformerConfig& c) {
    const auto H = c.hiddenSize, D = c.headDim;
    s.push_back({p + "q_proj.weight", {2 * c.numHeads * D, H}});
    s.push_back({p + "k_proj.weight", {c.numKvHeads * D, H}});
    s.push_back({p + "v_proj.weight", {c.numKvHeads * D, H}});
    s.push_back({p + "o_proj.weight", {H, c.numHeads * D}});
    if (c.attentionBias) {  // HF: bias=config.attention_bias on all four projections
        s.push_back({p + "q_proj.bias", {2 * c.numHeads * D}});
        s.push_back({p + "k_proj.bias", {c.numKvHeads * D}});
        s.push_back({p + "v_proj.bias", {c.numKvHeads * D}});
        s.push_back({p + "o_proj.bias", {H}});
    }
    s.push_back({p + "q_norm.weight", {D}});
    s.push_back({p + "k_norm.weight", {D}});
}

GatedAttention GatedAttention::load(const LoadTarget& lt, const std::string& p, const TransformerConfig& c) {
    GatedAttention m;
    const bool bias = c.attentionBias;
    auto linear = [&](const std::string& name) {
        return Linear{lt.get(p + name + ".weight"), bias ? lt.get(p + name + ".bias") : at::Tensor()};
    };
    m.q_ = linear("q_proj");
    m.k_ = linear("k_proj");
    m.v_ = linear("v_proj");
    m.o_ = linear("o_proj");
    m.qNorm_ = {lt.get(p + "q_norm.weight"), c.rmsNormEps, /*zeroCentered=*/true};
    m.kNorm_ = {lt.get(p + "k_norm.weight"), c.rmsNormEps, /*zeroCentered=*/true};
    m.hq_ = c.numHeads;
    m.hkv_ = c.numKvHeads;
    m.d_ = c.headDim;
    return m;
}

at::Tensor GatedAttention::forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                   KVCache& cache, std::size_t layer,
                                   const std::optional<at::Tensor>& visible, const at::Tensor& staticRows) const {
    const auto T = x.size(0);
    // HF: q_proj(x).view(T, heads, 2D) chunked into query and gate along the last dim.
    const auto qg = q_(x).view({T, hq_, 2 * d_});
    const auto q = qNorm_.normRotary(qg.narrow(-1, 0, d_), cos, sin);             // [Hq, T, D]
    const auto k = kNorm_.normRotary(k_(x).view({T, hkv_, d_}), cos, sin);        // [Hkv, T, D]
    const auto v = v_(x).view({T, hkv_, d_}).transpose(0, 1);
    const auto [K, V] = staticRows.defined() ? cache.writeRows(layer, k, v, staticRows) : cache.append(layer, k, v);
    const auto attn = compat::attention(q, K, V, visible, 1.0 / std::sqrt(static_cast<double>(d_)));
    return o_(gatedHeads(attn, qg.narrow(-1, d_, d_)));
}

at::Tensor GatedAttention::gatedHeads(const at::Tensor& attn, const at::Tensor& gate) {
    if (auto fused = kernels::sigmoidGate(attn, gate)) return *fused;
    const auto T = attn.size(1), width = attn.size(0) * attn.size(2);
    return attn.transpose(0, 1).reshape({T, width}) * at::sigmoid(gate.reshape({T, width}));
}

}  // namespace draftscope
