#include "models/dflash2_parts.h"

#include "checkpoints/weight_loader.h"
#include "draftscope/errors.h"

namespace draftscope {

at::Tensor DynamicCausalConv::convolve(const at::Tensor& x, const at::Tensor& dynamic, const at::Tensor& base,
                                       std::int64_t groupSize) {
    const auto L = x.size(0), H = x.size(1), K = base.size(0);
    const auto G = H / groupSize;
    const auto blocks = x.reshape({L, G, groupSize});
    const auto taps = dynamic.reshape({L, K, G, 1});
    auto out = at::zeros_like(blocks);
    for (std::int64_t k = 0; k < K; ++k) {
        // Row t reads row t - k; rows before the block's start are zero.
        at::Tensor values;
        if (k == 0) values = blocks;
        else if (k >= L) values = at::zeros_like(blocks);
        else values = at::cat({at::zeros({k, G, groupSize}, blocks.options()), blocks.narrow(0, 0, L - k)}, 0);
        const auto kernel = base.select(0, k).reshape({1, G, groupSize}).to(x.scalar_type());
        out = out + kernel * values;
        out = at::addcmul(out, taps.select(1, k), values);
    }
    return out.reshape({L, H});
}

std::pair<at::Tensor, at::Tensor> DynamicCausalConv::prepare(const at::Tensor& x) const {
    const auto L = x.size(0), K = baseKernel.size(1), G = x.size(1) / groupSize;
    const auto dynamic = projection(x).view({L, 2, K, G});
    return {convolve(x, dynamic.select(1, 0), baseKernel.select(0, 0), groupSize), dynamic.select(1, 1)};
}

at::Tensor DynamicCausalConv::finish(const at::Tensor& y, const at::Tensor& dynamic) const {
    return convolve(y, dynamic, baseKernel.select(0, 1), groupSize);
}

DynamicCausalConv DynamicCausalConv::load(const LoadTarget& lt, const std::string& prefix, std::int64_t groupSize) {
    return {lt.get(prefix + "base_kernel"), {lt.get(prefix + "kernel_projection.weight"), {}}, groupSize};
}

void DynamicCausalConv::specs(std::vector<TensorSpec>& out, const std::string& prefix, std::int64_t hidden,
                              std::int64_t kernelSize, std::int64_t groupSize) {
    out.push_back({prefix + "base_kernel", {2, kernelSize, hidden}});
    out.push_back({prefix + "kernel_projection.weight", {2 * kernelSize * (hidden / groupSize), hidden}});
}

std::string CandidateSelector::codebookName(const HasTensor& has, const std::string& which) {
    const auto bare = "candidate_selector." + which;
    return has && has(bare + ".weight") && !has(bare) ? bare + ".weight" : bare;
}

void CandidateSelector::specs(std::vector<TensorSpec>& out, const HasTensor& has, std::int64_t vocab,
                              std::int64_t hidden, std::int64_t rank) {
    out.push_back({codebookName(has, "predecessor_codebook"), {vocab, rank}});
    out.push_back({codebookName(has, "successor_codebook"), {vocab, rank}});
    out.push_back({"candidate_selector.hidden_projection.weight", {rank, hidden}});
}

CandidateSelector::CandidateSelector(const LoadTarget& lt, std::int64_t topK)
    : predecessor_(lt.get(codebookName([&](const std::string& n) { return lt.weights.has(n); }, "predecessor_codebook"))),
      successor_(lt.get(codebookName([&](const std::string& n) { return lt.weights.has(n); }, "successor_codebook"))),
      hiddenProjection_{lt.get("candidate_selector.hidden_projection.weight"), {}},
      topK_(topK) {}

SelectorChoice CandidateSelector::select(const at::Tensor& hidden, const at::Tensor& logits, std::int64_t anchor,
                                         double temperature, at::Generator* generator,
                                         const std::vector<std::int64_t>* follow) const {
    const auto D = hidden.size(0);
    if (logits.size(0) != D) throw Error("candidate selector: " + std::to_string(D) + " hidden rows but " +
                                         std::to_string(logits.size(0)) + " logit rows");
    if (anchor < 0 || anchor >= predecessor_.size(0))
        throw Error("candidate selector: anchor token " + std::to_string(anchor) + " is outside the codebooks' " +
                    std::to_string(predecessor_.size(0)) + " rows");
    if (temperature > 0 && !generator && !follow) throw Error("candidate selector: sampling needs a generator");
    if (follow && static_cast<std::int64_t>(follow->size()) != D)
        throw Error("candidate selector: a path of " + std::to_string(follow->size()) + " tokens for " +
                    std::to_string(D) + " block positions");
    SelectorChoice c;
    const auto top = logits.topk(topK_, -1, /*largest=*/true, /*sorted=*/true);
    const auto& unary = std::get<0>(top);  // [D, k]
    c.candidates = std::get<1>(top);
    const auto h = hiddenProjection_(hidden);  // [D, r]
    const auto dev = logits.device();
    auto predecessor = at::full({1}, anchor, at::TensorOptions().dtype(at::kLong).device(predecessor_.device()));
    std::vector<at::Tensor> path, index, scores, q;
    for (std::int64_t j = 0; j < D; ++j) {
        const auto cand = c.candidates.select(0, j);
        // pred[p_j] * h_j, dotted with succ[c] for every candidate c (reference einsum "br,bkr->bk").
        const auto weighted = predecessor_.index_select(0, predecessor) * h.narrow(0, j, 1);            // [1, r]
        const auto pairwise = at::matmul(weighted, successor_.index_select(0, cand.to(successor_.device())).t());  // [1, k]
        const auto s = unary.select(0, j) + pairwise.squeeze(0).to(at::kFloat).to(dev);               // [k]
        at::Tensor pick;
        at::Tensor qj;
        if (temperature > 0) {
            qj = at::softmax(s.to(at::kCPU) / temperature, -1);
            q.push_back(qj);
        }
        if (follow) {
            const auto token = (*follow)[static_cast<std::size_t>(j)];
            const auto hit = (cand == token).nonzero();
            if (hit.numel() == 0)
                throw Error("candidate selector: token " + std::to_string(token) + " at block position " +
                            std::to_string(j + 1) + " is not among its top-" + std::to_string(topK_) + " candidates");
            pick = hit.reshape({1});
        } else if (temperature > 0) {
            pick = at::multinomial(qj, 1, false, *generator).to(dev);
        } else {
            pick = s.argmax(-1, /*keepdim=*/true);
        }
        predecessor = cand.index_select(0, pick).to(predecessor_.device());
        path.push_back(cand.index_select(0, pick));
        index.push_back(pick);
        scores.push_back(s);
    }
    c.path = D ? at::cat(path) : at::empty({0}, c.candidates.options());
    c.index = D ? at::cat(index) : at::empty({0}, c.candidates.options());
    c.scores = D ? at::stack(scores) : at::empty({0, topK_}, unary.options());
    if (!q.empty()) c.q = at::stack(q);
    return c;
}

}  // namespace draftscope
