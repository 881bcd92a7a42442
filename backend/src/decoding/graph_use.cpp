#include "decoding/graph_use.h"

#include <chrono>
#include <cstdio>

namespace draftscope {

std::string GraphUse::describe(const std::string& what) const {
    const int n = replays + staticRuns + eager;
    char buf[200];
    std::string out;
    if (staticEager && (staticRuns > 0 || offReason.empty())) {
        std::snprintf(buf, sizeof buf, "static shapes, not captured: %d of %d %s", staticRuns, n, what.c_str());
        out = buf;
    } else if (replays > 0 || offReason.empty()) {
        std::snprintf(buf, sizeof buf, "%d of %d %s replayed, %d capture%s (%.1f ms)", replays, n, what.c_str(), captures,
                      captures == 1 ? "" : "s", captureMs);
        out = offReason.empty() ? buf : std::string(buf) + "; then eager (" + offReason + ")";
    } else {
        out = what + " eager (" + offReason + ")";
    }
    return note.empty() ? out : out + ", " + note;
}

std::string GraphUse::describeRun(const GraphUse& verify, const GraphUse& drafter) {
    if (verify.replays + verify.staticRuns + drafter.replays + drafter.staticRuns == 0 && !verify.offReason.empty() &&
        verify.offReason == drafter.offReason)
        return "off (" + verify.offReason + ")";
    return verify.describe("verify steps") + "; " + drafter.describe("drafter calls");
}

bool captureStep(compat::DeviceGraph& graph, const at::Device& device, const std::function<void()>& body,
                 GraphUse& use, bool rethrow) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
        graph.capture(device, body);
    } catch (const compat::GraphCaptureError& e) {
        if (rethrow) throw;
        use.offReason = e.what();
        return false;
    }
    use.captureMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++use.captures;
    return true;
}

}  // namespace draftscope
