#include "draftscope/engine.h"

#include "checkpoints/training_checkpoint.h"
#include "checkpoints/weight_loader.h"
#include "core/torch_compat.h"
#include "decoding/ddtree_loop.h"
#include "decoding/dflash_loop.h"
#include "draftscope/chat_template.h"
#include "draftscope/errors.h"
#include "draftscope/model_config.h"
#include "draftscope/stop_tokens.h"
#include "draftscope/tokenizer.h"
#include "models/dflash_drafter.h"
#include "models/target_model.h"

#include <nlohmann/json.hpp>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <filesystem>
#include <optional>

namespace draftscope {

namespace fs = std::filesystem;

namespace {

std::vector<float> toFloatVector(const at::Tensor& t) {
    const auto c = t.to(at::kCPU, at::kFloat).contiguous();
    return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

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

/// Per-position and histogram statistics of x [T, D] (any dtype), computed in float32.
/// Non-finite values (a broken checkpoint) are counted and left out of the histogram and
/// of the outlier median; the per-position statistics then show NaN/inf where they occur.
HiddenSeriesStats seriesStats(const at::Tensor& xIn, int bins) {
    HiddenSeriesStats s;
    const auto x = xIn.to(at::kFloat);
    s.rms = toFloatVector(x.pow(2).mean(-1).sqrt());
    s.mean = toFloatVector(x.mean(-1));
    s.std = toFloatVector(x.std(-1, /*unbiased=*/false));
    s.maxAbs = toFloatVector(x.abs().amax(-1));
    const auto cpu = x.to(at::kCPU);
    const auto finite = cpu.masked_select(cpu.isfinite());
    s.nonFiniteCount = cpu.numel() - finite.numel();
    double lo = 0, hi = 1;
    if (finite.numel() > 0) {
        lo = finite.min().item<double>();
        hi = finite.max().item<double>();
    }
    const double top = hi > lo ? hi : lo + 1.0;
    const auto counts = finite.numel() > 0 ? at::histc(finite, bins, lo, top).to(at::kLong)
                                           : at::zeros({bins}, at::TensorOptions().dtype(at::kLong));
    for (int i = 0; i <= bins; ++i) s.histogramEdges.push_back(lo + (top - lo) * i / bins);
    s.histogramCounts.assign(counts.data_ptr<std::int64_t>(), counts.data_ptr<std::int64_t>() + bins);
    // Robust outliers: RMS above median + 5 * 1.4826 * MAD over the finite RMS values;
    // a position whose RMS is not finite is always an outlier.
    std::vector<float> sorted;
    for (float v : s.rms)
        if (std::isfinite(v)) sorted.push_back(v);
    float threshold = std::numeric_limits<float>::infinity();
    if (!sorted.empty()) {
        std::sort(sorted.begin(), sorted.end());
        const float median = sorted[sorted.size() / 2];
        std::vector<float> dev;
        for (float v : sorted) dev.push_back(std::fabs(v - median));
        std::sort(dev.begin(), dev.end());
        const float mad = std::max(dev[dev.size() / 2], 1e-6f * std::max(1.0f, median));
        threshold = median + 5.0f * 1.4826f * mad;
    }
    for (std::size_t i = 0; i < s.rms.size(); ++i)
        if (!std::isfinite(s.rms[i]) || s.rms[i] > threshold) s.outlierPositions.push_back(static_cast<std::int64_t>(i));
    return s;
}

/// Runs `body`, turning libtorch's own exceptions into draftscope::Error with `what` as
/// context, so callers only ever see draftscope::Error (torch messages without backtraces).
template <class F>
auto guarded(const char* what, F&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const c10::Error& e) {
        throw Error(std::string(what) + " failed in libtorch: " + e.what_without_backtrace());
    } catch (const std::bad_alloc&) {
        throw Error(std::string(what) + " failed: out of memory");
    }
}

}  // namespace

struct Engine::Impl {
    LoadOptions options;
    at::Device device{at::kCPU};
    at::ScalarType dtype = at::kFloat;
    std::unique_ptr<TargetModel> target;
    std::unique_ptr<Tokenizer> tokenizer;
    std::vector<std::unique_ptr<DFlashDrafter>> drafters;
    ModelSummary targetSummary;
    std::vector<ModelSummary> drafterSummaries;
    std::vector<std::int64_t> stopIds;

