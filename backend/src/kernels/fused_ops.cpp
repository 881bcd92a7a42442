#include "kernels/fused_ops.h"

#include "core/torch_compat.h"
#include "draftscope/errors.h"

#ifdef DRAFTSCOPE_CUDA_KERNELS
#include "kernels/fused_kernels.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace draftscope::kernels {

#ifndef DRAFTSCOPE_CUDA_KERNELS

bool built() { return false; }
std::optional<at::Tensor> rmsNorm(const at::Tensor&, const at::Tensor&, double, bool) { return std::nullopt; }
std::optional<std::pair<at::Tensor, at::Tensor>> addRmsNorm(const at::Tensor&, const at::Tensor&,
                                                            const at::Tensor&, double, bool) {
    return std::nullopt;
}
std::optional<at::Tensor> rmsNormRotary(const at::Tensor&, const at::Tensor&, double, bool, const at::Tensor&,
                                        const at::Tensor&) {
    return std::nullopt;
}
std::optional<at::Tensor> gatedRmsNorm(const at::Tensor&, const at::Tensor&, const at::Tensor&, double) {
    return std::nullopt;
}
std::optional<std::pair<at::Tensor, at::Tensor>> deltaNetGates(const at::Tensor&, const at::Tensor&,
                                                               const at::Tensor&, const at::Tensor&) {
    return std::nullopt;
}
std::optional<at::Tensor> sigmoidGate(const at::Tensor&, const at::Tensor&) { return std::nullopt; }

#else

namespace {

constexpr std::int64_t kMaxRow = 8192;  ///< the norm kernel keeps a row in shared memory (float32)
constexpr std::int64_t kMaxRows = 2147483647;  ///< one block per row: a grid's x dimension

/// DRAFTSCOPE_FUSED_KERNELS=0 turns the kernels off (the other fast paths stay): for
/// benchmarks of their gain (bench/run_hybrid.sh reports both).
const bool kEnabled = [] {
    const char* e = std::getenv("DRAFTSCOPE_FUSED_KERNELS");
    return !(e && std::string(e) == "0");
}();

/// The kernels' dtype for x, or nullopt where they do not apply to x.
std::optional<Dtype> usable(const at::Tensor& x) {
    if (!kEnabled || !x.defined() || !compat::fastKernels(x)) return std::nullopt;
    if (x.scalar_type() == at::kBFloat16) return Dtype::BFloat16;
    if (x.scalar_type() == at::kHalf) return Dtype::Half;
    return std::nullopt;
}

/// `t` is a [n] vector of `x`'s dtype on x's device, contiguous.
bool vectorLike(const at::Tensor& t, const at::Tensor& x, std::int64_t n) {
    return t.defined() && t.dim() == 1 && t.size(0) == n && t.is_contiguous() &&
           t.scalar_type() == x.scalar_type() && t.device() == x.device();
}

/// The rows of x viewed as [rows, last dim].
std::int64_t rowCount(const at::Tensor& x) { return x.numel() / std::max<std::int64_t>(x.size(-1), 1); }

/// The norm kernel takes x (one block per row, the row kept in shared memory) with `weight`
/// a [D] vector: rows up to kMaxRow wide, at most kMaxRows of them.
bool normFits(const at::Tensor& x, const at::Tensor& weight) {
    const auto D = x.size(-1);
    return D <= kMaxRow && vectorLike(weight, x, D) && rowCount(x) <= kMaxRows;
}

/// The stride between consecutive rows of x viewed as [rows, last dim], if one stride fits.
std::optional<std::int64_t> rowStride(const at::Tensor& x) {
    if (x.stride(-1) != 1) return std::nullopt;
    std::optional<std::int64_t> row;
    std::int64_t expected = 0;
    for (auto i = x.dim() - 2; i >= 0; --i) {
        if (x.size(i) == 1) continue;  // any stride
        if (row && x.stride(i) != expected) return std::nullopt;
        if (!row) row = x.stride(i);
        expected = x.stride(i) * x.size(i);
    }
    return row.value_or(x.size(-1));
}

void check(const std::string& error, const char* what) {
    if (!error.empty()) throw Error(std::string("fused CUDA kernel (") + what + "): " + error);
}

struct OnDevice {
    explicit OnDevice(const at::Tensor& x) : guard(x.device()) {}
    void* stream() const { return c10::cuda::getCurrentCUDAStream().stream(); }
    c10::cuda::CUDAGuard guard;
};

}  // namespace

