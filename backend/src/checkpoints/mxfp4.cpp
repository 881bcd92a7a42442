#include "checkpoints/mxfp4.h"

#include "draftscope/errors.h"

#include <cmath>
#include <limits>
#include <vector>

namespace draftscope {

const float kFp4E2M1Values[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                                  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

namespace {
std::string shapeOf(const at::Tensor& t) {
    std::string s = "[";
    for (std::int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

/// The largest finite value of `dtype` (float32, bfloat16, float16).
double largestFinite(at::ScalarType dtype) {
    if (dtype == at::kHalf) return 65504.0;
    if (dtype == at::kBFloat16) return 3.3895313892515355e38;
    return std::numeric_limits<float>::max();
}
}  // namespace

void checkMxfp4(const at::Tensor& blocks, const at::Tensor& scales, const std::string& name,
                at::ScalarType dtype) {
    const std::string where = "MXFP4 tensor '" + name + "'";
    if (blocks.scalar_type() != at::kByte || scales.scalar_type() != at::kByte)
        throw Error(where + ": blocks and scales must be uint8 (U8), found " +
                    std::string(c10::toString(blocks.scalar_type())) + " and " +
                    std::string(c10::toString(scales.scalar_type())));
    if (blocks.dim() < 2 || blocks.size(-1) != 16)
        throw Error(where + ": blocks must have shape [..., groups, 16] (32 fp4 values per block), found " +
                    shapeOf(blocks));
    if (scales.sizes() != blocks.sizes().slice(0, static_cast<std::size_t>(blocks.dim() - 1)))
        throw Error(where + ": scales have shape " + shapeOf(scales) + ", expected " +
                    shapeOf(blocks.narrow(-1, 0, 1).squeeze(-1)) + " (one per block of the blocks " +
                    shapeOf(blocks) + ")");
    // E8M0: 255 encodes NaN; a factor whose largest block value (6 x 2^e) exceeds the compute
    // dtype would turn weights into inf. Both are refused, naming the first such block.
    const auto exps = scales.to(at::kInt) - 127;
    const double maxExp = std::floor(std::log2(largestFinite(dtype) / 6.0));
    const auto bad = (scales == 255).logical_or(exps > static_cast<int>(maxExp)).reshape({-1});
    if (bad.any().item<bool>()) {
        const auto flat = bad.nonzero().index({0, 0}).item<std::int64_t>();
        std::vector<std::int64_t> index;
        auto rest = flat;
        for (std::int64_t d = scales.dim() - 1; d >= 0; --d) {
            index.insert(index.begin(), rest % scales.size(d));
            rest /= scales.size(d);
        }
        std::string idx;
        for (auto i : index) idx += (idx.empty() ? "" : ", ") + std::to_string(i);
        const auto s = scales.reshape({-1})[flat].item<int>();
        const auto suffix = std::string("_blocks");
        const bool named = name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
        const auto scalesName = named ? name.substr(0, name.size() - suffix.size()) + "_scales" : name + " scales";
        throw Error("MXFP4 scales '" + scalesName + "' (of '" + name + "'): block [" + idx + "] has scale " +
                    std::to_string(s) +
                    (s == 255 ? " (E8M0's NaN)" : " (factor 2^" + std::to_string(s - 127) + ", whose values overflow " +
                                                      std::string(c10::toString(dtype)) + ")"));
    }
}

at::Tensor mxfp4PairTable(const at::Device& device, at::ScalarType dtype) {
    static const std::vector<float> pairs = [] {
        std::vector<float> t(512);
        for (int b = 0; b < 256; ++b) {
            t[static_cast<std::size_t>(2 * b)] = kFp4E2M1Values[b & 0x0F];
            t[static_cast<std::size_t>(2 * b + 1)] = kFp4E2M1Values[b >> 4];
        }
        return t;
    }();
    return at::tensor(pairs, at::TensorOptions().dtype(at::kFloat)).view({256, 2}).to(device, dtype);
}

at::Tensor mxfp4Values(const at::Tensor& blocks, const at::Tensor& scales, at::ScalarType dtype,
                       const at::Tensor& pairTable) {
    // One gather per byte: row b of the table holds (value of the low nibble, of the high).
    const auto table = pairTable.defined() ? pairTable : mxfp4PairTable(blocks.device(), dtype);
    auto values = at::embedding(table, blocks.to(at::kInt)).flatten(-2);  // [..., G, 32]: low, high, low, high...
    // 2^(scale - 127), exact in float32 and, within the range checkMxfp4 allows, in `dtype`.
    const auto factor = at::pow(2.0, scales.to(at::kFloat) - 127.0).to(dtype);
    values = values * factor.unsqueeze(-1);
    return values.flatten(-2);
}

at::Tensor dequantizeMxfp4(const at::Tensor& blocks, const at::Tensor& scales, const std::string& name,
                           at::ScalarType dtype) {
    checkMxfp4(blocks, scales, name, dtype);
    return mxfp4Values(blocks, scales, at::kFloat);
}

}  // namespace draftscope
