#pragma once
// How one kind of step of a DFlash run used CUDA graphs (VerifyGraph, DraftGraph), for
// RunTiming::cudaGraphs (docs/ENGINE.md, "CUDA graphs").

#include "core/torch_compat.h"

#include <functional>
#include <string>

namespace draftscope {

struct GraphUse {
    int replays = 0;     ///< steps that replayed a captured graph
    int staticRuns = 0;  ///< steps that ran the static-shape path without capture (StaticEager)
    int eager = 0;       ///< steps that ran the dynamic-shape path
    int captures = 0;
    double captureMs = 0;  ///< wall-clock time of the captures (warm-up included)
    bool staticEager = false;  ///< CudaGraphMode::StaticEager
    std::string offReason;     ///< why steps run eagerly; "" while graphs are in use
    std::string note;          ///< appended to describe() ("state commits eager (...)"); may be ""

    /// `what`: "verify steps" or "drafter calls". "241 of 255 verify steps replayed, 1 capture
    /// (21.6 ms)"; after a failed capture "...; then eager (<reason>)"; "static shapes, not
    /// captured: 8 of 9 verify steps"; "verify steps eager (<reason>)".
    std::string describe(const std::string& what) const;
    /// Both kinds of step of one run: "off (<reason>)" when both ran eagerly for the same
    /// reason, else the two descriptions joined by "; ".
    static std::string describeRun(const GraphUse& verify, const GraphUse& drafter);
};

/// Captures `body` into `graph` on `device` and adds the capture and its wall-clock time
/// (warm-up included) to `use`. Returns false after a compat::GraphCaptureError, whose message
/// becomes use.offReason (the run's later steps go eager), or rethrows it where `rethrow`
/// (CudaGraphMode::On). Errors `body` throws itself pass through.
bool captureStep(compat::DeviceGraph& graph, const at::Device& device, const std::function<void()>& body,
                 GraphUse& use, bool rethrow);

}  // namespace draftscope