    const TargetModel& requireTarget() const {
        if (!target) throw Error("no target model is loaded");
        return *target;
    }
    const DFlashDrafter& requireDrafter(int index) const {
        requireTarget();
        if (drafters.empty()) throw Error("no drafter is loaded");
        if (index < 0 || index >= static_cast<int>(drafters.size()))
            throw Error("drafter index " + std::to_string(index) + " out of range (" +
                        std::to_string(drafters.size()) + " loaded)");
        return *drafters[static_cast<std::size_t>(index)];
    }
};

Engine::Engine() : d_(std::make_unique<Impl>()) { compat::configureThreads(0); }
Engine::~Engine() = default;

ModelSummary Engine::loadTarget(const std::string& dir, const LoadOptions& options) {
    return guarded("loading the target", [&]() {
        c10::InferenceMode guard;
        const auto device = compat::parseDevice(options.device);
        const auto dtype = compat::parseDtype(options.dtype);
        compat::configureThreads(options.threads);
        auto config = loadTargetConfig(dir);
        WeightLoader weights(dir);
        auto target = std::make_unique<TargetModel>(config, weights, dtype, device);

        std::unique_ptr<Tokenizer> tok;
        if (fs::exists(fs::path(dir) / "tokenizer.json"))
            tok = std::make_unique<Tokenizer>(Tokenizer::fromDirectory(dir));

        auto stops = targetStopTokenIds(dir, config.eosTokenIds, tok ? tok->eosTokenId() : std::nullopt);

        d_->drafters.clear();
        d_->drafterSummaries.clear();
        d_->target = std::move(target);
        d_->tokenizer = std::move(tok);
        d_->options = options;
        d_->device = device;
        d_->dtype = dtype;
        d_->stopIds = stops;
        d_->targetSummary = summarize(config, dir, d_->target->weightReport(), d_->target->parameterCount());
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
                                " beside it; give one with --drafter-config FILE");
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
        s.blockSize = config.blockSize;
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
        auto r = runDFlash(*d_->target, drafter, ids, settings, StopTokens(d_->stopIds, settings.ignoreEos), progress,
                           cancel);
        r.device = d_->options.device;
        r.dtype = d_->options.dtype;
        return r;
    });
}

TreeRunResult Engine::runTree(const PromptSpec& prompt, const RunSettings& settings, int budget,
                              const ProgressFn& progress, const std::atomic<bool>* cancel) {
    return guarded("the DDTree run", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(settings.drafter);
        if (settings.temperature != 0.0)
            throw Error("DDTree runs are greedy here; got temperature " + std::to_string(settings.temperature));
        auto r = runDDTree(*d_->target, drafter, encodePrompt(prompt), budget, settings.maxNewTokens, settings.loop,
                           StopTokens(d_->stopIds, settings.ignoreEos), progress, cancel);
        return r;
    });
}

