#include "draftscope/engine.h"

#include "checkpoints/training_checkpoint.h"
#include "checkpoints/weight_loader.h"
#include "core/torch_compat.h"
#include "decoding/ddtree_loop.h"
#include "decoding/dflash_loop.h"
#include "decoding/verify_graph.h"
#include "engine/engine_impl.h"
#include "engine/target_placement.h"
#include "draftscope/chat_template.h"
#include "draftscope/errors.h"
#include "draftscope/model_config.h"
#include "draftscope/placement.h"
#include "draftscope/settings_validation.h"
#include "draftscope/stop_tokens.h"
#include "draftscope/tokenizer.h"
#include "models/dflash_drafter.h"
#include "models/target_model.h"

#include <nlohmann/json.hpp>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace draftscope {

namespace fs = std::filesystem;

using engine_detail::guarded;
using engine_detail::toFloatVector;

namespace {

ModelSummary summarize(const TransformerConfig& c, const std::string& dir, const WeightReport& report,
                       std::int64_t parameters) {
    ModelSummary s;
    s.directory = dir;
    s.architecture = c.architecture;
    s.numLayers = c.numLayers;
    s.hiddenSize = c.hiddenSize;
    s.vocabSize = c.vocabSize;
    s.numHeads = c.numHeads;
    s.numKvHeads = c.numKvHeads;
    s.headDim = c.headDim;
    s.parameters = parameters;
    s.layerTypes = c.layerTypes;
    s.unexpectedTensors = report.unexpected;
    s.ignoredTensors = report.ignored;
    return s;
}

/// Each distinct device of the target's placement once, with its name, in placement order.
std::vector<std::pair<std::string, at::Device>> distinctDevices(const TargetModel& target,
                                                                const std::vector<std::string>& names) {
    std::vector<std::pair<std::string, at::Device>> out;
    const auto& devices = target.placement().devices;
    for (std::size_t g = 0; g < devices.size(); ++g) {
        bool seen = false;
        for (const auto& [_, d] : out) seen = seen || d == devices[g];
        if (!seen) out.emplace_back(names[g], devices[g]);
    }
    return out;
}

/// Per-device peaks since the last resetPeakMemory(); RunTiming::peakDeviceBytes becomes
/// their maximum.
void recordPeaks(const TargetModel& target, const std::vector<std::string>& names, RunTiming& timing) {
    for (const auto& [name, device] : distinctDevices(target, names)) {
        const auto bytes = compat::deviceMemoryStats(device).peakAllocated;
        timing.peakPerDevice.push_back({name, bytes});
        timing.peakDeviceBytes = std::max(timing.peakDeviceBytes, bytes);
    }
}

}  // namespace

bool cudaAvailable() { return at::hasCUDA(); }
int intraOpThreads() { return at::get_num_threads(); }

Engine::Engine() : d_(std::make_unique<Impl>()) { compat::configureThreads(0); }
Engine::~Engine() = default;

ModelSummary Engine::loadTarget(const std::string& dir, const LoadOptions& options) {
    return guarded("loading the target", [&]() {
        c10::InferenceMode guard;
        validate(options);
        const auto dtype = compat::parseDtype(options.dtype);
        compat::configureThreads(options.threads);
        auto config = loadTargetConfig(dir);
        WeightLoader weights(dir);
        auto placement = planTarget(config, weights, dtype, options);
        const auto devices = placement.names;
        auto target = std::make_unique<TargetModel>(config, weights, dtype, std::move(placement));
        target->setCudaGraphMode(cudaGraphMode(options));
        if (options.cudaGraphs == "on") {
            const auto why = verifyGraphUnsupportedReason(*target);
            if (!why.empty())
                throw InvalidSetting("cuda-graphs", "auto or off here (CUDA graphs are impossible: " + why + ")", "'on'");
        }

        std::unique_ptr<Tokenizer> tok;
        if (fs::exists(fs::path(dir) / "tokenizer.json"))
            tok = std::make_unique<Tokenizer>(Tokenizer::fromDirectory(dir));

        auto stops = targetStopTokenIds(dir, config.eosTokenIds, tok ? tok->eosTokenId() : std::nullopt);

        d_->drafters.clear();
        d_->drafterSummaries.clear();
        d_->target = std::move(target);
        d_->tokenizer = std::move(tok);
        d_->options = options;
        d_->dtype = dtype;
        d_->stopIds = stops;
        d_->targetSummary = summarize(config, dir, d_->target->weightReport(), d_->target->parameterCount());
        d_->targetSummary.quantization = d_->target->quantizationSummary();
        d_->targetSummary.devices = devices;
        d_->targetSummary.placement = describePlacement(d_->target->placement().plan, devices);
        return d_->targetSummary;
    });
}

