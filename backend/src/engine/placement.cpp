#include "draftscope/placement.h"
#include "draftscope/settings_validation.h"

#include "draftscope/errors.h"

#include <algorithm>
#include <cstdio>

namespace draftscope {

namespace {

/// a + b, saturating at kUnlimitedBytes.
std::uint64_t addBytes(std::uint64_t a, std::uint64_t b) { return a > kUnlimitedBytes - b ? kUnlimitedBytes : a + b; }

/// The modules in execution order: embeddings, layers, head.
std::vector<std::uint64_t> moduleSizes(const PlacementRequest& r) {
    std::vector<std::uint64_t> m{r.embeddingBytes};
    m.insert(m.end(), r.layerBytes.begin(), r.layerBytes.end());
    m.push_back(r.headBytes);
    return m;
}

std::string moduleName(std::size_t m, std::size_t count) {
    if (m == 0) return "the embeddings";
    if (m + 1 == count) return "the final norm and LM head";
    return "decoder layer " + std::to_string(m - 1);
}

/// Bytes usable by modules on each group: its limit less the activation reserve.
std::vector<std::uint64_t> capacities(const PlacementRequest& r) {
    std::vector<std::uint64_t> c;
    for (auto limit : r.deviceLimits)
        c.push_back(limit == kUnlimitedBytes ? limit : limit - std::min(limit, r.reserveBytes));
    return c;
}

/// Module -> group by filling groups in order up to `budget` each. Stops at the first
/// module that fits nowhere after the groups before it: a result shorter than `sizes` ends
/// just before that module.
std::vector<int> fillInOrder(const std::vector<std::uint64_t>& sizes, const std::vector<std::uint64_t>& budget) {
    std::vector<int> where;
    std::vector<std::uint64_t> used(budget.size(), 0);
    std::size_t g = 0;
    for (auto s : sizes) {
        while (g < budget.size() && s > budget[g] - used[g]) ++g;
        if (g == budget.size()) return where;
        used[g] += s;
        where.push_back(static_cast<int>(g));
    }
    return where;
}

/// The balanced budgets: an equal share of the total for every group but the last.
std::vector<std::uint64_t> balancedBudgets(const std::vector<std::uint64_t>& sizes,
                                           const std::vector<std::uint64_t>& capacity) {
    std::uint64_t total = 0;
    for (auto s : sizes) total = addBytes(total, s);
    const std::uint64_t n = capacity.size();
    const std::uint64_t share = total / n + (total % n != 0);
    std::vector<std::uint64_t> budget;
    for (std::size_t g = 0; g < capacity.size(); ++g)
        budget.push_back(g + 1 < capacity.size() ? std::min(capacity[g], share) : capacity[g]);
    return budget;
}

/// Module -> group from forced boundaries (checked against the layer count).
std::vector<int> forcedGroups(const PlacementRequest& r) {
    const auto L = static_cast<std::int64_t>(r.layerBytes.size());
    const auto& split = r.splitAfterLayers;
    // Named by the option that sets them (LoadOptions::splitAfterLayers, --split-after).
    if (split.size() + 1 != r.deviceNames.size())
        throw InvalidSetting("split-after", "one fewer boundary than devices (" + std::to_string(r.deviceNames.size()) + ")",
                             std::to_string(split.size()) + " forced boundaries");
    for (std::size_t i = 0; i < split.size(); ++i)
        if (split[i] < 0 || split[i] > L - 2 || (i > 0 && split[i] <= split[i - 1]))
            throw InvalidSetting("split-after",
                                 "strictly increasing decoder layer indices in 0.." + std::to_string(L - 2) +
                                     " (the target has " + std::to_string(L) + " layers)",
                                 "a boundary after layer " + std::to_string(split[i]));
    std::vector<int> where{0};
    int g = 0;
    for (std::int64_t l = 0; l < L; ++l) {
        where.push_back(g);
        if (static_cast<std::size_t>(g) < split.size() && split[static_cast<std::size_t>(g)] == l) ++g;
    }
    where.push_back(g);
    return where;
}

/// Planned bytes per group: its modules plus the reserve on every group that holds one.
std::vector<std::uint64_t> bytesPerGroup(const PlacementRequest& r, const std::vector<int>& where) {
    const auto sizes = moduleSizes(r);
    std::vector<std::uint64_t> bytes(r.deviceNames.size(), 0);
    for (std::size_t m = 0; m < sizes.size(); ++m) {
        auto& b = bytes[static_cast<std::size_t>(where[m])];
        b = addBytes(b, sizes[m]);
    }
    for (auto& b : bytes)
        if (b > 0) b = addBytes(b, r.reserveBytes);
    return bytes;
}

/// Error for a model that does not fit: the total, then each group's limit.
[[noreturn]] void throwDoesNotFit(const PlacementRequest& r, const std::string& what) {
    const auto sizes = moduleSizes(r);
    std::uint64_t total = 0;
    for (auto s : sizes) total = addBytes(total, s);
    std::string msg = "the target does not fit on its devices: " + what + "; it needs " + formatBytes(total) +
                      " (weights and KV cache/state at the planned context) plus " + formatBytes(r.reserveBytes) +
                      " of activations per device; available:";
    for (std::size_t g = 0; g < r.deviceNames.size(); ++g)
        msg += (g ? ", " : " ") + r.deviceNames[g] + " " + formatBytes(r.deviceLimits[g]);
    throw Error(msg + ". Add devices, raise --gpu-memory, lower --max-context or use bfloat16");
}

/// Throws unless every group's planned bytes are within its limit (forced boundaries).
void checkLimits(const PlacementRequest& r, const std::vector<std::uint64_t>& bytes) {
    for (std::size_t g = 0; g < bytes.size(); ++g)
        if (bytes[g] > r.deviceLimits[g])
            throwDoesNotFit(r, r.deviceNames[g] + " needs " + formatBytes(bytes[g]) + " for its layers but has " +
                                   formatBytes(r.deviceLimits[g]));
}

/// The automatic plan (balanced, then sequential); throws naming the first module that
/// fits nowhere in the sequential pass.
std::vector<int> automaticGroups(const PlacementRequest& r) {
    const auto sizes = moduleSizes(r);
    const auto capacity = capacities(r);
    auto where = fillInOrder(sizes, balancedBudgets(sizes, capacity));
    if (where.size() == sizes.size()) return where;
    where = fillInOrder(sizes, capacity);
    if (where.size() == sizes.size()) return where;
    const auto m = where.size();
    throwDoesNotFit(r, moduleName(m, sizes.size()) + " (" + formatBytes(sizes[m]) +
                           ") fits on no device after the modules before it");
}

int drafterGroup(const PlacementRequest& r, const std::vector<std::uint64_t>& bytes) {
    const int n = static_cast<int>(bytes.size());
    if (r.drafterDevice >= n)
        throw Error("placement: drafter device index " + std::to_string(r.drafterDevice) + " out of range (" +
                    std::to_string(n) + " devices)");
    if (r.drafterDevice >= 0) return r.drafterDevice;
    int best = 0;
    std::uint64_t bestRoom = 0;
    for (int g = 0; g < n; ++g) {
        const auto limit = r.deviceLimits[static_cast<std::size_t>(g)];
        const auto used = bytes[static_cast<std::size_t>(g)];
        const auto room = limit - std::min(limit, used);
        if (g == 0 || room > bestRoom) {
            best = g;
            bestRoom = room;
        }
    }
    return best;
}

}  // namespace

PlacementPlan planPlacement(const PlacementRequest& r) {
    if (r.deviceNames.empty()) throw Error("placement: no devices given");
    if (r.deviceLimits.size() != r.deviceNames.size())
        throw Error("placement: " + std::to_string(r.deviceLimits.size()) + " memory limits for " +
                    std::to_string(r.deviceNames.size()) + " devices");
    if (r.layerBytes.empty()) throw Error("placement: the target has no decoder layers");
    const bool forced = !r.splitAfterLayers.empty();
    const auto where = forced ? forcedGroups(r) : automaticGroups(r);
    PlacementPlan p;
    p.bytesPerDevice = bytesPerGroup(r, where);
    if (forced) checkLimits(r, p.bytesPerDevice);
    p.embeddingDevice = where.front();
    p.headDevice = where.back();
    p.layerDevice.assign(where.begin() + 1, where.end() - 1);
    p.drafterDevice = drafterGroup(r, p.bytesPerDevice);
    return p;
}

std::string describePlacement(const PlacementPlan& plan, const std::vector<std::string>& names) {
    std::string out;
    const auto L = static_cast<int>(plan.layerDevice.size());
    for (int g = 0; g < static_cast<int>(names.size()); ++g) {
        std::vector<std::string> parts;
        if (plan.embeddingDevice == g) parts.push_back("embeddings");
        int first = -1, last = -1;
        for (int l = 0; l < L; ++l)
            if (plan.layerDevice[static_cast<std::size_t>(l)] == g) {
                if (first < 0) first = l;
                last = l;
            }
        if (first >= 0) parts.push_back(first == last ? "layer " + std::to_string(first)
                                                      : "layers " + std::to_string(first) + "-" + std::to_string(last));
        if (plan.headDevice == g) parts.push_back("head");
        if (plan.drafterDevice == g) parts.push_back("drafter");
        if (parts.empty()) continue;
        out += (out.empty() ? "" : "; ") + names[static_cast<std::size_t>(g)] + ":";
        for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : " ") + parts[i];
    }
    return out;
}

std::string formatBytes(std::uint64_t bytes) {
    if (bytes == kUnlimitedBytes) return "unlimited";
    if (bytes < 1024) return std::to_string(bytes) + " B";
    static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes) / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
    return buf;
}

}  // namespace draftscope
