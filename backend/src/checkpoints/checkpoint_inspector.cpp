#include "draftscope/inspector.h"
#include "draftscope/masks.h"

#include "checkpoints/training_checkpoint.h"
#include "checkpoints/weight_loader.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/model_config.h"
#include "draftscope/safetensors.h"
#include "models/dflash_drafter.h"
#include "models/target_model.h"

#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace draftscope {

namespace {
namespace fs = std::filesystem;

/// Uniform access to the tensors of a directory or a .pt file.
class TensorSource {
public:
    TensorSource(const std::string& path, const std::string& configPath) {
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            loader_ = std::make_unique<WeightLoader>(path);
            configDir_ = path;
            source_ = "safetensors directory";
            for (const auto& n : loader_->names()) names_.push_back(n);
        } else if (fs::is_regular_file(path, ec)) {
            auto ck = readTrainingCheckpoint(path);
            source_ = "training checkpoint (state dict under '" +
                      (ck.nestedUnder.empty() ? std::string("top level") : ck.nestedUnder) + "'" +
                      (ck.strippedPrefix.empty() ? std::string() : ", prefix '" + ck.strippedPrefix + "' stripped") + ")";
            tensors_ = std::move(ck.tensors);
            for (const auto& [n, _] : tensors_) names_.push_back(n);
            configFile_ = configPath.empty() ? (fs::path(path).parent_path() / "config.json").string() : configPath;
        } else {
            throw Error("checkpoint not found: '" + path + "' (expected a model directory or a .pt file)");
        }
        std::sort(names_.begin(), names_.end());
    }
    const std::vector<std::string>& names() const { return names_; }
    const std::string& source() const { return source_; }
    /// Directory holding config.json (empty for .pt, see configFile()).
    const std::string& configDir() const { return configDir_; }
    std::string configFile() const { return configDir_.empty() ? configFile_ : configDir_ + "/config.json"; }
    std::vector<std::int64_t> shape(const std::string& n) const {
        return loader_ ? loader_->shape(n) : tensors_.at(n).sizes().vec();
    }
    std::string dtype(const std::string& n) const {
        if (loader_) return dtypeName(loader_->dtype(n));
        switch (tensors_.at(n).scalar_type()) {
            case at::kFloat: return "F32";
            case at::kBFloat16: return "BF16";
            case at::kHalf: return "F16";
            case at::kDouble: return "F64";
            case at::kLong: return "I64";
            case at::kInt: return "I32";
            case at::kShort: return "I16";
            case at::kChar: return "I8";
            case at::kByte: return "U8";
            case at::kBool: return "BOOL";
            default: return "?";
        }
    }
    bool isFloat(const std::string& n) const {
        return loader_ ? isFloatingPoint(loader_->dtype(n)) : at::isFloatingType(tensors_.at(n).scalar_type());
    }
    /// The tensor as float32 on the CPU (floating-point tensors only).
    at::Tensor float32(const std::string& n) const {
        return loader_ ? loader_->load(n, at::kFloat, at::Device(at::kCPU)) : tensors_.at(n).to(at::kFloat);
    }
    bool has(const std::string& n) const { return loader_ ? loader_->has(n) : tensors_.count(n) != 0; }

private:
    std::unique_ptr<WeightLoader> loader_;
    std::map<std::string, at::Tensor> tensors_;
    std::vector<std::string> names_;
    std::string source_, configDir_, configFile_;
};

