#include "models/gemma4.h"

#include "checkpoints/weight_loader.h"
#include "core/torch_compat.h"
#include "draftscope/errors.h"
#include "models/moe_mlp.h"

#include <cmath>

namespace draftscope {

namespace {
at::Tensor geluTanh(const at::Tensor& x) { return at::gelu(x, "tanh"); }  // HF gelu_pytorch_tanh
/// HF Gemma4TextMLP: double width on KV-shared layers with use_double_wide_mlp (HF tests
/// layer >= first shared > 0).
std::int64_t mlpWidth(const TransformerConfig& c, std::int64_t l) {
    const auto first = c.numLayers - c.gemma4.numKvSharedLayers;
    const bool shared = l >= first && first > 0 && c.gemma4.numKvSharedLayers > 0;
    return c.intermediateSize * (c.gemma4.doubleWideMlp && shared ? 2 : 1);
}
}  // namespace

RmsNorm gemma4Norm(const LoadTarget& lt, const std::string& name, double eps) {
    RmsNorm n{lt.get(name).to(at::kFloat), eps, false, true};
    n.powHalf = true;
    return n;
}

RmsNorm gemma4PlainNorm(double eps) {
    RmsNorm n{at::Tensor(), eps, false, true};
    n.powHalf = true;
    return n;
}

void Gemma4Moe::specs(std::vector<TensorSpec>& s, const std::string& lp, const TransformerConfig& c) {
    const auto E = c.moe.numExperts, I = c.moe.expertIntermediateSize, H = c.hiddenSize;
    s.push_back({lp + "router.proj.weight", {E, H}});
    s.push_back({lp + "router.scale", {H}});
    s.push_back({lp + "router.per_expert_scale", {E}});
    s.push_back({lp + "experts.gate_up_proj", {E, 2 * I, H}});
    s.push_back({lp + "experts.down_proj", {E, H, I}});
    s.push_back({lp + "pre_feedforward_layernorm_2.weight", {H}});
    s.push_back({lp + "post_feedforward_layernorm_2.weight", {H}});
}

Gemma4Moe Gemma4Moe::load(const LoadTarget& lt, const std::string& lp, const TransformerConfig& c) {
    Gemma4Moe m;
    m.preNorm_ = gemma4Norm(lt, lp + "pre_feedforward_layernorm_2.weight", c.rmsNormEps);
    m.postNorm_ = gemma4Norm(lt, lp + "post_feedforward_layernorm_2.weight", c.rmsNormEps);
    m.routerNorm_ = gemma4PlainNorm(c.rmsNormEps);
    m.routerProj_ = lt.get(lp + "router.proj.weight");
    m.routerScale_ = lt.get(lp + "router.scale");
    m.perExpertScale_ = lt.get(lp + "router.per_expert_scale");
    m.gateUp_ = lt.get(lp + "experts.gate_up_proj");
    m.down_ = lt.get(lp + "experts.down_proj");
    m.topK_ = c.moe.numExpertsPerToken;
    m.rootSize_ = std::pow(static_cast<double>(c.hiddenSize), -0.5);
    return m;
}

at::Tensor Gemma4Moe::operator()(const at::Tensor& residual, at::Tensor* chosenOut) const {
    const auto r = routerNorm_(residual) * routerScale_ * rootSize_;
    const auto probs = at::softmax(at::linear(r, routerProj_), -1);  // [T, E], compute dtype
    auto [weights, chosen] = at::topk(probs, topK_, -1);
    weights = weights / weights.sum(-1, /*keepdim=*/true);
    weights = weights * perExpertScale_.index_select(0, chosen.reshape({-1})).view(chosen.sizes());
    if (chosenOut) *chosenOut = chosen;
    const auto flatWeights = weights.reshape({-1});
    const auto x = preNorm_(residual);
    auto out = at::zeros_like(x);
    const auto I = gateUp_.size(1) / 2;
    forEachChosenExpert(chosen, gateUp_.size(0), [&](std::int64_t e, const at::Tensor& token, const at::Tensor& pos) {
        const auto gu = at::linear(x.index_select(0, token), gateUp_.select(0, e));
        auto h = at::linear(geluTanh(gu.narrow(-1, 0, I)) * gu.narrow(-1, I, I), down_.select(0, e));
        h = h * flatWeights.index_select(0, token * topK_ + pos).unsqueeze(-1);
        out.index_add_(0, token, h.to(out.scalar_type()));
    });
    return postNorm_(out);
}

void Gemma4Layer::specs(std::vector<TensorSpec>& s, const std::string& lp, const TransformerConfig& c,
                        std::int64_t l) {
    const auto H = c.hiddenSize, D = c.headDimOf(l), Hkv = c.kvHeadsOf(l), Hq = c.numHeads;
    const auto& g = c.gemma4;
    for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                          "post_feedforward_layernorm"})
        s.push_back({lp + n + ".weight", {H}});
    const auto ap = lp + "self_attn.";
    const bool bias = c.attentionBias;
    auto linear = [&](const std::string& name, std::int64_t out, std::int64_t in) {
        s.push_back({ap + name + ".weight", {out, in}});
        if (bias) s.push_back({ap + name + ".bias", {out}});
    };
    linear("q_proj", Hq * D, H);
    s.push_back({ap + "q_norm.weight", {D}});
    if (c.kvSourceLayer(l) < 0) {
        linear("k_proj", Hkv * D, H);
        if (!(g.attentionKEqV && !c.isSlidingLayer(l))) linear("v_proj", Hkv * D, H);
        s.push_back({ap + "k_norm.weight", {D}});
    }
    linear("o_proj", H, Hq * D);
    SwiGluMlp::specs(s, lp + "mlp.", H, mlpWidth(c, l));
    if (g.moeBlock) {
        Gemma4Moe::specs(s, lp, c);
        s.push_back({lp + "post_feedforward_layernorm_1.weight", {H}});
    }
    if (g.perLayerInputSize) {
        s.push_back({lp + "per_layer_input_gate.weight", {g.perLayerInputSize, H}});
        s.push_back({lp + "per_layer_projection.weight", {H, g.perLayerInputSize}});
        s.push_back({lp + "post_per_layer_input_norm.weight", {H}});
    }
    s.push_back({lp + "layer_scalar", {1}});
}

