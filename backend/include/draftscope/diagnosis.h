#pragma once
// Automatic bug-signature checks for DFlash drafters (docs/DIAGNOSE.md): configuration
// checks that need no forward pass, and acceptance patterns measured with the target.
// Torch-free: uses the Engine's public API only.

#include "draftscope/engine.h"
#include "draftscope/model_config.h"
#include "draftscope/probe_convention.h"
#include "draftscope/probe_statistics.h"
#include "draftscope/run_types.h"

#include <atomic>
#include <optional>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace draftscope {

enum class Severity { Info, Warning, Error };
/// "info", "warning", "error" (inline: the torch-free results reader needs it without the
/// diagnosis code).
inline const char* severityName(Severity s) {
    switch (s) {
        case Severity::Info: return "info";
        case Severity::Warning: return "warning";
        case Severity::Error: return "error";
    }
    return "?";
}

/// One thing a check found, with the numbers that support it.
struct Finding {
    std::string id;  ///< stable identifier, e.g. "label-shift" (docs/DIAGNOSE.md lists them)
    Severity severity = Severity::Info;
    std::string message;                                    ///< plain-language explanation
    std::vector<std::pair<std::string, double>> evidence;  ///< named numbers, in order
};

/// The probe of one alternative convention against the declared one, over the same
/// anchors (docs/DIAGNOSE.md, "Convention probes").
struct ConventionProbe {
    std::string family;       ///< "block-causal", "position-offset", "tap-offset", "window", "context-leak", "label-shift"
    std::string alternative;  ///< describeConvention(), e.g. "layer 0 sliding 24 causal"
    ProbeConvention convention;
    double declaredTau = 0;   ///< probe tau under the declared convention, same anchors
    double tau = 0;           ///< probe tau under this alternative
    /// Paired bootstrap of the per-anchor acceptance difference (alternative - declared),
    /// kConventionConfidence interval.
    PairedInterval difference;
    std::vector<double> slotMatch;  ///< [B-1] per-slot match rate under the alternative
    /// The same comparison on the smooth expected acceptance (perAnchorExpectedAcceptance):
    /// declared and alternative means and the paired bootstrap of their difference.
    double expectedDeclaredTau = 0, expectedTau = 0;
    PairedInterval expectedDifference;
    /// True if this alternative's finding was raised: it beat the declared convention
    /// (conventionBeatsDeclared on expectedDifference), it is its family's best, and it is not
    /// explained by a stronger finding (docs/DIAGNOSE.md).
    bool finding = false;
};

/// What one probe family cost for one drafter.
struct ProbeCost {
    std::string family;            ///< a name of diagnoseProbeFamilies(), or "combined" (findings tested together)
    std::int64_t probeSteps = 0;   ///< drafter calls (chain loop verify steps for "acceptance")
    double seconds = 0;            ///< wall-clock time
};

/// Everything measured about one drafter.
struct DrafterDiagnosis {
    std::string path;
    bool loaded = false;
    ModelSummary summary;             ///< valid if loaded
    double tau = 0;                   ///< macro mean over prompts of the chain loop's tau
    std::vector<double> promptTaus;   ///< per prompt
    /// Teacher-forced probe on the target's greedy continuations (TeacherForcedDrafts):
    double probeTau = 0;              ///< mean 1 + leading matches, context [0, a)
    double probeTauAnchorFeature = 0; ///< the same with the anchor's own feature in the context
    /// [B-1] per drafted slot j (0-based; row j of the draft logits, block position j+1):
    /// P(draft == the token at block position j+1), its own position ...
    std::vector<double> samePositionMatch;
    /// ... and P(draft == the token at block position j+2), one position later.
    std::vector<double> nextPositionMatch;
    double draftRepetition = 0;       ///< fraction of blocks with one token 3 times in a row in the first 4 slots
    double referenceRepetition = 0;   ///< the same over the target's own continuation
    /// Every alternative convention probed, in family order (diagnoseProbeFamilies()).
    std::vector<ConventionProbe> conventionProbes;
    std::vector<ProbeCost> costs;     ///< per family that ran, in family order
    std::vector<Finding> findings;
    int rank = 0;                     ///< 1 = highest tau; unloaded drafters rank last
};

struct DiagnoseSettings {
    std::int64_t maxNewTokens = 96;  ///< per prompt, generated with ignore-eos
    /// Loop revision and sampling options of the runs (maxNewTokens, ignoreEos, drafter and
    /// recordTopK of it are not used).
    RunSettings sampling;
    /// Probe families to run (names of diagnoseProbeFamilies()); empty = all.
    std::vector<std::string> probes;
};

/// Tokens generated per prompt diagnose accepts (DiagnoseSettings::maxNewTokens).
inline constexpr std::int64_t kDiagnoseMinNewTokens = 1;
inline constexpr std::int64_t kDiagnoseMaxNewTokens = 4096;

