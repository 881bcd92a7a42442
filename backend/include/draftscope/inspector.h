#pragma once
// Checkpoint inspector: what a checkpoint holds (config fields, every tensor with its
// statistics, parameter totals), how it matches the architecture its config names, and a
// per-tensor comparison of two checkpoints (e.g. training step 20k against 40k).
// Torch-free header; the statistics are computed by the backend.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace draftscope {

/// Statistics of one tensor, computed in float64 over its float32 values.
struct TensorStats {
    std::string name;
    std::vector<std::int64_t> shape;
    std::string dtype;  ///< safetensors spelling: "BF16", "F32", ...
    std::int64_t numel = 0;
    double mean = 0, std = 0, rms = 0, maxAbs = 0;  ///< std: population (divides by numel)
    std::int64_t nonFinite = 0;                     ///< NaN/inf count (excluded from the others)
};

/// Everything the inspector shows about one checkpoint.
struct CheckpointInspection {
    std::string path;
    std::string kind;    ///< "drafter", "target" or "unknown" (config not recognised)
    std::string source;  ///< "safetensors directory" or the .pt nesting/prefix found
    std::string architecture;
    /// Drafters: the resolved per-layer attention layout (describeLayout(), DFLASH.md
    /// section 9), e.g. "sliding 24 causal, full bidirectional"; empty otherwise.
    std::string attentionLayout;
    /// Drafters: the family (drafterFamilyName: "DFlash", "DFlash2") and its parts in words
    /// (describeFamily; empty for plain DFlash); empty for targets.
    std::string family;
    std::string familyDetail;
    /// config.json flattened to dotted keys ("dflash_config.mask_token_id") and JSON values.
    std::vector<std::pair<std::string, std::string>> configFields;
    std::vector<TensorStats> tensors;  ///< sorted by name
    std::int64_t totalParameters = 0;  ///< sum of numel over floating-point tensors
    std::uint64_t totalBytes = 0;
    /// Whether the tensors were compared with the config's architecture (false when the config
    /// is missing or not understood: notes say why, and the three lists below stay empty).
    bool architectureChecked = false;
    /// Against the architecture of the config (empty when kind is "unknown"):
    std::vector<std::string> missing;     ///< expected, absent (with the expected shape)
    std::vector<std::string> mismatched;  ///< present with another shape or dtype (described)
    std::vector<std::string> unexpected;  ///< present, not used by the architecture
    std::vector<std::string> notes;       ///< e.g. why the architecture check was skipped
};

/// Reads a checkpoint directory (config.json + safetensors, single or sharded) or a
/// torch.save training checkpoint (.pt; config from `configPath` or config.json beside it)
/// and computes every tensor's statistics on the CPU. Throws Error when the path does not
/// exist or the weights cannot be read (naming the file); a config that is missing or not
/// understood only skips the architecture check (noted in `notes`).
CheckpointInspection inspectCheckpoint(const std::string& path, const std::string& configPath = {});

/// One tensor in both checkpoints.
struct TensorDiff {
    std::string name;
    std::vector<std::int64_t> shapeA, shapeB;
    bool sameShape = false;
    double rmsA = 0, rmsB = 0;
    double maxAbsDiff = 0;   ///< max |a - b| (same shape only)
    double relativeDiff = 0; ///< ||a - b|| / ||b|| (same shape only; 0 if both are zero)
    double cosine = 1;       ///< cos(a, b) over the flattened tensors (same shape only)
};

/// Per-tensor comparison of two checkpoints.
struct CheckpointDiff {
    std::string pathA, pathB;
    std::vector<TensorDiff> common;  ///< sorted by relativeDiff, largest first
    std::vector<std::string> onlyA, onlyB;
};

/// Compares every tensor present in both checkpoints (directories or .pt files; `configA`
/// / `configB` as in inspectCheckpoint). Throws Error as inspectCheckpoint.
CheckpointDiff diffCheckpoints(const std::string& pathA, const std::string& pathB, const std::string& configA = {},
                               const std::string& configB = {});

}  // namespace draftscope
