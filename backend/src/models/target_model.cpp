#include "models/target_model.h"

#include "core/torch_compat.h"
#include "draftscope/errors.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace draftscope {

namespace {
/// Llama's and gpt-oss's attention_bias also adds an o_proj bias; Qwen2's q/k/v bias does not.
bool hasOutputBias(const TransformerConfig& c) {
    return c.attentionBias && (c.family == TargetFamily::Llama || c.family == TargetFamily::GptOss);
}
bool isGptOss(const TransformerConfig& c) { return c.family == TargetFamily::GptOss; }
bool isQwen3_5(const TransformerConfig& c) { return c.family == TargetFamily::Qwen3_5; }
bool isGemma4(const TransformerConfig& c) { return c.family == TargetFamily::Gemma4; }
bool isLinearLayer(const TransformerConfig& c, std::int64_t l) {
    return c.layerTypes.at(static_cast<std::size_t>(l)) == "linear_attention";
}
/// Layer l's MLP tensors: sparse MoE (MoeConfig::isSparseLayer) or dense SwiGLU.
void mlpSpecs(std::vector<TensorSpec>& s, const TransformerConfig& c, std::int64_t l, const std::string& p,
              ExpertLayout experts) {
    if (isGptOss(c)) GptOssMoe::specs(s, p, c, experts == ExpertLayout::Mxfp4 ? experts : ExpertLayout::Fused);
    else if (c.moe.isSparseLayer(l)) SparseMoeMlp::specs(s, p, c.hiddenSize, c.moe, experts);
    else SwiGluMlp::specs(s, p, c.hiddenSize, c.intermediateSize);
}
/// Bytes of layer l's cache: keys and values for `ctx` tokens, or a Gated DeltaNet layer's
/// conv inputs (compute dtype, `elem` bytes) and float32 recurrent state.
std::uint64_t layerStateBytes(const TransformerConfig& c, std::int64_t l, std::uint64_t elem, std::uint64_t ctx) {
    const auto& la = c.linearAttention;
    if (c.kvSourceLayer(l) >= 0) return 0;  // Gemma 4 KV sharing: the source layer's cache
    if (!isQwen3_5(c) || !isLinearLayer(c, l))
        return 2 * static_cast<std::uint64_t>(c.kvHeadsOf(l) * c.headDimOf(l)) * ctx * elem;
    const auto convDim = static_cast<std::uint64_t>(2 * la.numKeyHeads * la.keyHeadDim + la.numValueHeads * la.valueHeadDim);
    return convDim * static_cast<std::uint64_t>(la.convKernel) * elem +
           static_cast<std::uint64_t>(la.numValueHeads * la.keyHeadDim * la.valueHeadDim) * 4;
}
}  // namespace

std::vector<std::string> TargetModel::ignoredTensorPrefixes(const TransformerConfig& c) {
    std::vector<std::string> out = {"model.visual.", "mtp.", "visual."};
    if (!isGemma4(c)) return out;
    for (const char* p : {"model.vision_tower.", "model.embed_vision.", "model.audio_tower.", "model.embed_audio."})
        out.push_back(p);
    for (std::int64_t l = 0; l < c.numLayers; ++l)
        if (c.kvSourceLayer(l) >= 0)
            for (const char* n : {"k_proj.", "v_proj.", "k_norm.", "v_norm."})
                out.push_back(c.weightPrefix + "layers." + std::to_string(l) + ".self_attn." + n);
    return out;
}

