#include "cli/forward_command.h"

#include "draftscope/safetensors.h"

#include <iostream>

namespace draftscope::cli {

void ForwardCommand::add(CLI::App& app) {
    command = app.add_subcommand("forward", "run the target on a prompt and save hidden states and logits");
    command->add_option("--model", modelDir, "target model directory")->required();
    prompt.add(*command);
    command->add_option("--out", outPath, "output .safetensors (float32 hidden_states [L+1,T,H], logits [T,V])")->required();
    device.add(*command);
}

int ForwardCommand::run() const {
    device.check();
    checkPaths({{"--model", modelDir, PathKind::Directory}, prompt.pathOption()}, {{"--out", outPath}});
    const auto spec = prompt.spec();
    Engine engine;
    engine.loadTarget(modelDir, device.load);
    const auto r = engine.forward(spec);
    const auto T = static_cast<std::int64_t>(r.ids.size());
    SafetensorsWriter w;
    w.addFloat32("hidden_states", {r.numLayers + 1, T, r.hiddenSize}, r.hiddenStates);
    w.addFloat32("logits", {T, r.vocabSize}, r.logits);
    w.addInt64("input_ids", {T}, r.ids);
    w.setMetadata("producer", "draftscope-cli forward");
    w.setMetadata("model", modelDir);
    w.setMetadata("convention", "hidden_states[0] = embeddings, hidden_states[L] = after the final norm (HF)");
    w.write(outPath);
    std::cout << "wrote " << outPath << ": hidden_states [" << r.numLayers + 1 << ", " << T << ", "
              << r.hiddenSize << "], logits [" << T << ", " << r.vocabSize << "], input_ids [" << T << "]\n";
    return 0;
}

}  // namespace draftscope::cli