DraftTree Engine::draftTree(const PromptSpec& prompt, int budget, LoopRevision revision, int drafterIndex) {
    return guarded("building the draft tree", [&]() {
        if (budget < 0) throw Error("DDTree budget must be >= 0, got " + std::to_string(budget));
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        const auto ids = encodePrompt(prompt);
        const auto P = static_cast<std::int64_t>(ids.size());
        auto cache = target.makeCache();
        const auto pre = target.forward(at::tensor(ids, at::TensorOptions().dtype(at::kLong)), cache,
                                        {drafter.featureIndices(), P - 1, {}, {}, {}});
        const auto anchor = pre.logits.argmax(-1).item<std::int64_t>();
        std::vector<std::int64_t> block(static_cast<std::size_t>(drafter.blockSize()), drafter.config().maskTokenId);
        block[0] = anchor;
        auto draftCache = drafter.makeCache();
        const auto out = drafter.draft(at::cat(pre.hidden, -1),
                                       at::tensor(block, at::TensorOptions().dtype(at::kLong)).to(target.device()), draftCache,
                                       revision);
        return treeFromDraftLogits(anchor, out.logits, budget);
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
        const auto out = target.forward(at::tensor(r.ids, at::TensorOptions().dtype(at::kLong)), cache, {all, 0, {}, {}, {}});
        r.hiddenStates = toFloatVector(at::stack(out.hidden));
        r.logits = toFloatVector(out.logits);
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

DraftBlockResult Engine::draftBlock(const PromptSpec& prompt, LoopRevision revision, int drafterIndex) {
    return guarded("the drafter call", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        DraftBlockResult r;
        r.promptIds = encodePrompt(prompt);
        const auto P = static_cast<std::int64_t>(r.promptIds.size());
        r.blockSize = drafter.blockSize();
        r.hiddenSize = target.config().hiddenSize;
        r.vocabSize = target.config().vocabSize;
        auto cache = target.makeCache();
        const auto pre = target.forward(at::tensor(r.promptIds, at::TensorOptions().dtype(at::kLong)), cache,
                                        {drafter.featureIndices(), P - 1, {}, {}, {}});
        r.anchor = pre.logits.argmax(-1).item<std::int64_t>();
        std::vector<std::int64_t> block(static_cast<std::size_t>(r.blockSize), drafter.config().maskTokenId);
        block[0] = r.anchor;
        auto draftCache = drafter.makeCache();
        const auto out = drafter.draft(at::cat(pre.hidden, -1),
                                       at::tensor(block, at::TensorOptions().dtype(at::kLong)).to(target.device()),
                                       draftCache, revision);
        r.draftHidden = toFloatVector(out.hidden);
        r.draftLogits = toFloatVector(out.logits);
        return r;
    });
}

TeacherForcedDrafts Engine::teacherForcedDrafts(const std::vector<std::int64_t>& sequence, std::int64_t promptLength,
                                                int drafterIndex, bool anchorFeatureInContext, LoopRevision revision,
                                                const std::atomic<bool>* cancel) {
    return guarded("the teacher-forced drafter probe", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        PromptSpec spec;
        spec.kind = PromptSpec::Kind::Ids;
        spec.ids = sequence;
        const auto ids = encodePrompt(spec);  // validates ids against the vocabulary
        TeacherForcedDrafts r;
        r.sequence = sequence;
        r.promptLength = promptLength;
        r.blockSize = drafter.blockSize();
        r.anchorFeatureInContext = anchorFeatureInContext;
        const auto T = static_cast<std::int64_t>(ids.size()), B = r.blockSize;
        if (promptLength < 1 || promptLength > T)
            throw Error("teacher-forced probe: prompt length " + std::to_string(promptLength) + " outside 1.." +
                        std::to_string(T));
        if (T - B < promptLength)
            throw Error("teacher-forced probe: a sequence of " + std::to_string(T) + " tokens after a prompt of " +
                        std::to_string(promptLength) + " holds no full block of " + std::to_string(B));
        const auto longOpts = at::TensorOptions().dtype(at::kLong);
        auto cache = target.makeCache();
        const auto fw = target.forward(at::tensor(ids, longOpts), cache, {drafter.featureIndices(), T, {}, {}, {}});
        const auto features = at::cat(fw.hidden, -1);  // [T, K*H]
        auto draftCache = drafter.makeCache();
        const auto mask = drafter.config().maskTokenId;
        for (std::int64_t a = promptLength; a + B <= T; ++a) {
            if (cancel && cancel->load()) throw Cancelled();
            const std::int64_t ctxEnd = anchorFeatureInContext ? a + 1 : a;
            const auto have = draftCache.length();
            std::vector<std::int64_t> block(static_cast<std::size_t>(B), mask);
            block[0] = ids[static_cast<std::size_t>(a)];
            const auto out = drafter.draft(features.narrow(0, have, ctxEnd - have),
                                           at::tensor(block, longOpts).to(target.device()), draftCache, revision,
                                           /*keepAttention=*/false, /*blockStart=*/a);
            const auto d = out.logits.argmax(-1).to(at::kCPU).contiguous();
            r.anchors.push_back(a);
            r.drafts.emplace_back(d.data_ptr<std::int64_t>(), d.data_ptr<std::int64_t>() + d.numel());
        }
        return r;
    });
}

DrafterAttention Engine::drafterAttention(const RunResult& run, int step, int drafterIndex) {
    return guarded("computing the drafter attention", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        if (step < 0 || step >= static_cast<int>(run.steps.size()))
            throw Error("verify step " + std::to_string(step) + " out of range (the run has " +
                        std::to_string(run.steps.size()) + " steps)");
        const auto& st = run.steps[static_cast<std::size_t>(step)];
        if (st.start < 1 || st.start > static_cast<std::int64_t>(run.outputIds.size()))
            throw Error("verify step " + std::to_string(step) + " starts at position " + std::to_string(st.start) +
                        ", outside the run's " + std::to_string(run.outputIds.size()) + " output tokens");
        PromptSpec prefix;
        prefix.kind = PromptSpec::Kind::Ids;
        prefix.ids.assign(run.outputIds.begin(), run.outputIds.begin() + st.start);
        const auto ids = encodePrompt(prefix);  // validates ids against the vocabulary
        // The step's own block: the current loop clips the last one (drafted has verify - 1 entries).
        const auto B = std::min<std::int64_t>(drafter.blockSize(), static_cast<std::int64_t>(st.drafted.size()) + 1);
        auto cache = target.makeCache();
        const auto pre = target.forward(at::tensor(ids, at::TensorOptions().dtype(at::kLong)), cache,
                                        {drafter.featureIndices(), st.start, {}, {}, {}});
        std::vector<std::int64_t> block(static_cast<std::size_t>(B), drafter.config().maskTokenId);
        block[0] = st.anchor;
        auto draftCache = drafter.makeCache();
        const auto out = drafter.draft(at::cat(pre.hidden, -1),
                                       at::tensor(block, at::TensorOptions().dtype(at::kLong)).to(target.device()),
                                       draftCache, run.settings.loop, /*keepAttention=*/true);
        DrafterAttention a;
        a.step = step;
        a.drafter = drafterIndex;
        a.numLayers = static_cast<std::int64_t>(out.attention.size());
        a.numHeads = out.attention.front().size(0);
        a.numQueries = B;
        a.numKeys = st.start + B;
        for (std::int64_t j = 0; j < B; ++j) a.queryPositions.push_back(st.start + j);
        for (std::int64_t k = 0; k < a.numKeys; ++k) a.keyPositions.push_back(k);
        a.keyTokens = ids;
        a.keyTokens.insert(a.keyTokens.end(), block.begin(), block.end());
        a.weights = toFloatVector(at::stack(out.attention));
        return a;
    });
}