Gemma4Layer Gemma4Layer::load(const LoadTarget& lt, const std::string& lp, const TransformerConfig& c,
                              std::int64_t l) {
    Gemma4Layer L;
    const double eps = c.rmsNormEps;
    const auto& g = c.gemma4;
    L.heads_ = c.numHeads;
    L.kvHeads_ = c.kvHeadsOf(l);
    L.headDim_ = c.headDimOf(l);
    L.kvSource_ = c.kvSourceLayer(l);
    L.inputNorm_ = gemma4Norm(lt, lp + "input_layernorm.weight", eps);
    L.postAttnNorm_ = gemma4Norm(lt, lp + "post_attention_layernorm.weight", eps);
    L.preFfNorm_ = gemma4Norm(lt, lp + "pre_feedforward_layernorm.weight", eps);
    L.postFfNorm_ = gemma4Norm(lt, lp + "post_feedforward_layernorm.weight", eps);
    const auto ap = lp + "self_attn.";
    auto linear = [&](const std::string& name) {
        return Linear{lt.get(ap + name + ".weight"), c.attentionBias ? lt.get(ap + name + ".bias") : at::Tensor()};
    };
    L.q_ = linear("q_proj");
    L.o_ = linear("o_proj");
    L.qNorm_ = gemma4Norm(lt, ap + "q_norm.weight", eps);
    L.vNorm_ = gemma4PlainNorm(eps);
    if (L.kvSource_ < 0) {
        L.k_ = linear("k_proj");
        if (!(g.attentionKEqV && !c.isSlidingLayer(l))) L.v_ = linear("v_proj");
        L.kNorm_ = gemma4Norm(lt, ap + "k_norm.weight", eps);
    }
    const auto mp = lp + "mlp.";
    L.gate_ = {lt.get(mp + "gate_proj.weight"), {}};
    L.up_ = {lt.get(mp + "up_proj.weight"), {}};
    L.down_ = {lt.get(mp + "down_proj.weight"), {}};
    if (g.moeBlock) {
        L.moe_ = Gemma4Moe::load(lt, lp, c);
        L.postFfNorm1_ = gemma4Norm(lt, lp + "post_feedforward_layernorm_1.weight", eps);
    }
    if (g.perLayerInputSize) {
        L.pleGate_ = {lt.get(lp + "per_layer_input_gate.weight"), {}};
        L.pleProjection_ = {lt.get(lp + "per_layer_projection.weight"), {}};
        L.plePostNorm_ = gemma4Norm(lt, lp + "post_per_layer_input_norm.weight", eps);
    }
    L.layerScalar_ = lt.get(lp + "layer_scalar");
    return L;
}