std::vector<TensorSpec> TargetModel::expectedTensors(const TransformerConfig& c, ExpertLayout experts) {
    std::vector<TensorSpec> s;
    const auto& p = c.weightPrefix;
    const auto H = c.hiddenSize, D = c.headDim;
    s.push_back({p + "embed_tokens.weight", {c.vocabSize, H}});
    s.push_back({p + "norm.weight", {H}});
    if (!c.tieWordEmbeddings) s.push_back({"lm_head.weight", {c.vocabSize, H}});
    if (isGemma4(c)) {
        Gemma4PerLayerInputs::specs(s, c);
        for (std::int64_t l = 0; l < c.numLayers; ++l) Gemma4Layer::specs(s, p + "layers." + std::to_string(l) + ".", c, l);
        return s;
    }
    for (std::int64_t l = 0; l < c.numLayers; ++l) {
        const auto lp = p + "layers." + std::to_string(l) + ".";
        s.push_back({lp + "input_layernorm.weight", {H}});
        s.push_back({lp + "post_attention_layernorm.weight", {H}});
        if (isQwen3_5(c)) {
            if (isLinearLayer(c, l)) GatedDeltaNet::specs(s, lp + "linear_attn.", c);
            else GatedAttention::specs(s, lp + "self_attn.", c);
            mlpSpecs(s, c, l, lp + "mlp.", experts);
            continue;
        }
        s.push_back({lp + "self_attn.q_proj.weight", {c.numHeads * D, H}});
        s.push_back({lp + "self_attn.k_proj.weight", {c.numKvHeads * D, H}});
        s.push_back({lp + "self_attn.v_proj.weight", {c.numKvHeads * D, H}});
        s.push_back({lp + "self_attn.o_proj.weight", {H, c.numHeads * D}});
        if (c.attentionBias) {
            s.push_back({lp + "self_attn.q_proj.bias", {c.numHeads * D}});
            s.push_back({lp + "self_attn.k_proj.bias", {c.numKvHeads * D}});
            s.push_back({lp + "self_attn.v_proj.bias", {c.numKvHeads * D}});
            if (hasOutputBias(c)) s.push_back({lp + "self_attn.o_proj.bias", {H}});
        }
        if (c.family == TargetFamily::Qwen3) {
            s.push_back({lp + "self_attn.q_norm.weight", {D}});
            s.push_back({lp + "self_attn.k_norm.weight", {D}});
        }
        if (isGptOss(c)) s.push_back({lp + "self_attn.sinks", {c.numHeads}});
        mlpSpecs(s, c, l, lp + "mlp.", experts);
    }
    return s;
}

PlacementRequest TargetModel::placementRequest(const TransformerConfig& c, const WeightLoader& weights,
                                               at::ScalarType dtype, std::int64_t maxContext, bool unpackExperts) {
    const auto experts = c.moe.enabled() ? detectExpertLayout(weights.names(), c.weightPrefix) : ExpertLayout::PerExpert;
    const auto elem = static_cast<std::uint64_t>(at::elementSize(dtype));
    const auto ctx = static_cast<std::uint64_t>(maxContext);
    PlacementRequest r;
    r.layerBytes.assign(static_cast<std::size_t>(c.numLayers), 0);
    const std::string layers = c.weightPrefix + "layers.";
    for (const auto& s : expectedTensors(c, experts)) {
        // Packed MXFP4 stays packed on the device, or becomes two weights per block byte.
        std::uint64_t n = !s.packed ? elem : !unpackExperts ? 1 : s.name.size() > 7 && s.name.compare(s.name.size() - 7, 7, "_blocks") == 0 ? 2 * elem : 0;
        for (auto d : s.shape) n *= static_cast<std::uint64_t>(d);
        if (s.name.rfind(layers, 0) == 0)
            r.layerBytes[std::stoul(s.name.substr(layers.size()))] += n;
        else if (s.name == c.weightPrefix + "embed_tokens.weight" || s.name.rfind(c.weightPrefix + "embed_tokens_per_layer", 0) == 0 ||
                 s.name.rfind(c.weightPrefix + "per_layer_", 0) == 0)  // Gemma 4's per-layer inputs live with the embeddings
            r.embeddingBytes += n;
        else
            r.headBytes += n;
    }
    if (c.tieWordEmbeddings) r.headBytes += static_cast<std::uint64_t>(c.vocabSize * c.hiddenSize) * elem;
    for (std::int64_t l = 0; l < c.numLayers; ++l) r.layerBytes[static_cast<std::size_t>(l)] += layerStateBytes(c, l, elem, ctx);
    // The widest activations of a forward over maxContext rows: the MLP's gate and up
    // projections and their product beside the residual stream and its norm.
    const auto& m = c.moe;
    const auto moeWidth = m.numExpertsPerToken * m.expertIntermediateSize + m.sharedExpertIntermediateSize;
    const auto width = static_cast<std::uint64_t>(4 * c.hiddenSize + 3 * std::max(c.intermediateSize, moeWidth));
    r.reserveBytes = ctx * width * elem;
    return r;
}