/// Checks `settings`: maxNewTokens in kDiagnoseMinNewTokens..kDiagnoseMaxNewTokens and the
/// sampling options (validate(RunSettings), settings_validation.h), throwing InvalidSetting
/// naming the option ("max-new", "temperature", ...); the probe family names (Error from
/// parseProbeFamilies).
void validate(const DiagnoseSettings& settings);

/// The probe families of diagnose, in the order they run: "static" (config checks),
/// "acceptance" (chain loop, declared probe, repetition), "context-leak", "label-shift",
/// "block-causal", "position-offset", "tap-offset", "window".
const std::vector<std::string>& diagnoseProbeFamilies();

/// Parses a comma-separated list of probe families ("all" = every family). Throws Error
/// naming the unknown family and listing the valid ones.
std::vector<std::string> parseProbeFamilies(const std::string& list);

/// Margin (expected acceptance length per block, perAnchorExpectedAcceptance) by which an
/// alternative convention must beat the declared one: a finding needs the mean paired
/// difference of the expected acceptance above it and the lower bound of its
/// kConventionConfidence paired-bootstrap interval above 0 (conventionBeatsDeclared).
/// Calibrated on drafters trained with each convention bug and clean/weak ones
/// (tools/calibrate_diagnose.py; docs/DIAGNOSE.md, "Calibration"): twice the largest gain
/// that any clean or weak drafter of the calibration set reached (0.005, a sliding window on
/// a drafter trained without one); the bug drafters gain 0.013..0.34.
inline constexpr double kConventionMargin = 0.01;
/// Central confidence of the paired bootstrap interval (two-sided; the one-sided test at
/// the lower bound has false-positive rate (1 - confidence) / 2 per alternative when the
/// true difference is at the margin).
inline constexpr double kConventionConfidence = 0.99;
/// Bootstrap resamples and seed (fixed: diagnose is deterministic).
inline constexpr int kConventionResamples = 2000;
inline constexpr std::uint64_t kConventionSeed = 20261201;

/// The decision rule of every convention finding (a family's winner and the joint test),
/// applied to the paired difference of the expected acceptance: the alternative's mean gain
/// over the compared convention exceeds kConventionMargin (an effect worth a fix) and the
/// lower bound of the interval exceeds 0 (not noise).
inline bool conventionBeatsDeclared(const PairedInterval& difference) {
    return difference.mean > kConventionMargin && difference.lower > 0.0;
}

/// A named prompt for diagnosis.
struct DiagnosePrompt {
    std::string id;
    PromptSpec spec;
};

struct DiagnosisReport {
    ModelSummary target;
    std::vector<std::string> promptIds;
    DiagnoseSettings settings;
    std::vector<DrafterDiagnosis> drafters;  ///< ordered by rank
};

/// Built-in prompts used when the user gives none: ten short Python openings and one prose
/// line (the demo target is a code model); pooled over them the signatures are stable.
std::vector<DiagnosePrompt> defaultDiagnosePrompts();

/// What a diagnosis costs, in drafter calls (docs/DIAGNOSE.md, "Cost"): per drafter, the chain
/// run of every prompt (at most max-new calls), the declared teacher-forced probe (one call
/// per anchor: max-new - W + 1 per prompt, W the block's positions) and, per convention
/// family, one such probe per alternative (conventionAlternatives; label-shift rescores and
/// calls nothing). The joint test of several winning findings adds a little more.
struct DiagnoseCostEstimate {
    std::int64_t drafterCalls = 0;  ///< every drafter together
    /// Per family ("acceptance", then the convention families), summed over the drafters.
    std::vector<std::pair<std::string, std::int64_t>> perFamily;
};

/// The cost of diagnosing `drafters` (their configs; std::nullopt for one that cannot be read:
/// it counts nothing) against a target of `targetLayers` layers with `settings`, on prompts of
/// `promptLengths` tokens. The same numbers diagnoseDrafters reports progress in.
DiagnoseCostEstimate estimateDiagnoseCost(const std::vector<std::optional<DrafterConfig>>& drafters,
                                          std::int64_t targetLayers, const DiagnoseSettings& settings,
                                          const std::vector<std::int64_t>& promptLengths);

/// Diagnoses each drafter (a directory or a .pt training checkpoint) against the target
/// already loaded in `engine`: static checks of its config and checkpoint (fc width vs
/// tapped layers, tapped ids vs target depth, mask token vs vocabulary and special
/// tokens), then, if it loads, the chain loop on every prompt and the teacher-forced probe
/// for the label-shift, context-leak and repetition signatures. A drafter that fails to
/// load gets an error finding "load-failed" with the loader's message; diagnosis goes on.
/// Drafters are ranked by tau. `progress(done, total)` counts estimated drafter calls
/// (estimateDiagnoseCost): after each prompt's run and after each convention family.
/// Throws Error if no target is loaded or `prompts` is empty; Cancelled on `cancel`.
/// Thresholds and their calibration: docs/DIAGNOSE.md.
DiagnosisReport diagnoseDrafters(Engine& engine, const std::vector<std::string>& drafterPaths,
                                 const std::vector<DiagnosePrompt>& prompts, const DiagnoseSettings& settings,
                                 const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

}  // namespace draftscope