HiddenStateStats Engine::hiddenStateStats(const PromptSpec& sequence, int drafterIndex, int histogramBins,
                                          std::int64_t promptLength) {
    return guarded("computing hidden-state statistics", [&]() {
        c10::InferenceMode guard;
        const auto& drafter = d_->requireDrafter(drafterIndex);
        const auto& target = *d_->target;
        if (histogramBins < 1) throw Error("histogram needs at least one bin");
        HiddenStateStats r;
        r.ids = encodePrompt(sequence);
        const auto T = static_cast<std::int64_t>(r.ids.size());
        if (promptLength > T)
            throw Error("hidden-state statistics: prompt length " + std::to_string(promptLength) +
                        " exceeds the sequence length " + std::to_string(T));
        r.promptLength = promptLength < 0 ? T : promptLength;
        const auto& tc = target.config();
        auto cache = target.makeCache();
        const auto indices = drafter.featureIndices();
        const auto out = target.forward(at::tensor(r.ids, at::TensorOptions().dtype(at::kLong)), cache, {indices, T, {}, {}, {}});
        for (std::size_t i = 0; i < indices.size(); ++i) {
            auto s = seriesStats(out.hidden[i], histogramBins);
            const auto id = indices[i] - 1;
            s.layerId = id;
            s.layerType = tc.layerTypes.at(static_cast<std::size_t>(id));
            s.name = "target layer " + std::to_string(id) + " (hidden_states[" + std::to_string(indices[i]) + "]" +
                     (indices[i] == tc.numLayers ? ", after the final norm)" : ")");
            r.series.push_back(std::move(s));
        }
        auto ctx = seriesStats(drafter.projectContext(at::cat(out.hidden, -1)), histogramBins);
        ctx.name = "drafter context (fc + hidden_norm)";
        ctx.layerType = "fc + hidden_norm";
        r.series.push_back(std::move(ctx));
        return r;
    });
}

}  // namespace draftscope