TargetModel::TargetModel(const TransformerConfig& config, const WeightLoader& weights, at::ScalarType dtype,
                         TargetPlacement placement)
    : config_(config),
      dtype_(dtype),
      placement_(std::move(placement)),
      rotary_(config.rope, config.headDim, deviceOf(placement_.plan.embeddingDevice)) {
    if (isGemma4(config_))
        fullRotary_.emplace(config_.gemma4.fullRope, config_.gemma4.globalHeadDim, deviceOf(placement_.plan.embeddingDevice));
    if (static_cast<std::int64_t>(placement_.plan.layerDevice.size()) != config_.numLayers)
        throw Error("placement plan for " + std::to_string(placement_.plan.layerDevice.size()) + " layers, the target has " +
                    std::to_string(config_.numLayers));
    const auto experts = config_.moe.enabled() ? detectExpertLayout(weights.names(), config_.weightPrefix)
                                               : ExpertLayout::PerExpert;
    const auto specs = expectedTensors(config_, experts);
    // Vision towers and multi-token-prediction heads are not part of the language model.
    report_ = weights.check(specs, ignoredTensorPrefixes(config_));
    for (const auto& s : specs) {
        std::int64_t n = 1;
        for (auto d : s.shape) n *= d;
        // MXFP4: two weights per block byte; scales are not parameters.
        if (s.packed) n = s.name.size() > 7 && s.name.compare(s.name.size() - 7, 7, "_blocks") == 0 ? 2 * n : 0;
        parameters_ += n;
    }
    const auto& plan = placement_.plan;
    const auto& p = config_.weightPrefix;
    const LoadTarget embeddings{weights, dtype, deviceOf(plan.embeddingDevice)};
    embedTokens_ = embeddings.get(p + "embed_tokens.weight");
    if (isGemma4(config_)) {
        // HF Gemma4TextScaledWordEmbedding: sqrt(H) held as a float32 buffer, cast to the
        // weight's dtype, multiplied in that dtype.
        embedScale_ = at::scalar_tensor(std::sqrt(static_cast<double>(config_.hiddenSize)), at::kFloat)
                          .to(dtype).to(deviceOf(plan.embeddingDevice));
        if (config_.gemma4.perLayerInputSize) perLayerInputs_ = Gemma4PerLayerInputs::load(embeddings, config_);
    }
    loadLayers(weights, experts);
    const LoadTarget head{weights, dtype, deviceOf(plan.headDevice)};
    lmHead_ = config_.tieWordEmbeddings ? move(embedTokens_, plan.embeddingDevice, plan.headDevice) : head.get("lm_head.weight");
    finalNorm_ = normAt(head, p + "norm.weight");
}

RmsNorm TargetModel::normAt(const LoadTarget& lt, const std::string& name) const {
    if (isGemma4(config_)) return gemma4Norm(lt, name, config_.rmsNormEps);
    if (isGptOss(config_))  // GptOssRMSNorm: float32 weight applied before the cast
        return {LoadTarget{lt.weights, at::kFloat, lt.device}.get(name), config_.rmsNormEps, false, true};
    return {lt.get(name), config_.rmsNormEps, isQwen3_5(config_)};  // Qwen3_5RMSNorm scales by (1 + w)
}

void TargetModel::loadLayers(const WeightLoader& weights, ExpertLayout experts) {
    const auto& p = config_.weightPrefix;
    const double eps = config_.rmsNormEps;
    for (std::int64_t l = 0; l < config_.numLayers; ++l) {
        const LoadTarget lt{weights, dtype_, deviceOf(layerGroup(l))};
        const auto lp = p + "layers." + std::to_string(l) + ".";
        const auto ap = lp + "self_attn.";
        const auto mp = lp + "mlp.";
        Layer L;
        if (isGemma4(config_)) {
            L.gemma = Gemma4Layer::load(lt, lp, config_, l);
            L.sliding = config_.isSlidingLayer(l);
            layers_.push_back(std::move(L));
            continue;
        }
        L.inputNorm = normAt(lt, lp + "input_layernorm.weight");
        L.postNorm = normAt(lt, lp + "post_attention_layernorm.weight");
        if (isGptOss(config_)) {
            L.gptOssMoe = GptOssMoe::load(lt, mp, config_, experts == ExpertLayout::Mxfp4 ? experts : ExpertLayout::Fused,
                                          placement_.unpackExperts);
            L.sinks = LoadTarget{weights, at::kFloat, lt.device}.get(ap + "sinks");
            L.sliding = config_.layerTypes[static_cast<std::size_t>(l)] == "sliding_attention";
        } else if (config_.moe.isSparseLayer(l)) L.moe = SparseMoeMlp::load(lt, mp, config_.moe, experts);
        else L.mlp = SwiGluMlp::load(lt, mp);
        if (isQwen3_5(config_)) {
            if (isLinearLayer(config_, l)) L.deltaNet = GatedDeltaNet::load(lt, lp + "linear_attn.", config_);
            else L.gatedAttention = GatedAttention::load(lt, ap, config_);
            layers_.push_back(std::move(L));
            continue;
        }
        const bool bias = config_.attentionBias;
        L.q = {lt.get(ap + "q_proj.weight"), bias ? lt.get(ap + "q_proj.bias") : at::Tensor()};
        L.k = {lt.get(ap + "k_proj.weight"), bias ? lt.get(ap + "k_proj.bias") : at::Tensor()};
        L.v = {lt.get(ap + "v_proj.weight"), bias ? lt.get(ap + "v_proj.bias") : at::Tensor()};
        L.o = {lt.get(ap + "o_proj.weight"), hasOutputBias(config_) ? lt.get(ap + "o_proj.bias") : at::Tensor()};
        if (config_.family == TargetFamily::Qwen3) {
            L.qNorm = RmsNorm{lt.get(ap + "q_norm.weight"), eps};
            L.kNorm = RmsNorm{lt.get(ap + "k_norm.weight"), eps};
        }
        layers_.push_back(std::move(L));
    }
}

