#include "models/gated_deltanet.h"

#include "checkpoints/weight_loader.h"
#include "draftscope/errors.h"
#include "kernels/fused_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace draftscope {

namespace {

/// HF `l2norm`: x * rsqrt(sum(x*x) + eps) over the last dim.
at::Tensor l2norm(const at::Tensor& x, double eps = 1e-6) {
    return x * at::rsqrt((x * x).sum(-1, /*keepdim=*/true) + eps);
}

/// Shared preamble of both rules: grouped q/k heads repeated to the value heads, every
/// input as float32 [heads, T, ...], q and k l2-normalised.
struct RuleInputs {
    at::Tensor q, k, v, g, beta;  // [H, T, D] / [H, T]
};
RuleInputs prepare(at::Tensor q, at::Tensor k, const at::Tensor& v, const at::Tensor& g, const at::Tensor& beta) {
    const auto hv = v.size(1);
    if (k.size(1) != hv) {
        q = q.repeat_interleave(hv / q.size(1), 1);
        k = k.repeat_interleave(hv / k.size(1), 1);
    }
    auto f = [](const at::Tensor& x) { return x.transpose(0, 1).to(at::kFloat).contiguous(); };
    RuleInputs r{f(q), f(k), f(v), f(g), f(beta)};
    r.q = l2norm(r.q);
    r.k = l2norm(r.k);
    return r;
}

/// The chunk rule's decays to the end of each chunk (HF: `k_i * (g[..., -1, None] - g).exp()`
/// and `g[..., -1].exp()`), from l2-normalised keys k [H, N, C, Dk] and the cumulative log
/// decays cum [H, N, C].
struct ChunkEndDecay {
    at::Tensor keys;   // [H, N, C, Dk]
    at::Tensor total;  // [H, N, 1, 1]
};
ChunkEndDecay decayToChunkEnd(const at::Tensor& k, const at::Tensor& cum) {
    const auto C = cum.size(-1);
    return {k * (cum.narrow(-1, C - 1, 1) - cum).exp().unsqueeze(-1),
            cum.select(-1, C - 1).exp().unsqueeze(-1).unsqueeze(-1)};
}

/// The state after chunk i (HF: `state * g[:, :, i, -1, None, None].exp() + k_i^T @ v_new`).
at::Tensor nextChunkState(const at::Tensor& state, const ChunkEndDecay& d, std::int64_t i, const at::Tensor& vNew) {
    return state * d.total.select(1, i) + at::matmul(d.keys.select(1, i).transpose(-1, -2), vNew);
}

}  // namespace

std::pair<at::Tensor, at::Tensor> deltaNetGates(const at::Tensor& a, const at::Tensor& b, const at::Tensor& aLog,
                                                const at::Tensor& dtBias) {
    if (auto fused = kernels::deltaNetGates(a, b, aLog, dtBias)) return *fused;
    return {-aLog.to(at::kFloat).exp() * at::softplus(a.to(at::kFloat) + dtBias), at::sigmoid(b)};
}

at::Tensor GatedRmsNorm::operator()(const at::Tensor& x, const at::Tensor& gate) const {
    if (auto fused = kernels::gatedRmsNorm(x, gate, weight, eps)) return *fused;
    const auto dtype = x.scalar_type();
    const auto xf = x.to(at::kFloat);
    const auto var = xf.pow(2).mean(-1, /*keepdim=*/true);
    auto h = weight * (xf * at::rsqrt(var + eps)).to(dtype);
    h = h * at::silu(gate.to(at::kFloat));
    return h.to(dtype);
}