bool built() { return true; }

std::optional<at::Tensor> rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps, bool zeroCentered) {
    const auto dtype = usable(x);
    if (!dtype || x.dim() < 1) return std::nullopt;
    const auto D = x.size(-1);
    if (!normFits(x, weight)) return std::nullopt;
    auto in = x;
    auto stride = rowStride(in);
    if (!stride) {
        in = x.contiguous();
        stride = D;
    }
    auto out = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
    const OnDevice on(x);
    NormLaunch p{*dtype, in.data_ptr(), rowCount(x), 1, D, *stride, 0,
                 weight.data_ptr(), static_cast<float>(eps), zeroCentered};
    p.out = out.data_ptr();
    if (D > 0) check(launchNorm(p, on.stream()), "RMSNorm");
    return out;
}

std::optional<std::pair<at::Tensor, at::Tensor>> addRmsNorm(const at::Tensor& x, const at::Tensor& delta,
                                                            const at::Tensor& weight, double eps, bool zeroCentered) {
    const auto dtype = usable(x);
    if (!dtype || x.dim() < 1 || !delta.defined() || !delta.sizes().equals(x.sizes()) ||
        delta.scalar_type() != x.scalar_type() || delta.device() != x.device())
        return std::nullopt;
    const auto D = x.size(-1);
    if (!normFits(x, weight)) return std::nullopt;
    auto in = x, add = delta;
    auto sx = rowStride(in), sd = rowStride(add);
    if (!sx) {
        in = x.contiguous();
        sx = D;
    }
    if (!sd) {
        add = delta.contiguous();
        sd = D;
    }
    const auto contiguous = x.options().memory_format(at::MemoryFormat::Contiguous);
    auto sum = at::empty(x.sizes(), contiguous), out = at::empty(x.sizes(), contiguous);
    const OnDevice on(x);
    NormLaunch p{*dtype, in.data_ptr(), rowCount(x), 1, D, *sx, 0,
                 weight.data_ptr(), static_cast<float>(eps), zeroCentered};
    p.out = out.data_ptr();
    p.residual = add.data_ptr();
    p.rA = *sd;
    p.sumOut = sum.data_ptr();
    if (D > 0) check(launchNorm(p, on.stream()), "residual add + RMSNorm");
    return std::make_pair(sum, out);
}

std::optional<at::Tensor> rmsNormRotary(const at::Tensor& x, const at::Tensor& weight, double eps,
                                        bool zeroCentered, const at::Tensor& cos, const at::Tensor& sin) {
    const auto dtype = usable(x);
    if (!dtype || x.dim() != 3 || x.stride(2) != 1) return std::nullopt;
    const auto T = x.size(0), H = x.size(1), D = x.size(2);
    if (D > kMaxRow || !vectorLike(weight, x, D) || T * H > kMaxRows || cos.dim() != 2 ||
        !cos.sizes().equals(sin.sizes()))
        return std::nullopt;
    const auto rot = cos.size(1);
    if (cos.size(0) != T || rot % 2 != 0 || rot > D || !cos.is_contiguous() || !sin.is_contiguous() ||
        cos.scalar_type() != x.scalar_type() || sin.scalar_type() != x.scalar_type() || cos.device() != x.device() ||
        sin.device() != x.device())
        return std::nullopt;
    auto out = at::empty({H, T, D}, x.options().memory_format(at::MemoryFormat::Contiguous));
    const OnDevice on(x);
    NormLaunch p{*dtype, x.data_ptr(), T, H, D, x.stride(0), x.stride(1), weight.data_ptr(), static_cast<float>(eps),
                 zeroCentered};
    p.cos = cos.data_ptr();
    p.sin = sin.data_ptr();
    p.rot = rot;
    p.headsFirst = true;
    p.out = out.data_ptr();
    if (D > 0) check(launchNorm(p, on.stream()), "RMSNorm + rotary");
    return out;
}