ModelSummary Engine::loadDrafter(const std::string& path, const std::string& configPath) {
    return guarded("loading the drafter", [&]() {
        c10::InferenceMode guard;
        const auto& target = d_->requireTarget();
        std::optional<StagedCheckpointDir> staged;
        std::string dir = path, note;
        std::error_code ec;
        if (std::filesystem::is_regular_file(path, ec)) {
            const auto ck = readTrainingCheckpoint(path);
            std::string cfg = configPath;
            if (cfg.empty()) {
                cfg = (std::filesystem::path(path).parent_path() / "config.json").string();
                if (!std::filesystem::is_regular_file(cfg, ec))
                    throw Error("the training checkpoint '" + path + "' needs its drafter config: there is no " + cfg +
                                " beside it; put the drafter's config.json there (or, with draftscope-cli run, give it "
                                "with --drafter-config FILE)");
            }
            staged.emplace(ck, cfg);
            dir = staged->path();
            note = "training checkpoint: state dict under '" + (ck.nestedUnder.empty() ? std::string("(top level)") : ck.nestedUnder) +
                   "'" + (ck.strippedPrefix.empty() ? std::string() : ", prefix '" + ck.strippedPrefix + "' stripped") +
                   ", config " + cfg;
        } else if (!configPath.empty()) {
            throw Error("--drafter-config applies to a .pt training checkpoint; '" + path + "' is a directory");
        }
        // Errors about the staged copy name the user's files instead.
        auto rename = [&](const std::string& msg) {
            if (!staged) return msg;
            std::string out = msg;
            const std::pair<std::string, std::string> subs[] = {{staged->path() + "/config.json", configPath.empty() ? (std::filesystem::path(path).parent_path() / "config.json").string() : configPath},
                                                                {staged->path() + "/model.safetensors", path},
                                                                {staged->path(), path}};
            for (const auto& [from, to] : subs)
                for (auto pos = out.find(from); pos != std::string::npos; pos = out.find(from, pos + to.size()))
                    out.replace(pos, from.size(), to);
            return out;
        };
        std::unique_ptr<DFlashDrafter> drafter;
        DrafterConfig config;
        try {
            config = loadDrafterConfig(dir);
            WeightLoader weights(dir);
            drafter = std::make_unique<DFlashDrafter>(config, weights, target);
        } catch (const Error& e) {
            throw Error(rename(e.what()));
        }
        auto s = summarize(config.body, path, drafter->weightReport(), drafter->parameterCount());
        s.source = note;
        s.configFile = staged ? (configPath.empty() ? (std::filesystem::path(path).parent_path() / "config.json").string() : configPath)
                              : (std::filesystem::path(path) / "config.json").string();
        s.family = drafterFamilyName(config.family);
        s.familyDetail = describeFamily(config);
        s.blockSize = config.blockSize;
        s.draftsFromAnchor = config.sampleFromAnchor;
        s.speculatorsFormat = config.format == DrafterFormat::Speculators;
        s.maskTokenId = config.maskTokenId;
        s.targetLayerIds = config.targetLayerIds;
        s.targetLayerIdsDerived = config.targetLayerIdsDerived;
        s.layout = config.layers;
        s.warnings = drafter->warnings();
        d_->drafters.push_back(std::move(drafter));
        d_->drafterSummaries.push_back(s);
        return s;
    });
}