at::Tensor Gemma4Layer::forward(const at::Tensor& xIn, const Gemma4LayerInputs& in, KVCache& cache, std::int64_t l,
                                std::vector<std::pair<at::Tensor, at::Tensor>>& kv, at::Tensor* chosen) const {
    const auto T = xIn.size(0);
    const auto h = inputNorm_(xIn);
    const auto q = RotaryEmbedding::apply(qNorm_(q_(h).view({T, heads_, headDim_})).transpose(0, 1), in.cos, in.sin);
    at::Tensor K, V;
    if (kvSource_ >= 0) {  // HF: shared_kv_states[layer_type], the source layer's keys and values
        std::tie(K, V) = kv.at(static_cast<std::size_t>(kvSource_));
        if (!K.defined())
            throw Error("Gemma 4 layer " + std::to_string(l) + " shares the keys of layer " + std::to_string(kvSource_) +
                        ", which has not run");
    } else {
        const auto kRaw = k_(h).view({T, kvHeads_, headDim_});
        const auto vRaw = v_.weight.defined() ? v_(h).view({T, kvHeads_, headDim_}) : kRaw;
        const auto k = RotaryEmbedding::apply(kNorm_(kRaw).transpose(0, 1), in.cos, in.sin);
        const auto v = vNorm_(vRaw).transpose(0, 1);
        std::tie(K, V) = in.staticShapes ? cache.writeRows(static_cast<std::size_t>(l), k, v, in.positions)
                                         : cache.append(static_cast<std::size_t>(l), k, v);
    }
    kv.at(static_cast<std::size_t>(l)) = {K, V};
    const auto attn = compat::attention(q, K, V, in.visible, /*scale=*/1.0);  // [Hq, T, D]
    auto x = xIn + postAttnNorm_(o_(attn.transpose(0, 1).reshape({T, heads_ * headDim_})));

    const auto residual = x;
    const auto hn = preFfNorm_(x);
    auto m = down_(geluTanh(gate_(hn)) * up_(hn));
    if (moe_) m = postFfNorm1_(m) + (*moe_)(residual, chosen);
    x = residual + postFfNorm_(m);
    if (pleGate_.weight.defined()) {
        const auto p = pleProjection_(geluTanh(pleGate_(x)) * in.perLayerInput);
        x = x + plePostNorm_(p);
    }
    return x * layerScalar_;
}

void Gemma4PerLayerInputs::specs(std::vector<TensorSpec>& s, const TransformerConfig& c) {
    const auto& g = c.gemma4;
    if (!g.perLayerInputSize) return;
    const auto& p = c.weightPrefix;
    const auto LP = c.numLayers * g.perLayerInputSize;
    s.push_back({p + "embed_tokens_per_layer.weight", {g.perLayerVocabSize, LP}});
    s.push_back({p + "per_layer_model_projection.weight", {LP, c.hiddenSize}});
    s.push_back({p + "per_layer_projection_norm.weight", {g.perLayerInputSize}});
}

Gemma4PerLayerInputs Gemma4PerLayerInputs::load(const LoadTarget& lt, const TransformerConfig& c) {
    Gemma4PerLayerInputs p;
    const auto& w = c.weightPrefix;
    p.table_ = lt.get(w + "embed_tokens_per_layer.weight");
    p.projection_ = lt.get(w + "per_layer_model_projection.weight");
    p.norm_ = gemma4Norm(lt, w + "per_layer_projection_norm.weight", c.rmsNormEps);
    p.layers_ = c.numLayers;
    p.size_ = c.gemma4.perLayerInputSize;
    p.hidden_ = c.hiddenSize;
    return p;
}

at::Tensor Gemma4PerLayerInputs::operator()(const at::Tensor& ids, const at::Tensor& e) const {
    const auto T = ids.size(0);
    if (T > 0) {
        const auto maxId = ids.max().item<std::int64_t>();
        if (maxId >= table_.size(0))
            throw Error("token id " + std::to_string(maxId) + " is outside Gemma 4's per-layer input vocabulary (" +
                        std::to_string(table_.size(0)) + " rows of embed_tokens_per_layer)");
    }
    // HF Gemma4TextScaledWordEmbedding: the float32 scale cast to the weight's dtype first.
    const auto scale = at::scalar_tensor(std::sqrt(static_cast<double>(size_)), at::TensorOptions().dtype(at::kFloat))
                           .to(table_.scalar_type()).to(table_.device());
    const auto tokens = (at::embedding(table_, ids) * scale).view({T, layers_, size_});
    auto projected = at::linear(e, projection_) * std::pow(static_cast<double>(hidden_), -0.5);
    projected = norm_(projected.view({T, layers_, size_}));
    return (projected + tokens) * std::pow(2.0, -0.5);
}

}  // namespace draftscope
