#pragma once
// From LoadOptions to a target's placement: the device list expanded, each device's limit
// measured (or taken from --gpu-memory), the planner run (draftscope/placement.h). One path
// for the engine and the benchmark driver (bench/bench_engine.cpp).

#include "checkpoints/weight_loader.h"
#include "draftscope/engine.h"
#include "draftscope/model_config.h"
#include "models/target_model.h"

#include <string>
#include <vector>

namespace draftscope {

/// The placement groups of a LoadOptions::device string: its entries (deviceList), "auto"
/// expanded to every visible GPU (the CPU when there is none). Throws InvalidSetting("device").
std::vector<std::string> placementDevices(const std::string& device);

/// Where the target's modules go (docs/ENGINE.md, "Placement across devices"): planned from
/// the module sizes (TargetModel::placementRequest at o.maxContext) and each group's limit
/// (o.deviceMemory, else a GPU's free memory, the CPU unlimited). Throws InvalidSetting for
/// a limit count or drafter device that does not match the device list or for bad forced
/// boundaries ("split-after", from planPlacement), Error when the target does not fit.
TargetPlacement planTarget(const TransformerConfig& config, const WeightLoader& weights, at::ScalarType dtype,
                           const LoadOptions& o);

}  // namespace draftscope