int Engine::drafterCount() const { return static_cast<int>(d_->drafters.size()); }
void Engine::truncateDrafters(int count) {
    if (count < 0) throw Error("truncateDrafters: count " + std::to_string(count) + " is negative");
    const auto keep = static_cast<std::size_t>(count);
    if (keep >= d_->drafters.size()) return;
    d_->drafters.resize(keep);
    d_->drafterSummaries.resize(keep);
}
bool Engine::hasTarget() const { return d_->target != nullptr; }
const ModelSummary& Engine::targetSummary() const {
    d_->requireTarget();
    return d_->targetSummary;
}
const ModelSummary& Engine::drafterSummary(int index) const {
    d_->requireDrafter(index);
    return d_->drafterSummaries[static_cast<std::size_t>(index)];
}
const Tokenizer* Engine::tokenizer() const { return d_->tokenizer.get(); }
const std::vector<std::int64_t>& Engine::stopTokenIds() const { return d_->stopIds; }

std::vector<std::int64_t> Engine::encodePrompt(const PromptSpec& prompt) const {
    const auto& target = d_->requireTarget();
    std::vector<std::int64_t> ids;
    if (prompt.kind == PromptSpec::Kind::Ids) {
        ids = prompt.ids;
    } else {
        if (prompt.text.empty()) throw Error("the prompt is empty: nothing to condition the target on");
        if (!d_->tokenizer)
            throw Error("the target directory '" + d_->targetSummary.directory +
                        "' has no tokenizer.json, so a text prompt cannot be tokenized; give token ids instead");
        const std::string text = prompt.chat
            ? renderChatML({{"user", prompt.text}}, /*addGenerationPrompt=*/true, prompt.thinking)
            : prompt.text;
        ids = d_->tokenizer->encode(text);
    }
    if (ids.empty()) throw Error("the prompt is empty: nothing to condition the target on");
    const auto V = target.config().vocabSize;
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= V)
            throw Error("prompt token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                        ", outside the target's vocabulary 0.." + std::to_string(V - 1));
    const auto maxPos = target.config().maxPositions;
    if (static_cast<std::int64_t>(ids.size()) > maxPos)
        throw Error("the prompt has " + std::to_string(ids.size()) + " tokens, more than the target's "
                    "max_position_embeddings of " + std::to_string(maxPos));
    return ids;
}

RunResult Engine::run(const PromptSpec& prompt, const RunSettings& settings, const ProgressFn& progress,
                      const std::atomic<bool>* cancel) {
    return guarded("the DFlash run", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(settings.drafter);
        const auto ids = encodePrompt(prompt);
        const auto& names = d_->targetSummary.devices;
        for (const auto& [_, device] : distinctDevices(*d_->target, names)) compat::resetPeakMemory(device);
        auto r = runDFlash(*d_->target, drafter, ids, settings, StopTokens(d_->stopIds, settings.ignoreEos), progress,
                           cancel);
        recordPeaks(*d_->target, names, r.timing);
        r.device = d_->options.device;
        r.dtype = d_->options.dtype;
        r.placement = d_->targetSummary.placement;
        return r;
    });
}

TreeRunResult Engine::runTree(const PromptSpec& prompt, const RunSettings& settings, int budget,
                              const ProgressFn& progress, const std::atomic<bool>* cancel) {
    return guarded("the DDTree run", [&]() {
        c10::InferenceMode guard;
        validate(settings);
        const auto& drafter = d_->requireDrafter(settings.drafter);
        if (settings.temperature != 0.0)
            throw Error("DDTree runs are greedy here; got temperature " + std::to_string(settings.temperature));
        auto r = runDDTree(*d_->target, drafter, encodePrompt(prompt), budget, settings.maxNewTokens, settings.loop,
                           StopTokens(d_->stopIds, settings.ignoreEos), progress, cancel);
        return r;
    });
}