void flatten(const nlohmann::json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
    if (j.is_object() && !j.empty()) {
        for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    } else {
        out.emplace_back(prefix, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
}


void compareWithSpecs(CheckpointInspection& r, const TensorSource& src, const std::vector<TensorSpec>& specs,
                      const std::vector<std::string>& ignoredPrefixes) {
    std::map<std::string, bool> needed;
    for (const auto& s : specs) {
        needed[s.name] = true;
        if (!src.has(s.name)) {
            r.missing.push_back(s.name + " (expected shape " + shapeString(s.shape) + ")");
        } else if (s.packed ? src.dtype(s.name) != "U8" : src.isFloat(s.name) == s.integer) {
            r.mismatched.push_back(s.name + ": dtype " + src.dtype(s.name) + ", expected " +
                                   (s.packed    ? "U8 (packed MXFP4)"
                                    : s.integer ? "an integer or bool dtype"
                                                : "a floating-point dtype"));
        } else if (src.shape(s.name) != s.shape) {
            r.mismatched.push_back(s.name + ": shape " + shapeString(src.shape(s.name)) + ", expected " +
                                   shapeString(s.shape));
        }
    }
    for (const auto& n : src.names()) {
        if (needed.count(n)) continue;
        bool ignored = false;
        for (const auto& p : ignoredPrefixes) ignored = ignored || n.rfind(p, 0) == 0;
        if (!ignored) r.unexpected.push_back(n);
    }
}

/// gpt-oss's parts in words: each layer's type and window, its sink logits per head, and how
/// the experts are stored (docs/ENGINE.md, "gpt-oss targets").
void describeGptOss(CheckpointInspection& r, const TensorSource& src, const TransformerConfig& c) {
    bool packed = false;
    for (std::int64_t l = 0; l < c.numLayers; ++l) {
        const auto lp = c.weightPrefix + "layers." + std::to_string(l) + ".";
        packed = packed || src.has(lp + "mlp.experts.gate_up_proj_blocks");
        std::string line = "layer " + std::to_string(l) + ": " + c.layerTypes[static_cast<std::size_t>(l)];
        if (c.layerTypes[static_cast<std::size_t>(l)] == "sliding_attention")
            line += " (window " + std::to_string(c.slidingWindow) + ")";
        const auto sinks = lp + "self_attn.sinks";
        if (src.has(sinks) && src.isFloat(sinks)) {
            const auto v = src.float32(sinks).reshape({-1}).to(at::kFloat).contiguous();
            line += "; sink logit per head:";
            const auto n = std::min<std::int64_t>(v.numel(), 16);
            char buf[32];
            for (std::int64_t h = 0; h < n; ++h) {
                std::snprintf(buf, sizeof buf, " %.3g", static_cast<double>(v.data_ptr<float>()[h]));
                line += buf;
            }
            if (v.numel() > n) line += " ... (" + std::to_string(v.numel()) + " heads)";
        }
        r.notes.push_back(line);
    }
    r.notes.push_back(std::string("experts: ") + std::to_string(c.moe.numExperts) + ", top-" +
                      std::to_string(c.moe.numExpertsPerToken) + ", width " + std::to_string(c.moe.expertIntermediateSize) +
                      (packed ? "; stored as MXFP4 (blocks of 32 fp4 e2m1 values with one E8M0 scale; U8 tensors "
                                "*_blocks / *_scales, whose statistics are bytes, not weights)"
                              : "; stored unquantised"));
}

/// Gemma 4's parts in words: each layer's type, head size, kv heads, window and rotary
/// schedule, which layers borrow another's keys and values, and the model-wide parts
/// (docs/ENGINE.md, "Gemma 4 targets").
void describeGemma4(CheckpointInspection& r, const TransformerConfig& c) {
    const auto& g = c.gemma4;
    auto rope = [](const RopeConfig& p) {
        char buf[96];
        if (p.type == "proportional")
            std::snprintf(buf, sizeof buf, "proportional rope %.3g of the head, theta %.6g", p.partialRotaryFactor, p.theta);
        else
            std::snprintf(buf, sizeof buf, "default rope, theta %.6g", p.theta);
        return std::string(buf);
    };
    for (std::int64_t l = 0; l < c.numLayers; ++l) {
        const bool sliding = c.isSlidingLayer(l);
        std::string line = "layer " + std::to_string(l) + ": " + c.layerTypes[static_cast<std::size_t>(l)] +
                           (sliding ? " (window " + std::to_string(c.slidingWindow) + ")" : std::string()) +
                           "; head " + std::to_string(c.headDimOf(l)) + ", " + std::to_string(c.kvHeadsOf(l)) +
                           " kv heads; " + rope(sliding ? c.rope : g.fullRope);
        if (!sliding && g.attentionKEqV) line += "; values = keys (attention_k_eq_v)";
        if (const auto src = c.kvSourceLayer(l); src >= 0) line += "; keys and values of layer " + std::to_string(src);
        r.notes.push_back(line);
    }
    std::string model = "embeddings x sqrt(" + std::to_string(c.hiddenSize) + ")";
    if (g.perLayerInputSize)
        model += "; per-layer inputs of " + std::to_string(g.perLayerInputSize) + " over " +
                 std::to_string(g.perLayerVocabSize) + " tokens";
    if (g.moeBlock)
        model += "; MoE block beside each dense MLP: " + std::to_string(c.moe.numExperts) + " experts, top-" +
                 std::to_string(c.moe.numExpertsPerToken) + ", width " + std::to_string(c.moe.expertIntermediateSize);
    if (g.finalLogitSoftcapping) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "; logits soft-capped at %.6g", *g.finalLogitSoftcapping);
        model += buf;
    }
    r.notes.push_back(model);
}

