#include "decoding/graph_use.h"

#include <cstdio>

namespace draftscope {

std::string GraphUse::describe(const std::string& what) const {
    const int n = replays + staticRuns + eager;
    char buf[200];
    if (staticEager && (staticRuns > 0 || offReason.empty())) {
        std::snprintf(buf, sizeof buf, "static shapes, not captured: %d of %d %s", staticRuns, n, what.c_str());
        return buf;
    }
    if (replays > 0 || offReason.empty()) {
        std::snprintf(buf, sizeof buf, "%d of %d %s replayed, %d capture%s (%.1f ms)", replays, n, what.c_str(), captures,
                      captures == 1 ? "" : "s", captureMs);
        return offReason.empty() ? buf : std::string(buf) + "; then eager (" + offReason + ")";
    }
    return what + " eager (" + offReason + ")";
}

std::string GraphUse::describeRun(const GraphUse& verify, const GraphUse& drafter) {
    if (verify.replays + verify.staticRuns + drafter.replays + drafter.staticRuns == 0 && !verify.offReason.empty() &&
        verify.offReason == drafter.offReason)
        return "off (" + verify.offReason + ")";
    return verify.describe("verify steps") + "; " + drafter.describe("drafter calls");
}

}  // namespace draftscope