std::pair<at::Tensor, at::Tensor> chunkGatedDeltaRule(const at::Tensor& qIn, const at::Tensor& kIn,
                                                      const at::Tensor& vIn, const at::Tensor& gIn,
                                                      const at::Tensor& betaIn, const at::Tensor& initial,
                                                      std::int64_t C, ChunkRuleTrace* trace) {
    const auto dtype = qIn.scalar_type();
    const auto T = vIn.size(0);
    const auto H = vIn.size(1), Dk = kIn.size(2), Dv = vIn.size(2);
    auto [q, k, v, decay, beta] = prepare(qIn, kIn, vIn, gIn, betaIn);
    q = q * std::pow(static_cast<double>(Dk), -0.5);

    const auto pad = (C - T % C) % C;
    if (pad > 0) {
        q = at::constant_pad_nd(q, {0, 0, 0, pad});
        k = at::constant_pad_nd(k, {0, 0, 0, pad});
        v = at::constant_pad_nd(v, {0, 0, 0, pad});
        beta = at::constant_pad_nd(beta, {0, pad});
        decay = at::constant_pad_nd(decay, {0, pad});
    }
    const auto N = (T + pad) / C;
    auto vBeta = v * beta.unsqueeze(-1);
    auto kBeta = k * beta.unsqueeze(-1);
    q = q.reshape({H, N, C, Dk});
    k = k.reshape({H, N, C, Dk});
    kBeta = kBeta.reshape({H, N, C, Dk});
    vBeta = vBeta.reshape({H, N, C, Dv});
    decay = decay.reshape({H, N, C});

    const auto upper = at::ones({C, C}, q.options().dtype(at::kBool)).triu(1);
    const auto cum = decay.cumsum(-1);  // [H, N, C]
    const auto pairwise = (cum.unsqueeze(-1) - cum.unsqueeze(-2))
                              .masked_fill(upper, -std::numeric_limits<double>::infinity())
                              .exp();  // [H, N, C, C]: exp(cum_i - cum_j), 0 above the diagonal
    const auto kT = k.transpose(-1, -2);
    const auto ut = at::matmul(kBeta, kT) * pairwise;
    const auto intra = at::matmul(q, kT) * pairwise;
    const auto decayedKBeta = kBeta * cum.exp().unsqueeze(-1);
    const auto newValues = at::linalg_solve_triangular(ut, vBeta, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
    const auto kCumDecay =
        at::linalg_solve_triangular(ut, decayedKBeta, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);

    at::Tensor state = initial.defined() ? initial.to(newValues.options())
                                         : at::zeros({H, Dk, Dv}, newValues.options());
    auto out = at::zeros_like(newValues);  // [H, N, C, Dv]
    q = q * cum.exp().unsqueeze(-1);
    if (trace) *trace = {T, C, {}, k, decay, {}};
    const auto end = decayToChunkEnd(k, cum);
    for (std::int64_t i = 0; i < N; ++i) {
        const auto vNew = newValues.select(1, i) - at::matmul(kCumDecay.select(1, i), state);
        const auto inter = at::matmul(q.select(1, i), state);
        out.select(1, i).copy_(inter + at::matmul(intra.select(1, i), vNew));
        if (trace) {
            trace->chunkStates.push_back(state);
            trace->newValues.push_back(vNew);
        }
        state = nextChunkState(state, end, i, vNew);
    }
    auto o = out.reshape({H, N * C, Dv}).narrow(1, 0, T).transpose(0, 1).contiguous().to(dtype);
    return {o, state};
}

at::Tensor chunkRuleStateAfter(const ChunkRuleTrace& t, std::int64_t n) {
    if (n < 1 || n > t.rows)
        throw Error("chunk rule: no state after " + std::to_string(n) + " of the traced run's " +
                    std::to_string(t.rows) + " tokens");
    const auto C = t.chunk;
    const auto c = (n - 1) / C;  // the chunk holding token n - 1
    const auto r = n - c * C;    // its rows kept
    // Rows [0, r) of chunk c, zero-padded to C rows as a run over n tokens pads them, as [H, 1, C, ...].
    auto keptRows = [&](const at::Tensor& x) {
        std::vector<std::int64_t> pad(static_cast<std::size_t>(2 * (x.dim() - 2)), 0);
        pad.push_back(0);
        pad.push_back(C - r);
        return at::constant_pad_nd(x.narrow(1, 0, r), pad).unsqueeze(1);
    };
    const auto cum = keptRows(t.logDecay.select(1, c)).cumsum(-1);  // [H, 1, C]
    const auto end = decayToChunkEnd(keptRows(t.keys.select(1, c)), cum);
    return nextChunkState(t.chunkStates[static_cast<std::size_t>(c)], end, 0,
                          keptRows(t.newValues[static_cast<std::size_t>(c)]).select(1, 0));
}

LinearAttentionState blockPrefixState(const DeltaNetBlockTrace& b, std::int64_t n) {
    if (n < 0 || n > b.rows)
        throw Error("Gated DeltaNet: no state after " + std::to_string(n) + " of the last forward's " +
                    std::to_string(b.rows) + " tokens");
    if (n == 0) return {b.convBefore, b.recurrentBefore, nullptr};
    const auto kernel = b.window.size(-1) - b.rows;
    LinearAttentionState s{b.window.narrow(-1, n, kernel).contiguous(), {}, nullptr};
    if (n == 1) {  // HF runs a single token on a cache with the recurrent rule
        auto first = [](const at::Tensor& x) { return x.narrow(0, 0, 1); };
        s.recurrent =
            recurrentGatedDeltaRule(first(b.q), first(b.k), first(b.v), first(b.g), first(b.beta), b.recurrentBefore)
                .second;
    } else {
        s.recurrent = chunkRuleStateAfter(b.chunk, n);
    }
    return s;
}

std::pair<at::Tensor, at::Tensor> recurrentGatedDeltaRule(const at::Tensor& qIn, const at::Tensor& kIn,
                                                          const at::Tensor& vIn, const at::Tensor& gIn,
                                                          const at::Tensor& betaIn, const at::Tensor& initial) {
    const auto dtype = qIn.scalar_type();
    const auto T = vIn.size(0);
    const auto H = vIn.size(1), Dk = kIn.size(2), Dv = vIn.size(2);
    auto [q, k, v, decay, beta] = prepare(qIn, kIn, vIn, gIn, betaIn);
    q = q / std::sqrt(static_cast<double>(Dk));
    at::Tensor state = initial.defined() ? initial.to(v.options()) : at::zeros({H, Dk, Dv}, v.options());
    auto out = at::zeros_like(v);  // [H, T, Dv]
    for (std::int64_t t = 0; t < T; ++t) {
        const auto qt = q.select(1, t), kt = k.select(1, t), vt = v.select(1, t);  // [H, D]
        state = state * decay.select(1, t).exp().unsqueeze(-1).unsqueeze(-1);
        const auto betaT = beta.select(1, t).unsqueeze(-1);
        const auto kvMem = (state * kt.unsqueeze(-1)).sum(-2);
        const auto delta = (vt - kvMem) * betaT;
        state = state + kt.unsqueeze(-1) * delta.unsqueeze(-2);
        out.select(1, t).copy_((state * qt.unsqueeze(-1)).sum(-2));
    }
    return {out.transpose(0, 1).contiguous().to(dtype), state};
}

void GatedDeltaNet::specs(std::vector<TensorSpec>& s, const std::string& p, const TransformerConfig& c) {
    const auto& la = c.linearAttention;
    const auto H = c.hiddenSize;
    const auto keyDim = la.numKeyHeads * la.keyHeadDim, valueDim = la.numValueHeads * la.valueHeadDim;
    const auto convDim = 2 * keyDim + valueDim;
    if (la.fusedProjections) {  // Qwen3-Next
        s.push_back({p + "in_proj_qkvz.weight", {2 * keyDim + 2 * valueDim, H}});
        s.push_back({p + "in_proj_ba.weight", {2 * la.numValueHeads, H}});
    } else {
        s.push_back({p + "in_proj_qkv.weight", {convDim, H}});
        s.push_back({p + "in_proj_z.weight", {valueDim, H}});
        s.push_back({p + "in_proj_b.weight", {la.numValueHeads, H}});
        s.push_back({p + "in_proj_a.weight", {la.numValueHeads, H}});
    }
    s.push_back({p + "conv1d.weight", {convDim, 1, la.convKernel}});
    s.push_back({p + "dt_bias", {la.numValueHeads}});
    s.push_back({p + "A_log", {la.numValueHeads}});
    s.push_back({p + "norm.weight", {la.valueHeadDim}});
    s.push_back({p + "out_proj.weight", {H, valueDim}});
}

GatedDeltaNet GatedDeltaNet::load(const LoadTarget& lt, const std::string& p, const TransformerConfig& c) {
    const auto& la = c.linearAttention;
    GatedDeltaNet m;
    if (la.fusedProjections) {
        // HF Qwen3NextGatedDeltaNet.fix_query_key_value_ordering: the output of in_proj_qkvz
        // is viewed as [Hk, 2 Dk + 2 r Dv] (r = Hv / Hk), each key head's group holding its
        // [q (Dk) | k (Dk) | v (r Dv) | z (r Dv)]; in_proj_ba as [Hk, 2 r], each group
        // [b (r) | a (r)]. Regrouping the weight rows into Qwen3.5's [q all | k all | v all],
        // z, b and a gives the same per-row dot products, so the rest of the mixer is shared.
        const auto Hk = la.numKeyHeads, Dk = la.keyHeadDim, Dv = la.valueHeadDim;
        const auto r = la.numValueHeads / Hk;
        const auto qkvz = lt.get(p + "in_proj_qkvz.weight");
        const auto H = qkvz.size(1);
        const auto g = qkvz.reshape({Hk, 2 * Dk + 2 * r * Dv, H});
        auto rows = [&](std::int64_t from, std::int64_t n) { return g.narrow(1, from, n).reshape({Hk * n, H}); };
        m.inQkv_ = {at::cat({rows(0, Dk), rows(Dk, Dk), rows(2 * Dk, r * Dv)}, 0).contiguous(), {}};
        m.inZ_ = {rows(2 * Dk + r * Dv, r * Dv).contiguous(), {}};
        const auto ba = lt.get(p + "in_proj_ba.weight").reshape({Hk, 2 * r, H});
        m.inB_ = {ba.narrow(1, 0, r).reshape({Hk * r, H}).contiguous(), {}};
        m.inA_ = {ba.narrow(1, r, r).reshape({Hk * r, H}).contiguous(), {}};
    } else {
        m.inQkv_ = {lt.get(p + "in_proj_qkv.weight"), {}};
        m.inZ_ = {lt.get(p + "in_proj_z.weight"), {}};
        m.inB_ = {lt.get(p + "in_proj_b.weight"), {}};
        m.inA_ = {lt.get(p + "in_proj_a.weight"), {}};
    }
    m.out_ = {lt.get(p + "out_proj.weight"), {}};
    m.convWeight_ = lt.get(p + "conv1d.weight");
    m.dtBias_ = lt.get(p + "dt_bias");
    m.aLog_ = lt.get(p + "A_log");
    m.norm_ = {lt.get(p + "norm.weight"), c.rmsNormEps};
    m.hk_ = la.numKeyHeads;
    m.hv_ = la.numValueHeads;
    m.dk_ = la.keyHeadDim;
    m.dv_ = la.valueHeadDim;
    m.kernel_ = la.convKernel;
    return m;
}

at::Tensor GatedDeltaNet::forward(const at::Tensor& x, LinearAttentionState& state) const {
    const auto T = x.size(0);
    const auto keyDim = hk_ * dk_, valueDim = hv_ * dv_;
    const auto convDim = 2 * keyDim + valueDim;
    const bool hasPrevious = state.conv.defined();
    if (hasPrevious != state.recurrent.defined())
        throw Error("inconsistent Gated DeltaNet cache state (conv and recurrent state must both be set or unset)");

    const auto mixed = inQkv_(x).transpose(0, 1);  // [conv_dim, T]
    const auto z = inZ_(x).reshape({T, hv_, dv_});
    const auto b = inB_(x);  // [T, Hv]
    const auto a = inA_(x);

    // Causal depthwise conv over [previous window | new tokens] (HF causal_conv1d_update for a
    // single cached token, update_conv_state + causal_conv1d_fn otherwise; same arithmetic).
    at::Tensor full;
    if (hasPrevious) {
        full = at::cat({state.conv, mixed}, -1);
    } else if (T < kernel_) {
        full = at::constant_pad_nd(mixed, {kernel_ - T, 0});  // HF pads the first window with zeros
    } else {
        full = mixed;
    }
    full = full.to(convWeight_.scalar_type());
    const auto len = full.size(-1);
    const std::vector<std::int64_t> one{1}, noPad{0}, causalPad{kernel_ - 1};
    const c10::optional<at::Tensor> noBias;
    at::Tensor conv;
    if (hasPrevious && T == 1) {
        conv = at::conv1d(full.unsqueeze(0), convWeight_, noBias, at::IntArrayRef(one), at::IntArrayRef(noPad),
                          at::IntArrayRef(one), convDim);
    } else {
        conv = at::conv1d(full.unsqueeze(0), convWeight_, noBias, at::IntArrayRef(one), at::IntArrayRef(causalPad),
                          at::IntArrayRef(one), convDim)
                   .narrow(-1, 0, len);
    }
    conv = at::silu(conv.squeeze(0)).narrow(-1, conv.size(-1) - T, T).to(x.scalar_type());  // [conv_dim, T]
    // HF keeps the last `kernel` columns of the window (inputs, not outputs) as conv state.
    const at::Tensor newConv = full.narrow(-1, len - kernel_, kernel_).contiguous();

    const auto qkv = conv.transpose(0, 1);  // [T, conv_dim]
    const auto q = qkv.narrow(1, 0, keyDim).reshape({T, hk_, dk_});
    const auto k = qkv.narrow(1, keyDim, keyDim).reshape({T, hk_, dk_});
    const auto v = qkv.narrow(1, 2 * keyDim, valueDim).reshape({T, hv_, dv_});
    const auto [g, beta] = deltaNetGates(a, b, aLog_, dtBias_);

    // On a cache, keep what rebuilds the state after any prefix of these tokens (KVCache::crop).
    std::shared_ptr<DeltaNetBlockTrace> block;
    if (hasPrevious) block = std::make_shared<DeltaNetBlockTrace>(
                         DeltaNetBlockTrace{T, state.conv, state.recurrent, full, q, k, v, g, beta, {}});
    auto [core, newState] = (hasPrevious && T == 1)
                                ? recurrentGatedDeltaRule(q, k, v, g, beta, state.recurrent)
                                : chunkGatedDeltaRule(q, k, v, g, beta, hasPrevious ? state.recurrent : at::Tensor(),
                                                      64, block ? &block->chunk : nullptr);
    state = {newConv, newState, std::move(block)};

    const auto normed = norm_(core.reshape({-1, dv_}), z.reshape({-1, dv_})).reshape({T, valueDim});
    return out_(normed);
}

at::Tensor GatedDeltaNet::forwardTree(const at::Tensor& x, const std::vector<int>& parents,
                                      const LinearAttentionState& committed, LinearAttentionState& perNode) const {
    const auto N = x.size(0);
    if (static_cast<std::int64_t>(parents.size()) != N)
        throw Error("tree verification: " + std::to_string(parents.size()) + " parent indices for " +
                    std::to_string(N) + " tree rows");
    if (!committed.conv.defined() || !committed.recurrent.defined())
        throw Error("tree verification on a Gated DeltaNet layer needs the state of a committed prefix: run the "
                    "prompt first");
    std::vector<int> depth(static_cast<std::size_t>(N), 0);
    int maxDepth = 0;
    for (std::int64_t i = 0; i < N; ++i) {
        const int p = parents[static_cast<std::size_t>(i)];
        if (p < -1 || p >= i)
            throw Error("tree verification: row " + std::to_string(i) + " has parent " + std::to_string(p) +
                        "; parents must precede their children (-1 = the committed prefix)");
        depth[static_cast<std::size_t>(i)] = p < 0 ? 0 : depth[static_cast<std::size_t>(p)] + 1;
        maxDepth = std::max(maxDepth, depth[static_cast<std::size_t>(i)]);
    }
    const auto keyDim = hk_ * dk_, valueDim = hv_ * dv_;
    const auto convDim = 2 * keyDim + valueDim;
    const auto dev = x.device();
    const auto longOpts = at::TensorOptions().dtype(at::kLong);

    const auto mixed = inQkv_(x).transpose(0, 1);  // [conv_dim, N]
    const auto z = inZ_(x).reshape({N, hv_, dv_});
    const auto b = inB_(x);
    const auto a = inA_(x);

    // Conv window of row i: the last `kernel` inputs along its path. Columns of `table`:
    // [committed window (kernel) | tree rows (N)].
    const auto table = at::cat({committed.conv.to(mixed.scalar_type()), mixed}, -1);
    std::vector<std::int64_t> windowIdx(static_cast<std::size_t>(N * kernel_));
    for (std::int64_t i = 0; i < N; ++i) {
        std::int64_t node = i, fromPrefix = kernel_ - 1;
        for (std::int64_t c = kernel_ - 1; c >= 0; --c) {
            auto& slot = windowIdx[static_cast<std::size_t>(i * kernel_ + c)];
            if (node >= 0) {
                slot = kernel_ + node;
                node = parents[static_cast<std::size_t>(node)];
            } else {
                slot = fromPrefix--;
            }
        }
    }
    const auto windows = table.index_select(1, at::tensor(windowIdx, longOpts).to(dev))
                             .view({convDim, N, kernel_})
                             .permute({1, 0, 2})
                             .to(convWeight_.scalar_type())
                             .contiguous();  // [N, conv_dim, kernel]
    const std::vector<std::int64_t> one{1}, noPad{0};
    const c10::optional<at::Tensor> noBias;
    const auto conv = at::silu(at::conv1d(windows, convWeight_, noBias, at::IntArrayRef(one), at::IntArrayRef(noPad),
                                          at::IntArrayRef(one), convDim))
                          .squeeze(-1)
                          .to(x.scalar_type());  // [N, conv_dim]
    const auto q = conv.narrow(1, 0, keyDim).reshape({N, hk_, dk_});
    const auto k = conv.narrow(1, keyDim, keyDim).reshape({N, hk_, dk_});
    const auto v = conv.narrow(1, 2 * keyDim, valueDim).reshape({N, hv_, dv_});
    const auto [g, beta] = deltaNetGates(a, b, aLog_, dtBias_);

    // Recurrent rule depth by depth: the n rows of one depth are one token whose heads are
    // the n rows' heads, each starting from its parent's state.
    auto states = at::empty({N, hv_, dk_, dv_}, committed.recurrent.options().dtype(at::kFloat));
    auto core = at::empty({N, hv_, dv_}, x.options());
    for (int d = 0; d <= maxDepth; ++d) {
        std::vector<std::int64_t> rows;
        for (std::int64_t i = 0; i < N; ++i)
            if (depth[static_cast<std::size_t>(i)] == d) rows.push_back(i);
        const auto n = static_cast<std::int64_t>(rows.size());
        const auto rowIdx = at::tensor(rows, longOpts).to(dev);
        at::Tensor initial;
        if (d == 0) {
            initial = committed.recurrent.to(at::kFloat).unsqueeze(0).expand({n, hv_, dk_, dv_});
        } else {
            std::vector<std::int64_t> parentRows;
            for (auto i : rows) parentRows.push_back(parents[static_cast<std::size_t>(i)]);
            initial = states.index_select(0, at::tensor(parentRows, longOpts).to(dev));
        }
        auto pick = [&](const at::Tensor& t) { return t.index_select(0, rowIdx); };
        const auto [out, next] = recurrentGatedDeltaRule(
            pick(q).reshape({1, n * hk_, dk_}), pick(k).reshape({1, n * hk_, dk_}), pick(v).reshape({1, n * hv_, dv_}),
            pick(g).reshape({1, n * hv_}), pick(beta).reshape({1, n * hv_}), initial.reshape({n * hv_, dk_, dv_}));
        states.index_copy_(0, rowIdx, next.reshape({n, hv_, dk_, dv_}));
        core.index_copy_(0, rowIdx, out.reshape({n, hv_, dv_}).to(core.scalar_type()));
    }
    perNode.conv = windows;
    perNode.recurrent = states;

    const auto normed = norm_(core.reshape({-1, dv_}), z.reshape({-1, dv_})).reshape({N, valueDim});
    return out_(normed);
}

}  // namespace draftscope
