// Fuzz target: a config.json read as a target (loadTargetConfig) and as a DFlash drafter
// (loadDrafterConfig, which resolves the per-layer attention layout), then the derived
// values a model build uses (YaRN parameters, MoE sparse layers, the fallback
// target_layer_ids).

#include "draftscope/errors.h"
#include "draftscope/model_config.h"
#include "fuzz_support.h"

namespace {

void useDerived(const draftscope::TransformerConfig& c) {
    if (c.rope.type == "yarn") (void)draftscope::yarnParameters(c.rope, c.headDim);
    for (std::int64_t l = 0; l < c.numLayers && l < 4096; ++l) (void)c.moe.isSparseLayer(l);
    (void)c.isHybrid();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const draftscope::fuzz::ScratchDir dir;
    dir.write("config.json", data, size);
    try {
        useDerived(draftscope::loadTargetConfig(dir.path()));
    } catch (const draftscope::Error&) {
    }
    try {
        const auto d = draftscope::loadDrafterConfig(dir.path());
        useDerived(d.body);
        if (d.numTargetLayers > 0 && d.body.numLayers > 0)
            (void)draftscope::fallbackTargetLayerIds(d.numTargetLayers, d.body.numLayers);
    } catch (const draftscope::Error&) {
    }
    return 0;
}
