#include "models/moe_mlp.h"

#include "checkpoints/weight_loader.h"
#include "draftscope/errors.h"

namespace draftscope {

namespace {
bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

ExpertLayout detectExpertLayout(const std::vector<std::string>& names, const std::string& prefix) {
    auto layout = ExpertLayout::PerExpert;
    for (const auto& n : names) {
        if (n.rfind(prefix + "layers.", 0) != 0) continue;
        if (endsWith(n, ".mlp.experts.gate_up_proj_blocks")) return ExpertLayout::Mxfp4;
        if (endsWith(n, ".mlp.experts.gate_up_proj")) layout = ExpertLayout::Fused;
    }
    return layout;
}

namespace {
void refuseMxfp4(const std::string& prefix, ExpertLayout layout) {
    if (layout == ExpertLayout::Mxfp4)
        throw Error("MoE block '" + prefix + "': MXFP4-packed experts (experts.gate_up_proj_blocks) are read for "
                    "gpt-oss targets only; this architecture's experts must be stored unquantised");
}
}  // namespace

void SparseMoeMlp::specs(std::vector<TensorSpec>& s, const std::string& p, std::int64_t H, const MoeConfig& moe,
                         ExpertLayout layout) {
    refuseMxfp4(p, layout);
    const auto E = moe.numExperts, I = moe.expertIntermediateSize;
    s.push_back({p + "gate.weight", {E, H}});
    if (layout == ExpertLayout::Fused) {
        s.push_back({p + "experts.gate_up_proj", {E, 2 * I, H}});
        s.push_back({p + "experts.down_proj", {E, H, I}});
    } else {
        for (std::int64_t e = 0; e < E; ++e) SwiGluMlp::specs(s, p + "experts." + std::to_string(e) + ".", H, I);
    }
    if (moe.sharedExpertIntermediateSize > 0) {
        SwiGluMlp::specs(s, p + "shared_expert.", H, moe.sharedExpertIntermediateSize);
        s.push_back({p + "shared_expert_gate.weight", {1, H}});
    }
}

SparseMoeMlp SparseMoeMlp::load(const LoadTarget& lt, const std::string& p, const MoeConfig& moe,
                                ExpertLayout layout) {
    if (moe.numExpertsPerToken < 1 || moe.numExpertsPerToken > moe.numExperts)
        throw Error("MoE block '" + p + "': num_experts_per_tok " + std::to_string(moe.numExpertsPerToken) +
                    " is not in 1..num_experts (" + std::to_string(moe.numExperts) + ")");
    SparseMoeMlp m;
    m.topK_ = moe.numExpertsPerToken;
    m.normTopk_ = moe.normTopkProb;
    m.router_ = {lt.get(p + "gate.weight"), {}};
    const auto E = moe.numExperts, I = moe.expertIntermediateSize;
    m.experts_.reserve(static_cast<std::size_t>(E));
    if (layout == ExpertLayout::Fused) {
        const auto gateUp = lt.get(p + "experts.gate_up_proj");  // [E, 2I, H]
        const auto down = lt.get(p + "experts.down_proj");       // [E, H, I]
        for (std::int64_t e = 0; e < E; ++e) {
            const auto gu = gateUp.select(0, e);
            m.experts_.push_back({{gu.narrow(0, 0, I), {}}, {gu.narrow(0, I, I), {}}, {down.select(0, e), {}}, {}});
        }
    } else {
        for (std::int64_t e = 0; e < E; ++e)
            m.experts_.push_back(SwiGluMlp::load(lt, p + "experts." + std::to_string(e) + "."));
    }
    if (moe.sharedExpertIntermediateSize > 0) {
        m.shared_ = SwiGluMlp::load(lt, p + "shared_expert.");
        m.sharedGate_ = {lt.get(p + "shared_expert_gate.weight"), {}};
    }
    return m;
}

void forEachChosenExpert(const at::Tensor& chosen, std::int64_t numExperts,
                         const std::function<void(std::int64_t, const at::Tensor&, const at::Tensor&)>& visit) {
    // Experts hit by any token, ascending (HF: one_hot(...).sum > 0 .nonzero()).
    const auto hit = at::bincount(chosen.reshape({-1}), {}, numExperts).nonzero().reshape({-1}).to(at::kCPU);
    const auto* hitIdx = hit.data_ptr<std::int64_t>();
    const auto chosenT = chosen.t();  // [k, T]: HF's expert_mask[e] is indexed [top-k position, token]
    for (std::int64_t i = 0; i < hit.numel(); ++i) {
        const auto where = at::nonzero(chosenT == hitIdx[i]);  // [n, 2]: (position, token), position-major
        visit(hitIdx[i], where.select(1, 1), where.select(1, 0));
    }
}

at::Tensor SparseMoeMlp::operator()(const at::Tensor& x, at::Tensor* chosenOut) const {
    const auto probs = at::softmax(router_(x), -1, at::kFloat);  // [T, E] float32
    auto [weights, chosen] = at::topk(probs, topK_, -1);           // [T, k]
    if (chosenOut) *chosenOut = chosen;
    if (normTopk_) weights = weights / weights.sum(-1, /*keepdim=*/true);
    const auto flatWeights = weights.reshape({-1});

    auto out = at::zeros_like(x);
    forEachChosenExpert(chosen, static_cast<std::int64_t>(experts_.size()),
                        [&](std::int64_t e, const at::Tensor& token, const at::Tensor& pos) {
                            auto h = experts_[static_cast<std::size_t>(e)](x.index_select(0, token));
                            h = h * flatWeights.index_select(0, token * topK_ + pos).unsqueeze(-1);  // float32 product
                            out.index_add_(0, token, h.to(out.scalar_type()));
                        });
    if (shared_) out = out + at::sigmoid(sharedGate_(x)) * (*shared_)(x);
    return out;
}

}  // namespace draftscope
