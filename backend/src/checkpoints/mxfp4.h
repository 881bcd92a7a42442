#pragma once
// MXFP4 weights as gpt-oss checkpoints store their experts (OCP Microscaling MXFP4: blocks of 32
// fp4 e2m1 values sharing one E8M0 scale; reference: HF transformers integrations/mxfp4.py
// `convert_moe_packed_tensors`, FP4_VALUES; issue 31).

#include <ATen/ATen.h>

#include <string>

namespace draftscope {

/// The 16 fp4 e2m1 values by code (bit 3 the sign): +0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, ... -6.
extern const float kFp4E2M1Values[16];

/// Dequantises MXFP4 `blocks` (uint8 [..., G, 16]: two codes per byte, the low nibble first)
/// with `scales` (uint8 [..., G], E8M0: the block's factor is 2^(scale - 127)) to float32
/// [..., G * 32], on the blocks' device: element 2k of a block is the low nibble of byte k,
/// element 2k+1 its high nibble, each the code's value times the factor (exact: every value has
/// at most two significant bits). The result is the row-major layout before HF's transpose
/// (gate_up_proj_blocks [E, 2I, H/32, 16] gives [E, 2I, H]).
/// Throws Error naming `name` (the blocks' tensor) when the dtypes are not uint8, the last
/// dimension is not 16, the shapes disagree, a scale is 255 (E8M0's NaN), or a value overflows
/// `dtype` (the compute dtype the caller casts to), naming the first block that does.
at::Tensor dequantizeMxfp4(const at::Tensor& blocks, const at::Tensor& scales, const std::string& name,
                           at::ScalarType dtype = at::kFloat);

/// The checks of dequantizeMxfp4 alone (dtypes, shapes, scales): run once when packed weights
/// are loaded, so that mxfp4Values() can dequantise them per forward without a host sync.
void checkMxfp4(const at::Tensor& blocks, const at::Tensor& scales, const std::string& name,
                at::ScalarType dtype);

/// The decode table of mxfp4Values: [256, 2] in `dtype` on `device`, row b = the values of
/// byte b's low and high nibble. Build it once per device and dtype and pass it on.
at::Tensor mxfp4PairTable(const at::Device& device, at::ScalarType dtype);

/// dequantizeMxfp4 without the checks, straight into `dtype` (exact: every value is an e2m1
/// code times a power of two that checkMxfp4 found representable), one gather per byte through
/// `pairTable` (mxfp4PairTable(blocks' device, dtype); built here when undefined). For blocks
/// already checked.
at::Tensor mxfp4Values(const at::Tensor& blocks, const at::Tensor& scales, at::ScalarType dtype,
                       const at::Tensor& pairTable = {});

}  // namespace draftscope
