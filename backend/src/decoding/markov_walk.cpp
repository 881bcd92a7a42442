#include "decoding/markov_walk.h"

#include "decoding/sampling.h"

namespace draftscope {

MarkovChoice markovWalk(const DFlashDrafter& drafter, const at::Tensor& hidden, const at::Tensor& logits,
                        std::int64_t anchor, const RunSettings& settings, bool sample, at::Generator& gen) {
    const auto D = logits.size(0);
    const auto* head = drafter.markov();
    const auto longOpts = at::TensorOptions().dtype(at::kLong).device(logits.device());
    MarkovChoice c;
    std::vector<at::Tensor> rows, probs, picked, embeds;
    // prev stays on the device: a greedy walk never waits for the host.
    at::Tensor prev = at::full({1}, anchor, longOpts);
    for (std::int64_t j = 0; j < D; ++j) {
        auto row = logits.narrow(0, j, 1);
        if (head) {
            const auto e = head->embed(prev.to(hidden.device()));  // [1, r]
            embeds.push_back(e);
            row = row + drafter.markovBias(e).to(row.device());
        }
        at::Tensor token;
        if (sample) {
            const auto q = samplingProbs(row, settings);  // [1, V] host
            probs.push_back(q);
            token = at::multinomial(q, 1, false, gen).squeeze(-1).to(logits.device());
        } else {
            token = row.argmax(-1);
        }
        rows.push_back(row);
        picked.push_back(token);
        prev = token;
    }
    c.path = D ? at::cat(picked) : at::empty({0}, longOpts);
    c.logits = D ? at::cat(rows) : logits;
    if (sample && D) c.q = at::cat(probs);
    if (const auto* conf = drafter.confidence(); conf && D) {
        const auto e = head ? at::cat(embeds) : at::Tensor();
        c.confidence = conf->probability(hidden, e);
    }
    return c;
}

}  // namespace draftscope