/// Compares the checkpoint with the architecture its config names.
void architectureCheck(CheckpointInspection& r, const TensorSource& src) {
    std::error_code ec;
    const auto cfgFile = src.configFile();
    if (!fs::is_regular_file(cfgFile, ec)) {
        r.kind = "unknown";
        r.notes.push_back("no config at " + cfgFile + ": the architecture check is skipped");
        return;
    }
    const std::string text = readFileToString(cfgFile);
    checkJsonDepth(text.data(), text.data() + text.size(), cfgFile);
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        r.kind = "unknown";
        r.notes.push_back(cfgFile + " is not a JSON object: the architecture check is skipped");
        return;
    }
    flatten(j, "", r.configFields);
    bool drafter = j.contains("dflash_config") || j.contains("block_size");
    if (j.contains("architectures") && j["architectures"].is_array())
        for (const auto& a : j["architectures"])
            if (a.is_string() && a.get<std::string>().find("DFlash") != std::string::npos) drafter = true;
    // The config loaders read `<dir>/config.json`; a .pt's config may sit elsewhere.
    const std::string dir = fs::path(cfgFile).parent_path().string();
    const bool plainName = fs::path(cfgFile).filename() == "config.json";
    try {
        if (!plainName) throw Error("the config must be named config.json for the architecture check");
        if (drafter) {
            const auto c = loadDrafterConfig(dir);
            r.kind = "drafter";
            r.architecture = c.body.architecture.empty() ? "DFlashDraftModel" : c.body.architecture;
            r.attentionLayout = describeLayout(c.layers);
            r.family = drafterFamilyName(c.family);
            r.familyDetail = describeFamily(c);
            std::int64_t fcIn = static_cast<std::int64_t>(c.targetLayerIds.size()) * c.body.hiddenSize;
            if (src.has("fc.weight") && src.shape("fc.weight").size() == 2) fcIn = src.shape("fc.weight")[1];
            compareWithSpecs(r, src,
                             DFlashDrafter::expectedTensors(c, fcIn, [&](const std::string& n) { return src.has(n); }),
                             DFlashDrafter::ignoredTensorPrefixes(c));
            r.architectureChecked = true;
        } else {
            const auto c = loadTargetConfig(dir);
            r.kind = "target";
            r.architecture = c.architecture;
            // The expert layout that fits the checkpoint best (gpt-oss: bf16 or MXFP4).
            const bool gptOss = c.family == TargetFamily::GptOss;
            std::vector<ExpertLayout> layouts = {gptOss ? ExpertLayout::Fused : ExpertLayout::PerExpert};
            if (c.moe.enabled()) layouts.push_back(gptOss ? ExpertLayout::Mxfp4 : ExpertLayout::Fused);
            CheckpointInspection a = r;
            for (std::size_t i = 0; i < layouts.size(); ++i) {
                CheckpointInspection b = r;
                compareWithSpecs(b, src, TargetModel::expectedTensors(c, layouts[i]), TargetModel::ignoredTensorPrefixes(c));
                if (i == 0 || b.missing.size() + b.mismatched.size() < a.missing.size() + a.mismatched.size()) a = b;
            }
            if (gptOss) describeGptOss(r, src, c);
            if (c.family == TargetFamily::Gemma4) describeGemma4(r, c);
            r.missing = a.missing;
            r.mismatched = a.mismatched;
            r.unexpected = a.unexpected;
            r.architectureChecked = true;
        }
    } catch (const Error& e) {
        r.kind = drafter ? "drafter" : "unknown";
        r.notes.push_back(std::string("the config is not understood, so the architecture check is skipped: ") + e.what());
    }
}