at::Tensor TargetModel::move(const at::Tensor& t, int from, int to) const {
    if (from == to || !t.defined()) return t;
    return t.to(deviceOf(to), t.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
}

std::string TargetModel::quantizationSummary() const {
    for (const auto& layer : layers_)
        if (layer.gptOssMoe && layer.gptOssMoe->packed())
            return "MXFP4 experts, kept packed (each chosen expert dequantised per forward)";
    if (placement_.unpackExperts)
        return std::string("MXFP4 experts, dequantised to ") + (dtype_ == at::kBFloat16 ? "bfloat16" : "float32") +
               " at load";
    return {};
}

at::Tensor TargetModel::embed(const at::Tensor& ids) const {
    return at::embedding(embedTokens_, ids.to(deviceOf(placement_.plan.embeddingDevice)));
}

at::Tensor TargetModel::lmHead(const at::Tensor& normedHidden) const {
    return at::linear(normedHidden, lmHead_).to(at::kFloat);
}

at::Tensor TargetModel::drafterEmbed(const at::Tensor& ids) const {
    return move(embed(ids), placement_.plan.embeddingDevice, placement_.plan.drafterDevice);
}

at::Tensor TargetModel::drafterLogits(const at::Tensor& drafterHidden) const {
    return lmHead(move(drafterHidden, placement_.plan.drafterDevice, placement_.plan.headDevice));
}

std::string TargetModel::staticShapeUnsupportedReason() const {
    if (config_.moe.enabled()) return "the MoE target routes tokens to experts on the host";
    if (placement_.devices.size() > 1)
        return "the target spans " + std::to_string(placement_.devices.size()) + " placement groups";
    return {};
}

TargetForwardResult TargetModel::forward(const at::Tensor& idsIn, KVCache& cache,
                                         const TargetForwardRequest& req) const {
    const auto& plan = placement_.plan;
    const auto& device0 = deviceOf(plan.embeddingDevice);
    const auto ids = idsIn.to(device0);
    const std::int64_t T = ids.size(0);
    const std::int64_t past = cache.length();
    const std::int64_t L = config_.numLayers;
    const auto Hq = config_.numHeads, Hkv = config_.numKvHeads, D = config_.headDim;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));

    for (auto i : req.hiddenIndices)
        if (i < 0 || i > L)
            throw Error("hidden-state index " + std::to_string(i) + " out of range 0.." + std::to_string(L));

    const auto longOpts = at::TensorOptions().dtype(at::kLong).device(device0);
    if (req.staticShapes) {
        const auto why = staticShapeUnsupportedReason();
        if (!why.empty()) throw Error("static-shape forward impossible: " + why);
        if (!req.positions || req.visible || !req.treeParents.empty() || cache.capacity() == 0)
            throw Error("static-shape forward: needs positions, no mask or tree, and an allocated cache");
    }
    const at::Tensor positions = req.positions ? req.positions->to(device0) : at::arange(past, past + T, longOpts);
    at::Tensor cos, sin;
    std::tie(cos, sin) = rotary_.cosSin(positions, dtype_);

    const bool hybrid = isQwen3_5(config_);
    const bool tree = !req.treeParents.empty();
    if (tree && static_cast<std::int64_t>(req.treeParents.size()) != T)
        throw Error("tree verification: " + std::to_string(req.treeParents.size()) + " parent indices for " +
                    std::to_string(T) + " rows");
    if (hybrid && req.visible && !tree)
        throw Error("a custom attention mask on the hybrid target '" + config_.architecture +
                    "' needs the tree's parent rows: its Gated DeltaNet layers follow the tree, not the mask");
    cache.clearTreeStates();
    if (hybrid && past > 0 && !cache.hasLinearState() && config_.isHybrid())
        throw Error("the cache holds " + std::to_string(past) + " tokens but no Gated DeltaNet state: it was not "
                    "filled by this hybrid target");
    std::optional<at::Tensor> visible = req.visible;
    if (req.staticShapes) {
        // Row i sees the cache rows up to its own position; the rest of the capacity (rows
        // not yet written or left by rejected drafts) is masked.
        visible = at::arange(cache.capacity(), longOpts).unsqueeze(0) <= positions.unsqueeze(1);
    } else if (visible) {
        visible = visible->to(device0);
    } else if (T > 1) {
        // Causal: new row i sees cache rows and new rows 0..i.
        const auto keyIdx = at::arange(past + T, longOpts);
        visible = keyIdx.unsqueeze(0) <= (at::arange(T, longOpts) + past).unsqueeze(1);
    }

    // Sliding_attention layers (gpt-oss, Gemma 4): the causal (or tree) visibility, and a key
    // only if its position is within the window of the query's (HF: kv > q - window). Cache
    // rows hold positions 0..past-1 (committed sequences are contiguous; tree paths are
    // compacted); with static shapes row r of the capacity holds position r.
    std::optional<at::Tensor> slidingVisible;
    if ((isGptOss(config_) || isGemma4(config_)) && config_.slidingWindow > 0) {
        const auto keyPos = req.staticShapes ? at::arange(cache.capacity(), longOpts)
                                             : at::cat({at::arange(past, longOpts), positions});
        const auto window = (positions.unsqueeze(1) - keyPos.unsqueeze(0)) < config_.slidingWindow;
        slidingVisible = visible ? visible->logical_and(window) : window;
    }

    TargetForwardResult out;
    out.hidden.resize(req.hiddenIndices.size());
    int group = plan.embeddingDevice;  // where x, cos, sin and visible are
    // Tapped hidden states go to the drafters' group.
    auto keep = [&](std::int64_t index, const at::Tensor& h) {
        for (std::size_t j = 0; j < req.hiddenIndices.size(); ++j)
            if (req.hiddenIndices[j] == index) out.hidden[j] = move(h, group, plan.drafterDevice);
    };
    // Gemma4ForConditionalGeneration embeds its image / video / audio placeholder ids as the
    // pad token (HF Gemma4Model.forward), for the per-layer inputs too.
    at::Tensor embedIds = ids;
    for (const auto id : config_.gemma4.placeholderIds)
        embedIds = at::where(ids == id, at::full_like(ids, config_.gemma4.padTokenId), embedIds);
    at::Tensor x = embed(embedIds).to(dtype_);
    // Gemma 4: embeddings x sqrt(H), the full layers' own rotary schedule, per-layer inputs.
    at::Tensor fullCos, fullSin, perLayer;
    if (isGemma4(config_)) {
        x = x * embedScale_;
        std::tie(fullCos, fullSin) = fullRotary_->cosSin(positions, dtype_);
        if (perLayerInputs_) perLayer = (*perLayerInputs_)(embedIds, x);
    }
    std::vector<std::pair<at::Tensor, at::Tensor>> gemmaKv(isGemma4(config_) ? static_cast<std::size_t>(L) : 0);
    // A placement boundary: the residual stream and what every layer reads move once.
    auto crossTo = [&](int to) {
        x = move(x, group, to);
        cos = move(cos, group, to);
        sin = move(sin, group, to);
        fullCos = move(fullCos, group, to);
        fullSin = move(fullSin, group, to);
        perLayer = move(perLayer, group, to);
        if (visible) visible = move(*visible, group, to);
        if (slidingVisible) slidingVisible = move(*slidingVisible, group, to);
        group = to;
    };

    out.routing.resize(req.routingLayers.size());
    // Where layer l's router choices go (nullptr if nobody asked).
    auto routingSlot = [&](std::int64_t l) -> at::Tensor* {
        for (std::size_t j = 0; j < req.routingLayers.size(); ++j)
            if (req.routingLayers[j] == l) return &out.routing[j];
        return nullptr;
    };
    auto mlp = [](const Layer& layer, const at::Tensor& h, at::Tensor* chosen) {
        if (layer.gptOssMoe) return (*layer.gptOssMoe)(h, chosen);
        return layer.moe ? (*layer.moe)(h, chosen) : layer.mlp(h);
    };
    keep(0, x);
    for (std::int64_t l = 0; l < L; ++l) {
        const auto& layer = layers_[static_cast<std::size_t>(l)];
        if (layerGroup(l) != group) crossTo(layerGroup(l));
        if (layer.gemma) {
            // A shared layer's source may sit in another placement group.
            const auto src = config_.kvSourceLayer(l);
            if (src >= 0 && layerGroup(src) != group) {
                auto& [K, V] = gemmaKv[static_cast<std::size_t>(src)];
                K = move(K, layerGroup(src), group);
                V = move(V, layerGroup(src), group);
            }
            const at::Tensor none;
            const Gemma4LayerInputs in{layer.sliding ? cos : fullCos, layer.sliding ? sin : fullSin,
                                       layer.sliding ? slidingVisible : visible,
                                       perLayer.defined() ? perLayer.select(1, l) : none, positions, req.staticShapes};
            x = layer.gemma->forward(x, in, cache, l, gemmaKv, routingSlot(l));
            if (l + 1 < L) keep(l + 1, x);
            continue;
        }
        const auto xn = layer.inputNorm(x);
        if (hybrid) {
            const auto li = static_cast<std::size_t>(l);
            at::Tensor mixed;
            if (layer.deltaNet && tree)
                mixed = layer.deltaNet->forwardTree(xn, req.treeParents, cache.linearState(li), cache.treeLinearState(li));
            else if (layer.deltaNet)
                mixed = layer.deltaNet->forward(xn, cache.linearState(li));
            else
                mixed = layer.gatedAttention->forward(xn, cos, sin, cache, li, visible,
                                                      req.staticShapes ? positions : at::Tensor());
            const auto [h, hn] = layer.postNorm.addNorm(x, mixed);
            x = h + mlp(layer, hn, routingSlot(l));
            if (l + 1 < L) keep(l + 1, x);
            continue;
        }
        auto q = layer.q(xn).view({T, Hq, D});
        auto k = layer.k(xn).view({T, Hkv, D});
        auto v = layer.v(xn).view({T, Hkv, D});
        if (layer.qNorm) {
            q = layer.qNorm->normRotary(q, cos, sin);
            k = layer.kNorm->normRotary(k, cos, sin);
        } else {
            q = RotaryEmbedding::apply(q.transpose(0, 1), cos, sin);
            k = RotaryEmbedding::apply(k.transpose(0, 1), cos, sin);
        }
        v = v.transpose(0, 1);
        const auto [K, V] = req.staticShapes ? cache.writeRows(static_cast<std::size_t>(l), k, v, positions)
                                             : cache.append(static_cast<std::size_t>(l), k, v);
        const auto attn = layer.sinks.defined()  // [Hq, T, D]
                              ? sinkAttention(q, K, V, layer.sliding ? slidingVisible : visible, scale, layer.sinks)
                              : compat::attention(q, K, V, visible, scale);
        const auto [h, hn] = layer.postNorm.addNorm(x, layer.o(attn.transpose(0, 1).reshape({T, Hq * D})));
        x = h + mlp(layer, hn, routingSlot(l));
        if (l + 1 < L) keep(l + 1, x);
    }
    if (!req.staticShapes) cache.advance(T);
    x = move(x, group, plan.headDevice);
    group = plan.headDevice;
    const auto normed = finalNorm_(x);
    keep(L, normed);
    if (req.logitsFrom < T) {
        const auto rows = normed.narrow(0, req.logitsFrom, T - req.logitsFrom);
        if (const auto c = config_.gemma4.finalLogitSoftcapping; c && isGemma4(config_)) {
            // HF Gemma4ForCausalLM: logits / c, tanh, * c, in the compute dtype.
            const auto logits = at::linear(rows, lmHead_);
            out.logits = (at::tanh(logits / *c) * *c).to(at::kFloat);
        } else {
            out.logits = lmHead(rows);
        }
    }
    return out;
}

}  // namespace draftscope
