#pragma once
// The alternative conventions diagnose probes a drafter under, and the finding an
// alternative that wins raises (docs/DIAGNOSE.md, "Convention probes"). Torch-free; the
// probes themselves run through Engine::teacherForcedDrafts (diagnosis.cpp).

#include "draftscope/diagnosis.h"
#include "draftscope/model_config.h"

#include <optional>
#include <string>
#include <vector>

namespace draftscope {

/// One alternative convention of a family, with the fix its finding proposes.
struct ConventionAlternative {
    std::string family;          ///< a convention family of diagnoseProbeFamilies()
    ProbeConvention convention;
    std::string trainedWith;     ///< what a win means, e.g. "a causal block in layer 0"
    std::string fix;             ///< the concrete fix, naming config keys where one exists
};

/// `v` with `digits` decimals ("%.*f"), as diagnose messages print numbers.
std::string fixedDigits(double v, int digits = 2);
/// "[1, 2, 4]": ids as diagnose messages print them.
std::string idListText(const std::vector<std::int64_t>& ids);

/// True for the families that probe alternative conventions ("context-leak", "label-shift",
/// "block-causal", "position-offset", "tap-offset", "window").
bool isConventionFamily(const std::string& family);

/// The alternatives of `family` for a drafter with summary `drafter` (layout, layer types,
/// tapped ids) and, if readable, its config (`is_causal` / `dflash_config.causal` decide how
/// a sliding layer resolves), against a target of `targetLayers` layers, probed on
/// sequences of at most `longestSequence` tokens. Alternatives whose layout equals the
/// declared one or an earlier alternative's are left out; taps outside the target too.
///  - block-causal: every layer causal, every layer bidirectional, and the causality of each
///    layer type group and of each single layer flipped;
///  - position-offset: block at a-1 and a+1;
///  - tap-offset: hidden_states[id] and hidden_states[id+2];
///  - window: without the window, for the layers that declare one (all, each); a window of
///    1/8, 1/4 and 1/2 of longestSequence (at least the block size, below longestSequence)
///    for the layers that declare none (all, each type group, each), each resolved as a
///    sliding_attention layer would be (causal unless is_causal says otherwise);
///  - context-leak: the anchor's feature in the context; label-shift: labels one later.
/// Throws Error for an unknown family.
std::vector<ConventionAlternative> conventionAlternatives(const std::string& family, const ModelSummary& drafter,
                                                          const std::optional<DrafterConfig>& config,
                                                          std::int64_t targetLayers, std::int64_t longestSequence);

/// Whether convention `b` makes every change that `a` makes to the drafter call and more:
/// wherever `a`'s layout (probeLayout over `declared`) differs from the declared one, `b`'s
/// has the same causality and window, and `a`'s position and tap offsets, anchor feature and
/// label shift are `b`'s too; false if both make the same changes. `a` is then the simpler
/// explanation of what `b` gains (a causal window on every layer contains a causal layer 0).
/// Throws Error if a convention overrides more layers than `declared` has.
bool conventionContains(const ProbeConvention& b, const ProbeConvention& a, const std::vector<LayerAttention>& declared);

/// The error finding of a probe that won (probe.finding): id "convention-<family>" (or the
/// family itself for context-leak and label-shift), the evidence (declared and alternative
/// probe tau and expected acceptance, the interval of the expected acceptance's gain, the
/// anchors; `extraEvidence` first) and a message naming the fix.
Finding conventionFinding(const ConventionProbe& probe, const ConventionAlternative& alternative,
                          const std::vector<LayerAttention>& declaredLayout,
                          std::vector<std::pair<std::string, double>> extraEvidence = {});

}  // namespace draftscope
