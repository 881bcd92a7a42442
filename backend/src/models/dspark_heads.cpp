#include "models/dspark_heads.h"

#include "checkpoints/weight_loader.h"

namespace draftscope {

MarkovHead::MarkovHead(const LoadTarget& lt)
    : w1_(lt.get("markov_head.markov_w1.weight")), w2_(lt.get("markov_head.markov_w2.weight")) {}

void MarkovHead::specs(std::vector<TensorSpec>& out, std::int64_t vocab, std::int64_t draftVocab, std::int64_t rank) {
    out.push_back({"markov_head.markov_w1.weight", {vocab, rank}});
    out.push_back({"markov_head.markov_w2.weight", {draftVocab, rank}});
}

at::Tensor MarkovHead::embed(const at::Tensor& prev) const { return at::embedding(w1_, prev); }

at::Tensor MarkovHead::bias(const at::Tensor& e) const { return at::linear(e.to(w2_.scalar_type()), w2_).to(at::kFloat); }

ConfidenceHead::ConfidenceHead(const LoadTarget& lt, bool withMarkov)
    : weight_(lt.get("confidence_head.proj.weight").to(at::kFloat)),
      bias_(lt.get("confidence_head.proj.bias").to(at::kFloat)),
      withMarkov_(withMarkov) {}

void ConfidenceHead::specs(std::vector<TensorSpec>& out, std::int64_t hidden, std::int64_t markovInput) {
    out.push_back({"confidence_head.proj.weight", {1, hidden + markovInput}});
    out.push_back({"confidence_head.proj.bias", {1}});
}

at::Tensor ConfidenceHead::probability(const at::Tensor& z, const at::Tensor& e) const {
    const auto f = withMarkov_ ? at::cat({z, e.to(z.scalar_type())}, -1) : z;
    return at::sigmoid(at::linear(f.to(at::kFloat), weight_, bias_).squeeze(-1));
}

}  // namespace draftscope
