#include "models/layers.h"

#include "checkpoints/weight_loader.h"
#include "core/torch_compat.h"
#include "draftscope/errors.h"
#include "kernels/fused_ops.h"
#include "models/gated_deltanet.h"

#include <atomic>
#include <cmath>

namespace draftscope {

at::Tensor LoadTarget::get(const std::string& name) const { return weights.load(name, dtype, device); }

at::Tensor RmsNorm::operator()(const at::Tensor& x) const {
    if (weightFirst) {  // HF GptOssRMSNorm: (weight * (x_f32 * rsqrt(var + eps))).to(dtype)
        const auto xf = x.to(at::kFloat);
        const auto var = xf.pow(2).mean(-1, /*keepdim=*/true);
        // HF Gemma4RMSNorm: x_f32 * pow(var + eps, -0.5) [* weight.float()], then the cast.
        const auto normed = xf * (powHalf ? at::pow(var + eps, -0.5) : at::rsqrt(var + eps));
        return (weight.defined() ? normed * weight.to(at::kFloat) : normed).to(x.scalar_type());
    }
    if (auto fused = kernels::rmsNorm(x, weight, eps, zeroCentered)) return *fused;
    if (!zeroCentered)
        if (auto fused = compat::fusedRmsNorm(x, weight, eps)) return *fused;
    const auto xf = x.to(at::kFloat);
    const auto var = xf.pow(2).mean(-1, /*keepdim=*/true);
    if (zeroCentered)  // HF Qwen3_5RMSNorm: (x * (1 + w.float())).type_as(x)
        return (xf * at::rsqrt(var + eps) * (1.0 + weight.to(at::kFloat))).to(x.scalar_type());
    return weight * (xf * at::rsqrt(var + eps)).to(x.scalar_type());
}

at::Tensor RmsNorm::normRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const {
    if (!weightFirst)
        if (auto fused = kernels::rmsNormRotary(x, weight, eps, zeroCentered, cos, sin)) return *fused;
    return RotaryEmbedding::apply((*this)(x).transpose(0, 1), cos, sin);
}

std::pair<at::Tensor, at::Tensor> RmsNorm::addNorm(const at::Tensor& x, const at::Tensor& delta) const {
    if (!weightFirst)
        if (auto fused = kernels::addRmsNorm(x, delta, weight, eps, zeroCentered)) return *fused;
    auto sum = x + delta;
    auto normed = (*this)(sum);
    return {std::move(sum), std::move(normed)};
}

at::Tensor Linear::operator()(const at::Tensor& x) const { return at::linear(x, weight, bias); }

at::Tensor SwiGluMlp::operator()(const at::Tensor& x) const {
    if (gateUp.defined()) {
        const auto gu = at::linear(x, gateUp);
        const auto I = gateUp.size(0) / 2;
        return down(at::silu(gu.narrow(-1, 0, I)) * gu.narrow(-1, I, I));
    }
    return down(at::silu(gate(x)) * up(x));
}

SwiGluMlp SwiGluMlp::load(const LoadTarget& lt, const std::string& p) {
    SwiGluMlp m{{lt.get(p + "gate_proj.weight"), {}},
                {lt.get(p + "up_proj.weight"), {}},
                {lt.get(p + "down_proj.weight"), {}},
                {}};
    if (compat::fastKernels(lt.device, lt.dtype)) {
        m.gateUp = at::cat({m.gate.weight, m.up.weight}, 0);
        const auto I = m.gate.weight.size(0);
        m.gate.weight = m.gateUp.narrow(0, 0, I);
        m.up.weight = m.gateUp.narrow(0, I, I);
    }
    return m;
}

void SwiGluMlp::specs(std::vector<TensorSpec>& out, const std::string& p, std::int64_t h,
                      std::int64_t i) {
    out.push_back({p + "gate_proj.weight", {i, h}});
    out.push_back({p + "up_proj.weight", {i, h}});
    out.push_back({p + "down_proj.weight", {h, i}});
}

RotaryEmbedding::RotaryEmbedding(const RopeConfig& rope, std::int64_t headDim, const at::Device& device,
                                 std::optional<at::ScalarType> invFreqStorage) {
    if (rope.type == "proportional") {
        // HF _compute_proportional_rope_parameters: rope_angles = int(p * head_dim // 2)
        // frequencies 1 / base ** (arange(0, 2 * rope_angles, 2) / head_dim), then zeros (pairs
        // left unrotated) up to head_dim / 2, all divided by factor; rotate-half spans the head.
        if (headDim <= 0 || headDim % 2)
            throw Error("proportional rotary embedding needs an even head dimension, found " + std::to_string(headDim));
        const auto angles = static_cast<std::int64_t>(std::floor(rope.partialRotaryFactor * static_cast<double>(headDim) / 2.0));
        const auto exponent = at::arange(0, 2 * angles, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                              static_cast<double>(headDim);
        auto invFreq = at::cat({1.0 / at::pow(rope.theta, exponent), at::zeros({headDim / 2 - angles}, at::kFloat)});
        invFreq = invFreq / rope.factor;
        if (invFreqStorage) invFreq = invFreq.to(*invFreqStorage).to(at::kFloat);
        invFreq_ = invFreq.to(device);
        return;
    }
    std::int64_t dim = static_cast<std::int64_t>(static_cast<double>(headDim) * rope.partialRotaryFactor);
    dim -= dim % 2;
    if (dim <= 0) throw Error("rotary dimension is zero (head_dim " + std::to_string(headDim) + ")");
    // HF: 1 / base ** (arange(0, dim, 2).float() / dim), in float32.
    auto exponent = at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                    static_cast<double>(dim);
    auto invFreq = 1.0 / at::pow(rope.theta, exponent);
    if (rope.type == "linear") {
        invFreq = invFreq / rope.factor;
    } else if (rope.type == "llama3") {
        // HF _compute_llama3_parameters.
        const double oldLen = static_cast<double>(rope.originalMaxPositions);
        const double lowWavelen = oldLen / rope.lowFreqFactor;
        const double highWavelen = oldLen / rope.highFreqFactor;
        const auto wavelen = 2.0 * M_PI / invFreq;
        auto scaled = at::where(wavelen > lowWavelen, invFreq / rope.factor, invFreq);
        const auto smooth = (oldLen / wavelen - rope.lowFreqFactor) / (rope.highFreqFactor - rope.lowFreqFactor);
        const auto smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
        const auto medium = (wavelen >= highWavelen).logical_and(wavelen <= lowWavelen);
        invFreq = at::where(medium, smoothed, scaled);
    } else if (rope.type == "yarn") {
        // HF _compute_yarn_parameters, float32 as there: blend the interpolated (1/(f*pos))
        // and extrapolated (1/pos) frequencies with a linear ramp over [low, high].
        const auto y = yarnParameters(rope, headDim);
        const auto posFreqs = at::pow(rope.theta, exponent);
        const auto extrapolated = 1.0 / posFreqs;
        const auto interpolated = 1.0 / (rope.factor * posFreqs);
        const auto ramp = ((at::arange(dim / 2, at::TensorOptions().dtype(at::kFloat)) - y.low) / (y.high - y.low))
                              .clamp(0, 1);
        const auto extrapolationFactor = 1 - ramp;
        invFreq = interpolated * (1 - extrapolationFactor) + extrapolated * extrapolationFactor;
        attentionFactor_ = y.attentionFactor;
    }
    if (invFreqStorage) invFreq = invFreq.to(*invFreqStorage).to(at::kFloat);
    invFreq_ = invFreq.to(device);
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::cosSin(const at::Tensor& positions,
                                                          at::ScalarType dtype) const {
    const auto freqs = at::outer(positions.to(at::kFloat), invFreq_);  // [T, dim/2]
    const auto emb = at::cat({freqs, freqs}, -1);
    if (attentionFactor_ != 1.0)  // HF: cos/sin scaled by attention_scaling in float32, then cast
        return {(emb.cos() * attentionFactor_).to(dtype), (emb.sin() * attentionFactor_).to(dtype)};
    return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

at::Tensor RotaryEmbedding::apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    const auto rot = cos.size(-1);
    const auto head = x.size(-1);
    if (rot == head && compat::fastKernels(x)) {
        // x*cos + [-x2 | x1]*sin == x*cos + [x2 | x1]*[-sin_a | sin_b]: three kernels
        // instead of five. The signed sin is made once per sin tensor (a forward passes the
        // same cos/sin to every layer; the drafter alternates two, hence two slots; a slot
        // holds its key tensor, so the identity cannot be reused while cached).
        thread_local at::Tensor keys[2], signedSin[2];
        thread_local int next = 0;
        int slot = -1;
        for (int i = 0; i < 2; ++i)
            if (keys[i].defined() && keys[i].unsafeGetTensorImpl() == sin.unsafeGetTensorImpl()) slot = i;
        const auto half = rot / 2;
        if (slot < 0) {
            slot = next;
            next = 1 - next;
            keys[slot] = sin;
            signedSin[slot] = at::cat({-sin.narrow(-1, 0, half), sin.narrow(-1, half, half)}, -1);
        }
        const auto swapped = at::cat({x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
        return at::addcmul(x * cos, swapped, signedSin[slot]);
    }
    auto xr = rot == head ? x : x.narrow(-1, 0, rot);
    const auto half = rot / 2;
    const auto x1 = xr.narrow(-1, 0, half);
    const auto x2 = xr.narrow(-1, half, half);
    auto rotated = xr * cos + at::cat({-x2, x1}, -1) * sin;
    if (rot == head) return rotated;
    return at::cat({rotated, x.narrow(-1, rot, head - rot)}, -1);
}

std::pair<at::Tensor, at::Tensor> KVCache::append(std::size_t layer, const at::Tensor& k, const at::Tensor& v) {
    auto& K = keys_.at(layer);
    auto& V = values_.at(layer);
    const auto need = length_ + k.size(1);
    if (!K.defined() || K.size(1) < need) {
        std::int64_t cap = K.defined() ? K.size(1) : 0;
        cap = std::max<std::int64_t>({need, 2 * cap, 256, reserved_});
        cap = (cap + 15) / 16 * 16;  // whole rows of a 16-aligned attention mask (writeRows)
        // Zeros, not garbage: a static-shape step attends over every row under a mask, and
        // an uninitialised NaN would survive an additive -inf mask.
        auto nk = at::zeros({k.size(0), cap, k.size(2)}, k.options());
        auto nv = at::zeros({v.size(0), cap, v.size(2)}, v.options());
        if (K.defined() && length_ > 0) {
            nk.narrow(1, 0, length_).copy_(K.narrow(1, 0, length_));
            nv.narrow(1, 0, length_).copy_(V.narrow(1, 0, length_));
        }
        K = nk;
        V = nv;
        static std::atomic<std::uint64_t> nextStorageId{1};
        storageId_ = nextStorageId++;
    }
    K.narrow(1, length_, k.size(1)).copy_(k);
    V.narrow(1, length_, v.size(1)).copy_(v);
    return {K.narrow(1, 0, need), V.narrow(1, 0, need)};
}

std::pair<at::Tensor, at::Tensor> KVCache::writeRows(std::size_t layer, const at::Tensor& k, const at::Tensor& v,
                                                     const at::Tensor& rows) {
    auto& K = keys_.at(layer);
    auto& V = values_.at(layer);
    if (!K.defined())
        throw Error("static-shape KV write into layer " + std::to_string(layer) + " before its storage exists");
    K.index_copy_(1, rows, k);
    V.index_copy_(1, rows, v);
    return {K, V};
}

std::int64_t KVCache::capacity() const {
    for (const auto& K : keys_)
        if (K.defined()) return K.size(1);
    return 0;
}

void KVCache::crop(std::int64_t length) {
    if (length > length_ || length < 0)
        throw Error("cannot crop a KV cache of " + std::to_string(length_) + " rows to " + std::to_string(length));
    if (length < length_ && hasLinearState()) linear_ = linearStatesAt(length);
    length_ = length;
}

std::vector<LinearAttentionState> KVCache::linearStatesAt(std::int64_t length) const {
    auto refuse = [&](const std::string& why) {
        return Error("cannot crop the cache of a hybrid target from " + std::to_string(length_) + " to " +
                     std::to_string(length) + " tokens: " + why + "; restore a snapshot taken before the "
                     "rejected tokens instead");
    };
    for (const auto& t : treeLinear_)
        if (t.recurrent.defined()) throw refuse("the last forward was a tree verification (commit a path)");
    std::vector<LinearAttentionState> out = linear_;
    for (std::size_t l = 0; l < linear_.size(); ++l) {
        if (!linear_[l].recurrent.defined()) continue;
        const auto& block = linear_[l].block;
        const std::int64_t before = block ? length_ - block->rows : length_;
        if (length < before)
            throw refuse("Gated DeltaNet state goes back only within the last forward on a cache (layer " +
                         std::to_string(l) + " can return to " + std::to_string(before) + " tokens at the earliest)");
        out[l] = blockPrefixState(*block, length - before);
    }
    return out;
}

void KVCache::clear() {
    length_ = 0;
    for (auto& s : linear_) s = {};
    clearTreeStates();
}

void KVCache::clearTreeStates() {
    for (auto& s : treeLinear_) s = {};
}

LinearAttentionState& KVCache::treeLinearState(std::size_t layer) {
    if (layer >= treeLinear_.size())
        throw Error("cache layer " + std::to_string(layer) + " out of range (" + std::to_string(treeLinear_.size()) +
                    " layers)");
    return treeLinear_[layer];
}

void KVCache::commitTreePath(std::int64_t prefix, const std::vector<std::int64_t>& rows, std::int64_t lastNode) {
    if (prefix > length_) throw Error("KV cache compaction prefix beyond cache length");
    std::vector<LinearAttentionState> adopted = linear_;
    for (std::size_t l = 0; l < linear_.size(); ++l) {
        if (!linear_[l].conv.defined() && !linear_[l].recurrent.defined()) continue;
        const auto& tree = treeLinear_[l];
        if (!tree.conv.defined() || !tree.recurrent.defined())
            throw Error("cannot commit a tree path: layer " + std::to_string(l) +
                        " holds Gated DeltaNet state but the last forward was not a tree verification");
        if (lastNode < 0 || lastNode >= tree.conv.size(0))
            throw Error("tree node " + std::to_string(lastNode) + " out of range (the last tree had " +
                        std::to_string(tree.conv.size(0)) + " nodes)");
        adopted[l] = {tree.conv[lastNode].contiguous(), tree.recurrent[lastNode].contiguous(), nullptr};
    }
    compactRows(prefix, rows);
    linear_ = std::move(adopted);
    clearTreeStates();
}

LinearAttentionState& KVCache::linearState(std::size_t layer) {
    if (layer >= linear_.size())
        throw Error("cache layer " + std::to_string(layer) + " out of range (" + std::to_string(linear_.size()) +
                    " layers)");
    return linear_[layer];
}

std::pair<at::Tensor, at::Tensor> KVCache::rows(std::size_t layer) const {
    if (layer >= keys_.size())
        throw Error("cache layer " + std::to_string(layer) + " out of range (" + std::to_string(keys_.size()) +
                    " layers)");
    const auto& K = keys_[layer];
    if (!K.defined()) return {};
    return {K.narrow(1, 0, length_), values_[layer].narrow(1, 0, length_)};
}

bool KVCache::hasLinearState() const {
    for (const auto& s : linear_)
        if (s.conv.defined() || s.recurrent.defined()) return true;
    return false;
}

void KVCache::restore(const Snapshot& s) {
    if (s.length > length_ || s.length < 0)
        throw Error("cannot restore a cache snapshot of " + std::to_string(s.length) + " tokens into a cache of " +
                    std::to_string(length_) + " tokens (the snapshot is not from this cache)");
    if (s.linear.size() != linear_.size())
        throw Error("cannot restore a cache snapshot of " + std::to_string(s.linear.size()) +
                    " layers into a cache of " + std::to_string(linear_.size()) + " layers");
    length_ = s.length;
    linear_ = s.linear;
    clearTreeStates();
}

void KVCache::compact(std::int64_t prefix, const std::vector<std::int64_t>& rows) {
    if (prefix > length_) throw Error("KV cache compaction prefix beyond cache length");
    if (hasLinearState())
        throw Error("cannot compact the cache of a hybrid target with compact(): its Gated DeltaNet state "
                    "must follow the path too (use commitTreePath)");
    compactRows(prefix, rows);
}

void KVCache::compactRows(std::int64_t prefix, const std::vector<std::int64_t>& rows) {
    if (!rows.empty()) {
        const auto idx = at::tensor(rows, at::TensorOptions().dtype(at::kLong));
        for (std::size_t l = 0; l < keys_.size(); ++l) {
            if (!keys_[l].defined()) continue;
            const auto i = idx.to(keys_[l].device());
            const auto k = keys_[l].index_select(1, i);
            const auto v = values_[l].index_select(1, i);
            keys_[l].narrow(1, prefix, k.size(1)).copy_(k);
            values_[l].narrow(1, prefix, v.size(1)).copy_(v);
        }
    }
    length_ = prefix + static_cast<std::int64_t>(rows.size());
}

}  // namespace draftscope
