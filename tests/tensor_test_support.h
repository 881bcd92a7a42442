#pragma once
// Helpers for suites that test backend ops on ATen tensors directly (tst_layer_ops,
// tst_dflash2_parts): small float32 tensors and element-wise comparison with hand-computed
// values. Include torch headers before Qt ones (ATen uses `slots` as an identifier).

#include <ATen/ATen.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

namespace testsupport {

/// A float32 tensor of `shape` holding `v` (row-major).
inline at::Tensor f32(const std::vector<float>& v, at::IntArrayRef shape) {
    return at::tensor(v, at::TensorOptions().dtype(at::kFloat)).reshape(shape);
}

/// QVERIFY that `got` (any shape, flattened) equals `want` element for element within `tol`
/// relative (absolute below 1); names the first element that differs.
inline void expectNear(const at::Tensor& got, const std::vector<double>& want, double tol = 1e-6) {
    const auto g = got.to(at::kDouble).contiguous().reshape({-1});
    QCOMPARE(g.numel(), static_cast<std::int64_t>(want.size()));
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double v = g[static_cast<std::int64_t>(i)].item<double>();
        QVERIFY2(std::abs(v - want[i]) <= tol * std::max(1.0, std::abs(want[i])),
                 qPrintable(QString("element %1: got %2, expected %3").arg(i).arg(v, 0, 'g', 10).arg(want[i], 0, 'g', 10)));
    }
}

}  // namespace testsupport