TensorStats statsOf(const TensorSource& src, const std::string& n) {
    TensorStats s;
    s.name = n;
    s.shape = src.shape(n);
    s.dtype = src.dtype(n);
    s.numel = 1;
    for (auto d : s.shape) s.numel *= d;
    if (!src.isFloat(n) || s.numel == 0) return s;
    const auto x = src.float32(n).reshape({-1}).to(at::kDouble);
    const auto finite = at::isfinite(x);
    s.nonFinite = s.numel - finite.sum().item<std::int64_t>();
    const auto v = s.nonFinite ? x.masked_select(finite) : x;
    if (v.numel() == 0) return s;
    s.mean = v.mean().item<double>();
    s.rms = std::sqrt(v.pow(2).mean().item<double>());
    s.std = std::sqrt(std::max(0.0, s.rms * s.rms - s.mean * s.mean));
    s.maxAbs = v.abs().max().item<double>();
    return s;
}

}  // namespace

CheckpointInspection inspectCheckpoint(const std::string& path, const std::string& configPath) {
    c10::InferenceMode guard;
    try {
        const TensorSource src(path, configPath);
        CheckpointInspection r;
        r.path = path;
        r.source = src.source();
        architectureCheck(r, src);
        for (const auto& n : src.names()) {
            r.tensors.push_back(statsOf(src, n));
            const auto& t = r.tensors.back();
            if (src.isFloat(n)) r.totalParameters += t.numel;
            std::int64_t bytes = 1;
            const auto& d = t.dtype;
            bytes = d == "F64" || d == "I64" ? 8 : d == "F32" || d == "I32" ? 4 : d == "BF16" || d == "F16" || d == "I16" ? 2 : 1;
            r.totalBytes += static_cast<std::uint64_t>(t.numel * bytes);
        }
        return r;
    } catch (const c10::Error& e) {
        throw Error("inspecting '" + path + "': " + e.what_without_backtrace());
    }
}

CheckpointDiff diffCheckpoints(const std::string& pathA, const std::string& pathB, const std::string& configA,
                               const std::string& configB) {
    c10::InferenceMode guard;
    try {
        const TensorSource a(pathA, configA), b(pathB, configB);
        CheckpointDiff r;
        r.pathA = pathA;
        r.pathB = pathB;
        for (const auto& n : a.names()) {
            if (!b.has(n)) {
                r.onlyA.push_back(n);
                continue;
            }
            TensorDiff d;
            d.name = n;
            d.shapeA = a.shape(n);
            d.shapeB = b.shape(n);
            d.sameShape = d.shapeA == d.shapeB;
            if (!a.isFloat(n) || !b.isFloat(n)) {
                r.common.push_back(d);
                continue;
            }
            const auto x = a.float32(n).reshape({-1}).to(at::kDouble);
            const auto y = b.float32(n).reshape({-1}).to(at::kDouble);
            d.rmsA = x.numel() ? std::sqrt(x.pow(2).mean().item<double>()) : 0.0;
            d.rmsB = y.numel() ? std::sqrt(y.pow(2).mean().item<double>()) : 0.0;
            if (d.sameShape && x.numel() > 0) {
                const auto diff = x - y;
                d.maxAbsDiff = diff.abs().max().item<double>();
                const double nd = diff.norm().item<double>(), nx = x.norm().item<double>(), ny = y.norm().item<double>();
                d.relativeDiff = ny > 0 ? nd / ny : (nd > 0 ? INFINITY : 0.0);
                d.cosine = nx > 0 && ny > 0 ? (x * y).sum().item<double>() / (nx * ny) : (nx == ny ? 1.0 : 0.0);
            }
            r.common.push_back(d);
        }
        for (const auto& n : b.names())
            if (!a.has(n)) r.onlyB.push_back(n);
        std::stable_sort(r.common.begin(), r.common.end(), [](const TensorDiff& x, const TensorDiff& y) {
            if (x.sameShape != y.sameShape) return !x.sameShape;
            return x.relativeDiff > y.relativeDiff;
        });
        return r;
    } catch (const c10::Error& e) {
        throw Error("comparing '" + pathA + "' with '" + pathB + "': " + e.what_without_backtrace());
    }
}

}  // namespace draftscope
