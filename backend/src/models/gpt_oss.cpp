#include "models/gpt_oss.h"

#include "checkpoints/mxfp4.h"
#include "checkpoints/weight_loader.h"
#include "draftscope/errors.h"

#include <algorithm>
#include <limits>

namespace draftscope {

namespace {
/// Query rows per chunk so that one chunk's float32 logits stay near 2^27 values (512 MiB).
std::int64_t queryChunk(std::int64_t heads, std::int64_t keys) {
    return std::max<std::int64_t>(1, (std::int64_t(1) << 27) / std::max<std::int64_t>(1, heads * keys));
}
}  // namespace

at::Tensor sinkAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& visible, double scale, const at::Tensor& sinks) {
    const auto Hq = q.size(0), T = q.size(1), D = q.size(2), Hkv = k.size(0), S = k.size(1);
    const auto g = Hq / Hkv;
    const auto kf = k.to(at::kFloat).transpose(1, 2);  // [Hkv, D, S]
    const auto vf = v.to(at::kFloat);
    const auto sinkCol = sinks.to(q.device(), at::kFloat).view({Hq, 1, 1});
    const auto chunk = queryChunk(Hq, S);
    std::vector<at::Tensor> parts;
    for (std::int64_t r0 = 0; r0 < T; r0 += chunk) {
        const auto n = std::min(chunk, T - r0);
        const auto qf = q.narrow(1, r0, n).to(at::kFloat).reshape({Hkv, g * n, D});
        auto logits = (at::matmul(qf, kf) * scale).view({Hq, n, S});
        if (visible)
            logits = logits.masked_fill(visible->narrow(0, r0, n).logical_not().unsqueeze(0),
                                        -std::numeric_limits<float>::infinity());
        auto combined = at::cat({logits, sinkCol.expand({Hq, n, 1})}, -1);
        combined = combined - std::get<0>(combined.max(-1, /*keepdim=*/true));
        const auto probs = at::softmax(combined, -1).narrow(-1, 0, S);  // the sink column dropped
        parts.push_back(at::matmul(probs.reshape({Hkv, g * n, S}), vf).view({Hq, n, D}));
    }
    const auto out = parts.size() == 1 ? parts[0] : at::cat(parts, 1);
    return out.to(q.scalar_type());
}

void GptOssMoe::specs(std::vector<TensorSpec>& s, const std::string& p, const TransformerConfig& c,
                      ExpertLayout layout) {
    const auto E = c.moe.numExperts, I = c.moe.expertIntermediateSize, H = c.hiddenSize;
    s.push_back({p + "router.weight", {E, H}});
    s.push_back({p + "router.bias", {E}});
    const auto ep = p + "experts.";
    if (layout == ExpertLayout::Mxfp4) {
        s.push_back({ep + "gate_up_proj_blocks", {E, 2 * I, H / 32, 16}, false, true});
        s.push_back({ep + "gate_up_proj_scales", {E, 2 * I, H / 32}, false, true});
        s.push_back({ep + "down_proj_blocks", {E, H, I / 32, 16}, false, true});
        s.push_back({ep + "down_proj_scales", {E, H, I / 32}, false, true});
    } else {
        s.push_back({ep + "gate_up_proj", {E, H, 2 * I}});
        s.push_back({ep + "down_proj", {E, I, H}});
    }
    s.push_back({ep + "gate_up_proj_bias", {E, 2 * I}});
    s.push_back({ep + "down_proj_bias", {E, H}});
}

GptOssMoe GptOssMoe::load(const LoadTarget& lt, const std::string& p, const TransformerConfig& c,
                          ExpertLayout layout, bool unpack) {
    GptOssMoe m;
    m.topK_ = c.moe.numExpertsPerToken;
    m.dtype_ = lt.dtype;
    m.router_ = {lt.get(p + "router.weight"), lt.get(p + "router.bias")};
    const auto ep = p + "experts.";
    if (layout == ExpertLayout::Mxfp4) {
        auto packed = [&](const std::string& name) { return lt.weights.loadBytes(ep + name, lt.device); };
        m.gateUpBlocks_ = packed("gate_up_proj_blocks");
        m.gateUpScales_ = packed("gate_up_proj_scales");
        m.downBlocks_ = packed("down_proj_blocks");
        m.downScales_ = packed("down_proj_scales");
        checkMxfp4(m.gateUpBlocks_, m.gateUpScales_, ep + "gate_up_proj_blocks", lt.dtype);
        checkMxfp4(m.downBlocks_, m.downScales_, ep + "down_proj_blocks", lt.dtype);
        m.decodeTable_ = mxfp4PairTable(lt.device, lt.dtype);
        if (unpack) {  // [E, rows, cols] packed rows -> HF's [E, cols, rows], expert by expert
            const auto E = m.gateUpBlocks_.size(0);
            const auto first = m.expert(0);
            const auto opts = first.first.options();
            m.gateUp_ = at::empty({E, first.first.size(0), first.first.size(1)}, opts);
            m.down_ = at::empty({E, first.second.size(0), first.second.size(1)}, opts);
            for (std::int64_t e = 0; e < E; ++e) {
                const auto [g, d] = m.expert(e);
                m.gateUp_.select(0, e).copy_(g);
                m.down_.select(0, e).copy_(d);
            }
            m.gateUpBlocks_ = m.gateUpScales_ = m.downBlocks_ = m.downScales_ = at::Tensor();
        }
    } else {
        m.gateUp_ = lt.get(ep + "gate_up_proj");
        m.down_ = lt.get(ep + "down_proj");
    }
    m.gateUpBias_ = lt.get(ep + "gate_up_proj_bias");
    m.downBias_ = lt.get(ep + "down_proj_bias");
    return m;
}

std::pair<at::Tensor, at::Tensor> GptOssMoe::expert(std::int64_t e) const {
    if (!packed()) return {gateUp_.select(0, e), down_.select(0, e)};
    // Packed rows are the output features (HF transposes after dequantising).
    return {mxfp4Values(gateUpBlocks_.select(0, e), gateUpScales_.select(0, e), dtype_, decodeTable_).t(),
            mxfp4Values(downBlocks_.select(0, e), downScales_.select(0, e), dtype_, decodeTable_).t()};
}

at::Tensor GptOssMoe::operator()(const at::Tensor& x, at::Tensor* chosenOut) const {
    constexpr double kLimit = 7.0, kAlpha = 1.702;
    auto [top, chosen] = at::topk(router_(x), topK_, -1);  // [T, k], x's dtype
    const auto flatWeights = at::softmax(top, 1).reshape({-1});
    if (chosenOut) *chosenOut = chosen;

    auto out = at::zeros_like(x);
    forEachChosenExpert(chosen, router_.weight.size(0), [&](std::int64_t e, const at::Tensor& token, const at::Tensor& pos) {
        const auto [gateUp, down] = expert(e);
        const auto gu = at::matmul(x.index_select(0, token), gateUp) + gateUpBias_.select(0, e);
        const auto I = gu.size(-1) / 2;
        const auto gate = gu.slice(-1, 0, 2 * I, 2).clamp_max(kLimit);
        const auto up = gu.slice(-1, 1, 2 * I, 2).clamp(-kLimit, kLimit);
        const auto glu = gate * at::sigmoid(gate * kAlpha);
        auto h = at::matmul((up + 1) * glu, down) + downBias_.select(0, e);
        h = h * flatWeights.index_select(0, token * topK_ + pos).unsqueeze(-1);
        out.index_add_(0, token, h.to(out.scalar_type()));
    });
    return out;
}

}  // namespace draftscope