std::optional<at::Tensor> gatedRmsNorm(const at::Tensor& x, const at::Tensor& gate, const at::Tensor& weight,
                                       double eps) {
    const auto dtype = usable(x);
    if (!dtype || x.dim() != 2 || !gate.sizes().equals(x.sizes()) || gate.scalar_type() != x.scalar_type() ||
        gate.device() != x.device() || x.stride(1) != 1 || gate.stride(1) != 1)
        return std::nullopt;
    const auto N = x.size(0), D = x.size(1);
    if (N > kMaxRows || !vectorLike(weight, x, D)) return std::nullopt;  // no shared memory: any width
    auto out = at::empty({N, D}, x.options().memory_format(at::MemoryFormat::Contiguous));
    const OnDevice on(x);
    if (D > 0)
        check(launchGatedNorm(*dtype, x.data_ptr(), x.stride(0), gate.data_ptr(), gate.stride(0), weight.data_ptr(),
                              N, D, static_cast<float>(eps), out.data_ptr(), on.stream()),
              "gated RMSNorm");
    return out;
}

std::optional<std::pair<at::Tensor, at::Tensor>> deltaNetGates(const at::Tensor& a, const at::Tensor& b,
                                                               const at::Tensor& aLog, const at::Tensor& dtBias) {
    const auto dtype = usable(a);
    if (!dtype || a.dim() != 2 || !b.sizes().equals(a.sizes()) || b.scalar_type() != a.scalar_type() ||
        b.device() != a.device() || a.stride(1) != 1 || b.stride(1) != 1)
        return std::nullopt;
    const auto T = a.size(0), H = a.size(1);
    if (!vectorLike(aLog, a, H) || !vectorLike(dtBias, a, H) || T * H > 256 * kMaxRows) return std::nullopt;
    auto g = at::empty({T, H}, a.options().dtype(at::kFloat).memory_format(at::MemoryFormat::Contiguous));
    auto beta = at::empty({T, H}, a.options().memory_format(at::MemoryFormat::Contiguous));
    const OnDevice on(a);
    check(launchDeltaNetGates(*dtype, a.data_ptr(), a.stride(0), b.data_ptr(), b.stride(0), aLog.data_ptr(),
                              dtBias.data_ptr(), T, H, g.data_ptr<float>(), beta.data_ptr(), on.stream()),
          "Gated DeltaNet gates");
    return std::make_pair(g, beta);
}

std::optional<at::Tensor> sigmoidGate(const at::Tensor& attn, const at::Tensor& gate) {
    const auto dtype = usable(attn);
    if (!dtype || attn.dim() != 3 || gate.dim() != 3 || attn.stride(2) != 1 || gate.stride(2) != 1 ||
        gate.scalar_type() != attn.scalar_type() || gate.device() != attn.device())
        return std::nullopt;
    const auto H = attn.size(0), T = attn.size(1), D = attn.size(2);
    if (gate.size(0) != T || gate.size(1) != H || gate.size(2) != D || T * H > kMaxRows) return std::nullopt;
    auto out = at::empty({T, H * D}, attn.options().memory_format(at::MemoryFormat::Contiguous));
    const OnDevice on(attn);
    check(launchSigmoidGate(*dtype, attn.data_ptr(), attn.stride(0), attn.stride(1), gate.data_ptr(), gate.stride(0),
                            gate.stride(1), H, T, D, out.data_ptr(), on.stream()),
          "sigmoid gate");
    return out;
}

#endif

}  // namespace draftscope::kernels