std::vector<std::int64_t> Engine::greedy(const PromptSpec& prompt, std::int64_t maxNewTokens, bool ignoreEos,
                                         const std::atomic<bool>* cancel) {
    return guarded("greedy decoding", [&]() {
        c10::InferenceMode guard;
        const auto& target = d_->requireTarget();
        return greedyDecode(target, encodePrompt(prompt), maxNewTokens, StopTokens(d_->stopIds, ignoreEos), cancel);
    });
}

ForwardResult Engine::forward(const PromptSpec& prompt) {
    return guarded("the target forward", [&]() {
        c10::InferenceMode guard;
        const auto& target = d_->requireTarget();
        ForwardResult r;
        r.ids = encodePrompt(prompt);
        const auto& c = target.config();
        r.numLayers = c.numLayers;
        r.hiddenSize = c.hiddenSize;
        r.vocabSize = c.vocabSize;
        std::vector<std::int64_t> all;
        for (std::int64_t i = 0; i <= c.numLayers; ++i) all.push_back(i);
        auto cache = target.makeCache();
        TargetForwardRequest req{all, 0, {}, {}, {}};
        if (c.moe.enabled())
            for (std::int64_t l = 0; l < c.numLayers; ++l) req.routingLayers.push_back(l);
        const auto out = target.forward(at::tensor(r.ids, at::TensorOptions().dtype(at::kLong)), cache, req);
        r.hiddenStates = toFloatVector(at::stack(out.hidden));
        r.logits = toFloatVector(out.logits);
        if (c.moe.enabled()) {
            r.numExperts = c.moe.numExperts;
            r.expertsPerToken = c.moe.numExpertsPerToken;
            const auto T = static_cast<std::int64_t>(r.ids.size());
            for (const auto& chosen : out.routing) {
                const auto rows = chosen.defined() ? chosen.to(at::kCPU, at::kLong).contiguous()
                                                   : at::full({T, r.expertsPerToken}, -1, at::kLong);
                r.expertChoices.insert(r.expertChoices.end(), rows.data_ptr<std::int64_t>(),
                                       rows.data_ptr<std::int64_t>() + rows.numel());
            }
        }
        return r;
    });
}

std::vector<ForwardResult> Engine::forwardSteps(const std::vector<std::vector<std::int64_t>>& chunks) {
    c10::InferenceMode guard;
    const auto& target = d_->requireTarget();
    const auto& c = target.config();
    if (chunks.empty()) throw Error("no chunks given: nothing to run the target on");
    std::int64_t total = 0;
    for (const auto& chunk : chunks) total += static_cast<std::int64_t>(chunk.size());
    if (total > c.maxPositions)
        throw Error("the chunks hold " + std::to_string(total) + " tokens, more than the target's "
                    "max_position_embeddings of " + std::to_string(c.maxPositions));
    std::vector<std::int64_t> all;
    for (std::int64_t i = 0; i <= c.numLayers; ++i) all.push_back(i);
    auto cache = target.makeCache();
    std::vector<ForwardResult> out;
    for (const auto& chunk : chunks) {
        PromptSpec p;
        p.kind = PromptSpec::Kind::Ids;
        p.ids = chunk;
        ForwardResult r;
        r.ids = encodePrompt(p);  // validates: non-empty, ids inside the vocabulary
        r.numLayers = c.numLayers;
        r.hiddenSize = c.hiddenSize;
        r.vocabSize = c.vocabSize;
        const auto o = target.forward(at::tensor(r.ids, at::TensorOptions().dtype(at::kLong)), cache, {all, 0, {}, {}, {}});
        r.hiddenStates = toFloatVector(at::stack(o.hidden));
        r.logits = toFloatVector(o.logits);
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace draftscope
