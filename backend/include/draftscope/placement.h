#pragma once
// Placement of a target's modules across the devices of one host (docs/ENGINE.md,
// "Placement across devices"): a pure, torch-free planner. The engine measures the modules
// and the devices; this file only decides.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace draftscope {

/// A device limit meaning "no limit" (the CPU, or a GPU whose free memory is unknown).
constexpr std::uint64_t kUnlimitedBytes = std::numeric_limits<std::uint64_t>::max();

/// What the planner places, in execution order: the embeddings, each decoder layer, then
/// the final norm + LM head. Every size is in bytes and already includes what lives beside
/// the module's weights (a layer's KV cache or Gated DeltaNet state at the planned context).
struct PlacementRequest {
    std::uint64_t embeddingBytes = 0;
    std::vector<std::uint64_t> layerBytes;  ///< one per decoder layer
    std::uint64_t headBytes = 0;            ///< final norm + LM head (a tied head placed away from the embeddings is a copy)
    std::uint64_t reserveBytes = 0;         ///< kept free on every device for activations
    std::vector<std::string> deviceNames;   ///< one per placement group, for messages ("cuda:0", "cpu")
    std::vector<std::uint64_t> deviceLimits;  ///< usable bytes per group (kUnlimitedBytes: none)
    /// Forced boundaries: group g+1 starts after decoder layer splitAfterLayers[g]. Empty =
    /// plan automatically. Otherwise exactly deviceNames.size() - 1 strictly increasing
    /// layer indices in 0..L-2.
    std::vector<std::int64_t> splitAfterLayers;
    /// Group index the drafter is asked for, or -1 = the group with the most room left.
    int drafterDevice = -1;
};

/// Where every module goes (indices into PlacementRequest::deviceNames).
struct PlacementPlan {
    int embeddingDevice = 0;
    std::vector<int> layerDevice;  ///< one per decoder layer, non-decreasing
    int headDevice = 0;
    int drafterDevice = 0;  ///< where drafters and the tapped features go
    std::vector<std::uint64_t> bytesPerDevice;  ///< planned bytes (modules + reserve) per group
};

/// Plans contiguous layer ranges in order, as HF accelerate's device_map="auto": each
/// group but the last gets at most an equal share of the modules' total and at most its
/// limit less the reserve, the last group up to its limit less the reserve; a module
/// that does not fit moves on to the next group. If that balanced pass fails, a sequential
/// pass fills every group up to its limit. The drafter goes where the most room is left
/// (ties: the lowest index) unless request.drafterDevice names a group. Throws
/// InvalidSetting("split-after") for bad forced boundaries, Error when
/// the modules cannot fit (naming the module, each group's needed and available bytes)
/// or for a drafter group out of range.
PlacementPlan planPlacement(const PlacementRequest& request);

/// "cuda:0: embeddings, layers 0-11; cuda:1: layers 12-23, head" (groups with nothing
/// placed are left out; the drafter's group is marked "drafter").
std::string describePlacement(const PlacementPlan& plan, const std::vector<std::string>& deviceNames);

/// `bytes` for messages: "512 B", "1.50 KiB", "40.00 GiB"; kUnlimitedBytes is "unlimited".
std::string formatBytes(std::uint64_t bytes);

}  // namespace draftscope
