#include "engine/target_placement.h"

#include "core/torch_compat.h"
#include "draftscope/errors.h"
#include "draftscope/settings_validation.h"

#include <algorithm>

namespace draftscope {

/// The placement groups of LoadOptions::device: its entries, "auto" expanded to every
/// visible GPU (the CPU when there is none).
std::vector<std::string> placementDevices(const std::string& device) {
    auto names = deviceList(device);
    if (names.front() != "auto") return names;
    names.clear();
    for (int i = 0; i < compat::cudaDeviceCount(); ++i) names.push_back("cuda:" + std::to_string(i));
    if (names.empty()) names.push_back("cpu");
    return names;
}

/// Where the target's modules go (docs/ENGINE.md, "Placement across devices"): planned from
/// the module sizes and each device's limit (--gpu-memory, else a GPU's free memory).
TargetPlacement planTarget(const TransformerConfig& config, const WeightLoader& weights, at::ScalarType dtype,
                           const LoadOptions& o) {
    const auto names = placementDevices(o.device);
    if (!o.deviceMemory.empty() && o.deviceMemory.size() != names.size())
        throw InvalidSetting("gpu-memory", "one limit per device (" + o.device + ": " + std::to_string(names.size()) + ")",
                             std::to_string(o.deviceMemory.size()) + " limits");
    const bool mxfp4 = config.moe.enabled() && detectExpertLayout(weights.names(), config.weightPrefix) == ExpertLayout::Mxfp4;
    auto request = TargetModel::placementRequest(config, weights, dtype, o.maxContext,
                                                 mxfp4 && o.mxfp4Experts != "packed");
    request.deviceNames = names;
    request.splitAfterLayers = o.splitAfterLayers;
    TargetPlacement placement;
    placement.names = names;
    for (std::size_t g = 0; g < names.size(); ++g) {
        placement.devices.push_back(compat::parseDevice(names[g]));
        const auto free = compat::deviceFreeBytes(placement.devices.back());
        request.deviceLimits.push_back(!o.deviceMemory.empty() ? o.deviceMemory[g] : free.value_or(kUnlimitedBytes));
    }
    if (!o.drafterDevice.empty()) {
        const auto it = std::find(names.begin(), names.end(), o.drafterDevice);
        if (it == names.end())
            throw InvalidSetting("drafter-device", "one of the devices of --device (" + o.device + ")", "'" + o.drafterDevice + "'");
        request.drafterDevice = static_cast<int>(it - names.begin());
    }
    placement.unpackExperts = mxfp4 && o.mxfp4Experts != "packed";
    if (mxfp4 && o.mxfp4Experts == "auto") {
        try {
            placement.plan = planPlacement(request);
        } catch (const InvalidSetting&) {
            throw;
        } catch (const Error&) {  // unpacked they do not fit: keep them packed
            const auto packed = TargetModel::placementRequest(config, weights, dtype, o.maxContext, false);
            request.embeddingBytes = packed.embeddingBytes;
            request.layerBytes = packed.layerBytes;
            request.headBytes = packed.headBytes;
            request.reserveBytes = packed.reserveBytes;
            placement.unpackExperts = false;
            placement.plan = planPlacement(request);
        }
        return placement;
    }
    placement.plan = planPlacement(request);
    return placement;
}

}  // namespace draftscope
