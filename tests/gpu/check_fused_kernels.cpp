// Compares each fused CUDA kernel (backend/src/kernels) with the plain-op reference the model
// code runs without it (compat::setFastKernels(false)), on random CUDA inputs in bfloat16
// and float16, in the layouts the models pass (strided query views, partial rotary, heads
// first). Elementwise kernels must match bit for bit. The row-reduction kernels (the norms)
// sum a row in another order, so a float32 rounding may differ and flip the last bit of a
// rounded intermediate; one later rounding can add half a unit on either side: at most two
// units in the last place of the storage dtype (one where the flipped rounding is the last),
// on at most 1% of the elements. Units are relative to the reference value, or to a tenth of
// the tensor's RMS where the value is smaller (sums that cancel, as in the rotary). Prints one
// line per case; exit status 1 on any failure. Run on the GPU machine: tools/check_kernels.sh.

#include "core/torch_compat.h"
#include "kernels/fused_ops.h"
#include "models/gated_attention.h"
#include "models/gated_deltanet.h"
#include "models/layers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

using namespace draftscope;

namespace {

int failures = 0;

/// Explicit mantissa bits of `dtype`: 7 (bf16), 10 (fp16), 23 (float32).
int mantissaBits(at::ScalarType dtype) { return dtype == at::kBFloat16 ? 7 : dtype == at::kHalf ? 10 : 23; }

void compare(const std::string& name, const at::Tensor& fused, const at::Tensor& ref, double maxUlps,
             double maxDifferentShare) {
    bool ok = fused.sizes().equals(ref.sizes()) && fused.scalar_type() == ref.scalar_type();
    double same = 0, worst = 0;
    if (ok) {
        const auto f = fused.to(at::kDouble), r = ref.to(at::kDouble);
        same = (f == r).to(at::kDouble).mean().item<double>();
        // Differences in units in the last place of the dtype at the reference value (its
        // binade: 2^(floor(log2 |r|) - mantissa bits)), or at a tenth of the tensor's RMS where
        // |r| is smaller (values that cancel to near zero compare at the tensor's scale).
        const double floor = std::max(0.1 * r.pow(2).mean().sqrt().item<double>(), std::ldexp(1.0, -14));
        const auto scale = at::exp2(r.abs().clamp_min(floor).log2().floor() - mantissaBits(ref.scalar_type()));
        worst = ((f - r).abs() / scale).max().item<double>();
        ok = worst <= maxUlps && 1.0 - same <= maxDifferentShare && !f.isnan().any().item<bool>();
    }
    std::printf("%-4s %-58s identical %7.3f%%  max %.2f ulp  (allowed %.0f ulp, %.1f%% different)\n",
                ok ? "ok" : "FAIL", name.c_str(), 100.0 * same, worst, maxUlps, 100.0 * maxDifferentShare);
    if (!ok) ++failures;
}

/// Runs `fn` with the fused paths off (the plain-op reference).
template <typename F> auto reference(F fn) {
    compat::setFastKernels(false);
    auto r = fn();
    compat::setFastKernels(true);
    return r;
}

at::Tensor fusedOrFail(const std::string& name, const std::optional<at::Tensor>& t) {
    if (!t) {
        std::printf("FAIL %s: the fused kernel declined its input\n", name.c_str());
        ++failures;
        return {};
    }
    return *t;
}

void checkDtype(at::ScalarType dtype) {
    const auto opt = at::TensorOptions().device(at::kCUDA).dtype(dtype);
    const std::string d = dtype == at::kBFloat16 ? "bf16" : "fp16";
    at::manual_seed(1234);

    // Hidden-state norms: [T, 5120] rows (Qwen3.6-27B width), plain and (1 + w).
    for (bool centred : {false, true}) {
        const auto x = at::randn({16, 5120}, opt) * 3;
        const RmsNorm norm{at::randn({5120}, opt) * 0.2 + (centred ? 0.0 : 1.0), 1e-6, centred};
        const std::string name = d + (centred ? " RMSNorm (1 + w) [16, 5120]" : " RMSNorm [16, 5120]");
        const auto f = fusedOrFail(name, kernels::rmsNorm(x, norm.weight, norm.eps, centred));
        if (f.defined()) compare(name, f, reference([&] { return norm(x); }), centred ? 1 : 2, 0.01);
    }
    // Residual add + post-attention norm: the sum must be bit-identical (one rounding).
    for (bool centred : {false, true}) {
        const auto x = at::randn({16, 5120}, opt) * 3, delta = at::randn({16, 5120}, opt);
        const RmsNorm norm{at::randn({5120}, opt) * 0.2 + (centred ? 0.0 : 1.0), 1e-6, centred};
        const std::string name = d + (centred ? " residual add + RMSNorm (1 + w) [16, 5120]" : " residual add + RMSNorm [16, 5120]");
        if (auto f = kernels::addRmsNorm(x, delta, norm.weight, norm.eps, centred)) {
            const auto r = reference([&] { return norm.addNorm(x, delta); });
            compare(name + ": sum", f->first, r.first, 0, 0);
            compare(name + ": norm", f->second, r.second, centred ? 1 : 2, 0.01);
        } else {
            fusedOrFail(name, std::nullopt);
        }
    }
    // A strided view: the query half of a [T, H, 2D] projection.
    {
        const auto big = at::randn({16, 24, 512}, opt);
        const auto x = big.narrow(-1, 0, 256);
        const RmsNorm norm{at::randn({256}, opt) * 0.1, 1e-6, true};
        const std::string name = d + " RMSNorm (1 + w) strided [16, 24, 256 of 512]";
        const auto f = fusedOrFail(name, kernels::rmsNorm(x, norm.weight, norm.eps, true));
        if (f.defined()) compare(name, f, reference([&] { return norm(x); }), 1, 0.01);
    }
    // Rows whose mean square is near eps (tiny activations) and a large eps: eps must count.
    for (double eps : {1e-6, 0.1}) {
        const auto x = at::randn({16, 5120}, opt) * (eps < 0.01 ? 1e-3 : 0.3);
        const RmsNorm norm{at::randn({5120}, opt) * 0.2 + 1.0, eps, false};
        const std::string name = d + " RMSNorm, eps " + (eps < 0.01 ? "1e-6, rows of 1e-3" : "0.1");
        const auto f = fusedOrFail(name, kernels::rmsNorm(x, norm.weight, norm.eps, false));
        if (f.defined()) compare(name, f, reference([&] { return norm(x); }), 2, 0.01);
    }
    // Odd widths at each thread count threadsFor picks: 3 rows of 4099 (1024 threads per
    // row, a partial last pass), 64 rows (512), 512 rows (the width's own 256, as a prefill).
    for (std::int64_t rows : {3, 64, 512}) {
        const auto x = at::randn({rows, 4099}, opt) * 2;
        const RmsNorm norm{at::randn({4099}, opt) * 0.2 + 1.0, 1e-6, false};
        const std::string name = d + " RMSNorm [" + std::to_string(rows) + ", 4099]";
        const auto f = fusedOrFail(name, kernels::rmsNorm(x, norm.weight, norm.eps, false));
        if (f.defined()) compare(name, f, reference([&] { return norm(x); }), 2, 0.01);
    }
    // Widths that are not a multiple of the block (tails), a strided residual.
    {
        const auto x = at::randn({5, 37, 80}, opt), delta = at::randn({5, 37, 160}, opt).narrow(-1, 0, 80);
        const RmsNorm norm{at::randn({80}, opt) * 0.1, 1e-6, true};
        const std::string name = d + " residual add + RMSNorm (1 + w), D 80, strided delta";
        if (auto f = kernels::addRmsNorm(x, delta, norm.weight, norm.eps, true)) {
            const auto r = reference([&] { return norm.addNorm(x, delta); });
            compare(name + ": sum", f->first, r.first, 0, 0);
            compare(name + ": norm", f->second, r.second, 1, 0.01);
        } else {
            fusedOrFail(name, std::nullopt);
        }
    }
    // Per-head norm + rotary: Qwen3.5 gated attention (partial rotary 64 of 256, strided
    // queries) and dense Qwen3 (full rotary, plain w); the drafter's layout is the latter.
    struct RotCase { const char* what; std::int64_t T, H, D, rot, storedD; bool centred; };
    for (const auto& c : {RotCase{"Qwen3.5 q heads, rot 64 of 256, strided", 16, 24, 256, 64, 512, true},
                          RotCase{"Qwen3 k heads, rot 128 of 128", 16, 8, 128, 128, 128, false},
                          RotCase{"one token, rot 32 of 64", 1, 4, 64, 32, 64, false},
                          RotCase{"tails: 37 heads, rot 24 of 80", 5, 37, 80, 24, 96, true}}) {
        const auto x = at::randn({c.T, c.H, c.storedD}, opt).narrow(-1, 0, c.D);
        const auto theta = at::rand({c.T, c.rot}, opt.dtype(at::kFloat)) * 6.3;
        const auto cos = theta.cos().to(dtype), sin = theta.sin().to(dtype);
        const RmsNorm norm{at::randn({c.D}, opt) * 0.1 + (c.centred ? 0.0 : 1.0), 1e-6, c.centred};
        const std::string name = d + " RMSNorm + rotary: " + c.what;
        const auto f = fusedOrFail(name, kernels::rmsNormRotary(x, norm.weight, norm.eps, c.centred, cos, sin));
        if (f.defined()) compare(name, f, reference([&] { return norm.normRotary(x, cos, sin); }), 2, 0.01);
    }
    // Gated DeltaNet output norm: [T * Hv, Dv] with the z gate (64 threads per row); and 3
    // rows of 9000 (1024 threads, wider than the shared-memory norms take).
    for (const auto [rows, D] : {std::pair<std::int64_t, std::int64_t>{16 * 48, 128}, {3, 9000}}) {
        const auto x = at::randn({rows, D}, opt), z = at::randn({rows, D}, opt) * 2;
        const GatedRmsNorm norm{at::randn({D}, opt) * 0.2 + 1.0, 1e-6};
        const std::string name = d + " gated RMSNorm [" + std::to_string(rows) + ", " + std::to_string(D) + "]";
        const auto f = fusedOrFail(name, kernels::gatedRmsNorm(x, z, norm.weight, norm.eps));
        if (f.defined()) compare(name, f, reference([&] { return norm(x, z); }), 2, 0.01);
    }
    // Gated DeltaNet gates: a spans softplus's threshold (20) on both sides and reaches past
    // where exp overflows (88.7) and far below zero; 37 heads (a partial last block), a and b
    // strided views of one projection.
    {
        auto ab = at::randn({16, 2 * 37}, opt) * 12;
        ab = at::where(at::rand({16, 2 * 37}, opt) < 0.1, ab * 10, ab);  // some |a| of 100..500
        const auto a = ab.narrow(1, 0, 37), b = ab.narrow(1, 37, 37);
        const auto aLog = (at::rand({37}, opt.dtype(at::kFloat)) * 15 + 1).log().to(dtype);
        const auto dtBias = at::randn({37}, opt);
        const std::string name = d + " Gated DeltaNet gates [16, 37] strided";
        if (auto f = kernels::deltaNetGates(a, b, aLog, dtBias)) {
            const auto r = reference([&] { return deltaNetGates(a, b, aLog, dtBias); });
            compare(name + " g (float32)", f->first, r.first, 0, 0);
            compare(name + " beta", f->second, r.second, 0, 0);
        } else {
            fusedOrFail(name, std::nullopt);
        }
    }
    // Gated attention output: attn heads-first (transposed storage), gate a strided view.
    {
        const auto attn = at::randn({16, 24, 256}, opt).transpose(0, 1);  // [H, T, D], not contiguous
        const auto gate = (at::randn({16, 24, 512}, opt) * 3).narrow(-1, 256, 256);
        const std::string name = d + " sigmoid-gated heads [24, 16, 256]";
        const auto f = fusedOrFail(name, kernels::sigmoidGate(attn, gate));
        if (f.defined()) compare(name, f, reference([&] { return GatedAttention::gatedHeads(attn, gate); }), 0, 0);
    }
    // Declined inputs fall back to the reference: float32, CPU.
    if (kernels::rmsNorm(at::randn({4, 8}, opt.dtype(at::kFloat)), at::ones({8}, opt.dtype(at::kFloat)), 1e-6, false) ||
        kernels::rmsNorm(at::randn({4, 8}, at::TensorOptions().dtype(dtype)), at::ones({8}, at::TensorOptions().dtype(dtype)),
                         1e-6, false)) {
        std::printf("FAIL %s: a fused kernel accepted a float32 or CPU input\n", d.c_str());
        ++failures;
    }
}

}  // namespace

int main() {
    if (!kernels::built()) {
        std::printf("FAIL: this build has no fused kernels (configure with -DDRAFTSCOPE_CUDA_KERNELS=ON)\n");
        return 1;
    }
    if (!at::hasCUDA()) {
        std::printf("FAIL: no CUDA device\n");
        return 1;
    }
    compat::setFastKernels(true);
    checkDtype(at::kBFloat16);
    checkDtype(at::kHalf);
    std::printf("%s: %d failure(s)\n", failures == 0 ? "all fused kernels match the reference" : "FAILED", failures);
    return failures == 0 ? 0 : 1;
}
