#include "models/dflash_drafter.h"

#include "core/torch_compat.h"
#include "draftscope/errors.h"
#include "draftscope/masks.h"

#include <cmath>
#include <numeric>
#include <tuple>

namespace draftscope {

namespace {
/// The 2026-04 reference loads a drafter with dtype="auto" (its checkpoint dtype), which
/// casts the float32 rotary `inv_freq` buffer to that dtype; a later .float() does not undo
/// the rounding. goldens.json carries this rounding, so the April revision reproduces it.
/// Without a dtype in the config, HF's dtype="auto" takes the checkpoint's floating dtype;
/// `fc.weight` stands for it. nullopt: the dtype does not round (float32).
std::optional<at::ScalarType> invFreqRounding(const DrafterConfig& c, const WeightLoader& weights) {
    std::string d = c.body.checkpointDtype;
    if (d.empty() && weights.has("fc.weight")) {
        const auto t = weights.dtype("fc.weight");
        d = t == DType::BF16 ? "bfloat16" : t == DType::F16 ? "float16" : "";
    }
    if (d == "bfloat16") return at::kBFloat16;
    if (d == "float16") return at::kHalf;
    return std::nullopt;
}

std::string idList(const std::vector<std::int64_t>& ids) { return shapeString(ids); }

/// The tapped layers as the config writes them: z-lab `target_layer_ids [1, 2, 4]`, or the
/// speculators format's `aux_hidden_state_layer_ids [2, 3, 5] (target layers [1, 2, 4])`.
std::string tapsAsWritten(const DrafterConfig& c) {
    if (c.format != DrafterFormat::Speculators) return "target_layer_ids " + idList(c.targetLayerIds);
    std::vector<std::int64_t> aux;
    for (auto id : c.targetLayerIds) aux.push_back(id + 1);
    return "aux_hidden_state_layer_ids " + idList(aux) + " (target layers " + idList(c.targetLayerIds) + ")";
}

/// Whether an unexpected drafter tensor is a part of another drafter family (DFlash2's conv
/// and selector, DSpark's Markov and confidence heads, a draft-vocabulary map).
bool isFamilyPart(const std::string& n) {
    for (const char* part : {"candidate_selector.", "attention_conv.", "mlp_conv.", "markov_", "confidence_head"})
        if (n.find(part) != std::string::npos) return true;
    return n == "d2t" || n == "t2d";
}

/// What the tensors isFamilyPart() found in a drafter checkpoint suggest it is, for a drafter
/// configured as `config`.
std::string familyHint(const std::vector<std::string>& names, const DrafterConfig& config) {
    auto any = [&](const char* part) {
        for (const auto& n : names)
            if (n.find(part) != std::string::npos) return true;
        return false;
    };
    if (any("candidate_selector.") || any("_conv."))
        return "these are DFlash2 parts: a DFlash2 checkpoint names architectures [\"DFlash2DraftModel\"] with "
               "dflash_config conv_kernel_size, conv_group_size, selector_rank and selector_top_k (a DFlash2 "
               "config that does already holds these tensors twice or under other names)";
    if ((any("markov_") || any("confidence_head")) && config.dspark)
        return "this DSpark config leaves them out (markov_rank " + std::to_string(config.dspark->markovRank) +
               ", enable_confidence_head " + (config.dspark->confidenceHead ? "true" : "false") +
               ", confidence_head_with_markov " + (config.dspark->confidenceWithMarkov ? "true" : "false") +
               "): set those keys to what the checkpoint holds";
    if (any("markov_") || any("confidence_head"))
        return "these are DSpark parts (Markov logit bias, confidence head): a DSpark checkpoint is in the speculators "
               "format, with speculators_model_type 'dspark'";
    // What is left of isFamilyPart: d2t / t2d.
    return "a drafter with a vocabulary map is in the vllm-project/speculators format, whose config.json names "
           "speculators_model_type (dflash or dflash2) and transformer_layer_config";
}
}  // namespace

std::vector<TensorSpec> DFlashDrafter::expectedTensors(const DrafterConfig& d, std::int64_t fcIn,
                                                       const CandidateSelector::HasTensor& has) {
    const auto& c = d.body;
    const auto H = c.hiddenSize, D = c.headDim;
    std::vector<TensorSpec> s;
    s.push_back({"fc.weight", {H, fcIn}});
    s.push_back({"hidden_norm.weight", {H}});
    s.push_back({"norm.weight", {H}});
    for (std::int64_t l = 0; l < c.numLayers; ++l) {
        const auto lp = "layers." + std::to_string(l) + ".";
        s.push_back({lp + "input_layernorm.weight", {H}});
        s.push_back({lp + "post_attention_layernorm.weight", {H}});
        s.push_back({lp + "self_attn.q_proj.weight", {c.numHeads * D, H}});
        s.push_back({lp + "self_attn.k_proj.weight", {c.numKvHeads * D, H}});
        s.push_back({lp + "self_attn.v_proj.weight", {c.numKvHeads * D, H}});
        s.push_back({lp + "self_attn.o_proj.weight", {H, c.numHeads * D}});
        if (c.attentionBias) {  // the reference's q/k/v/o projections take bias=attention_bias
            s.push_back({lp + "self_attn.q_proj.bias", {c.numHeads * D}});
            s.push_back({lp + "self_attn.k_proj.bias", {c.numKvHeads * D}});
            s.push_back({lp + "self_attn.v_proj.bias", {c.numKvHeads * D}});
            s.push_back({lp + "self_attn.o_proj.bias", {H}});
        }
        s.push_back({lp + "self_attn.q_norm.weight", {D}});
        s.push_back({lp + "self_attn.k_norm.weight", {D}});
        SwiGluMlp::specs(s, lp + "mlp.", H, c.intermediateSize);
        if (d.dflash2) {
            DynamicCausalConv::specs(s, lp + "attention_conv.", H, d.dflash2->convKernelSize, d.dflash2->convGroupSize);
            DynamicCausalConv::specs(s, lp + "mlp_conv.", H, d.dflash2->convKernelSize, d.dflash2->convGroupSize);
        }
    }
    if (d.dflash2) CandidateSelector::specs(s, has, c.vocabSize, H, d.dflash2->selectorRank);
    if (d.dspark) {
        const auto r = d.dspark->markovRank;
        if (r > 0) MarkovHead::specs(s, c.vocabSize, d.draftVocabSize, r);
        if (d.dspark->confidenceHead) ConfidenceHead::specs(s, H, d.dspark->confidenceWithMarkov ? r : 0);
    }
    if (d.format == DrafterFormat::Speculators) {
        s.push_back({"embed_tokens.weight", {c.vocabSize, H}});
        s.push_back({"lm_head.weight", {d.draftVocabSize, H}});
        if (d.draftVocabSize != c.vocabSize) s.push_back({"d2t", {d.draftVocabSize}, /*integer=*/true});
    }
    return s;
}

DFlashDrafter::DFlashDrafter(const DrafterConfig& config, const WeightLoader& weights,
                             const TargetModel& target)
    : config_(config), target_(target), rotary_(config.body.rope, config.body.headDim, target.drafterDevice()) {
    if (const auto rounding = invFreqRounding(config, weights))
        aprilRotary_.emplace(config.body.rope, config.body.headDim, target.drafterDevice(), rounding);
    const auto& tc = target.config();
    const auto& dc = config_.body;
    const std::string where = "drafter '" + weights.directory() + "'";
    if (dc.hiddenSize != tc.hiddenSize)
        throw Error(where + ": hidden_size is " + std::to_string(dc.hiddenSize) +
                    " but the target's is " + std::to_string(tc.hiddenSize) +
                    " (the drafter shares the target's embedding and LM head, so they must match)");
    for (auto id : config_.targetLayerIds)
        if (id >= tc.numLayers)
            throw Error(where + ": " + tapsAsWritten(config_) + " contains " +
                        std::to_string(config_.format == DrafterFormat::Speculators ? id + 1 : id) +
                        ", but the target has " + std::to_string(tc.numLayers) +
                        " layers (valid ids 0.." + std::to_string(tc.numLayers - 1) + ")" +
                        (config_.numTargetLayers ? "; the drafter was made for a " +
                             std::to_string(config_.numTargetLayers) + "-layer target" : std::string()));
    if (config_.maskTokenId >= tc.vocabSize)
        throw Error(where + ": mask_token_id " + std::to_string(config_.maskTokenId) +
                    " is outside the target's vocabulary of " + std::to_string(tc.vocabSize) + " tokens");
    if (config_.dflash2) {  // checked before any weight is read
        if (config_.dflash2->selectorTopK > tc.vocabSize)
            throw Error(where + ": selector_top_k " + std::to_string(config_.dflash2->selectorTopK) +
                        " exceeds the target's vocabulary of " + std::to_string(tc.vocabSize) + " tokens");
        if (dc.vocabSize < tc.vocabSize)  // every target token can be a predecessor or a candidate
            throw Error(where + ": the candidate selector's codebooks have vocab_size = " + std::to_string(dc.vocabSize) +
                        " rows, fewer than the target's vocabulary of " + std::to_string(tc.vocabSize) + " tokens");
    }
    if (config_.numTargetLayers && config_.numTargetLayers != tc.numLayers)
        warnings_.push_back("num_target_layers is " + std::to_string(config_.numTargetLayers) +
                            " but the target has " + std::to_string(tc.numLayers) +
                            " layers: the drafter was probably trained for another target");

    const auto K = static_cast<std::int64_t>(config_.targetLayerIds.size());
    const auto expectedFc = K * tc.hiddenSize;
    if (!weights.has("fc.weight"))
        throw Error(where + ": tensor 'fc.weight' is missing (is this a DFlash drafter checkpoint?)");
    const auto fcShape = weights.shape("fc.weight");
    if (fcShape.size() != 2 || fcShape[0] != dc.hiddenSize || fcShape[1] != expectedFc)
        throw Error(where + ": fc.weight has shape " + shapeString(fcShape) + ", expected [" +
                    std::to_string(dc.hiddenSize) + ", " + std::to_string(expectedFc) + "] = hidden " +
                    std::to_string(dc.hiddenSize) + " x (" + std::to_string(K) +
                    " tapped layers " + idList(config_.targetLayerIds) + " x target hidden " +
                    std::to_string(tc.hiddenSize) + ")");

    const auto specs = expectedTensors(config_, expectedFc, [&](const std::string& n) { return weights.has(n); });
    // Speculators: t2d (checked against d2t below) and the training-only verifier copies are no
    // part of the draft forward.
    const bool speculators = config_.format == DrafterFormat::Speculators;
    report_ = weights.check(specs, ignoredTensorPrefixes(config_));
    // A part of another drafter family (a DFlash2 checkpoint read as DFlash, DSpark's Markov
    // head, a vocabulary map) would be ignored and the drafter run as something it is not:
    // refused by name. Other extra tensors stay unexpected (reported, as the reference's loader
    // does: an own embed_tokens / lm_head in a z-lab config is unused there too).
    std::vector<std::string> foreign;
    for (const auto& n : report_.unexpected)
        if (isFamilyPart(n)) foreign.push_back(n);
    if (!foreign.empty()) {
        std::string names;
        for (std::size_t i = 0; i < foreign.size() && i < 6; ++i) names += (i ? ", " : "") + foreign[i];
        if (foreign.size() > 6) names += ", ... (" + std::to_string(foreign.size()) + " in all)";
        throw Error(where + ": the checkpoint has tensor(s) a " + drafterFamilyName(config_.family) +
                    " drafter (architecture '" + (dc.architecture.empty() ? std::string("none") : dc.architecture) +
                    "') does not use: " + names + ". Running without them would compute something else; " +
                    familyHint(foreign, config_));
    }
    for (const char* own : {"embed_tokens.weight", "lm_head.weight"})
        if (!speculators && weights.has(own))
            warnings_.push_back(std::string("the checkpoint holds its own '") + own + "', which this " +
                                "format does not use: the drafter runs with the target's (as the reference's "
                                "loader does); a drafter meant to use its own is in the speculators format");
    for (const auto& s : specs) {
        std::int64_t n = 1;
        for (auto d : s.shape) n *= d;
        parameters_ += n;
        // A NaN or inf weight makes every output it touches NaN: say which tensor holds it.
        if (const auto bad = s.integer ? 0 : weights.nonFiniteCount(s.name))
            warnings_.push_back("tensor '" + s.name + "' has " + std::to_string(bad) + " non-finite value(s) (NaN or "
                                "inf) of " + std::to_string(n) + ": the drafter's outputs that use it will be NaN");
    }
    const LoadTarget lt{weights, target.dtype(), target.drafterDevice()};
    const double eps = dc.rmsNormEps;
    fc_ = {lt.get("fc.weight"), {}};
    hiddenNorm_ = {lt.get("hidden_norm.weight"), eps};
    finalNorm_ = {lt.get("norm.weight"), eps};
    for (std::int64_t l = 0; l < dc.numLayers; ++l) {
        const auto lp = "layers." + std::to_string(l) + ".";
        const auto ap = lp + "self_attn.";
        Layer L;
        L.inputNorm = {lt.get(lp + "input_layernorm.weight"), eps};
        L.postNorm = {lt.get(lp + "post_attention_layernorm.weight"), eps};
        L.qNorm = {lt.get(ap + "q_norm.weight"), eps};
        L.kNorm = {lt.get(ap + "k_norm.weight"), eps};
        const bool bias = dc.attentionBias;
        auto b = [&](const char* name) { return bias ? lt.get(ap + name) : at::Tensor(); };
        L.q = {lt.get(ap + "q_proj.weight"), b("q_proj.bias")};
        L.k = {lt.get(ap + "k_proj.weight"), b("k_proj.bias")};
        L.v = {lt.get(ap + "v_proj.weight"), b("v_proj.bias")};
        L.o = {lt.get(ap + "o_proj.weight"), b("o_proj.bias")};
        L.mlp = SwiGluMlp::load(lt, lp + "mlp.");
        if (config_.dflash2) {
            L.attentionConv = DynamicCausalConv::load(lt, lp + "attention_conv.", config_.dflash2->convGroupSize);
            L.mlpConv = DynamicCausalConv::load(lt, lp + "mlp_conv.", config_.dflash2->convGroupSize);
        }
        layers_.push_back(std::move(L));
    }
    if (speculators) loadSpeculatorsVocabulary(weights, lt, where);
    if (config_.dflash2) selector_.emplace(lt, config_.dflash2->selectorTopK);
    if (config_.dspark) {
        if (config_.dspark->markovRank > 0) markov_.emplace(lt);
        // vLLM keeps the confidence projection in float32: read it so, not through the compute dtype.
        if (config_.dspark->confidenceHead)
            confidence_.emplace(LoadTarget{weights, at::kFloat, target.drafterDevice()}, config_.dspark->confidenceWithMarkov);
    }
}

at::Tensor DFlashDrafter::markovBias(const at::Tensor& e) const {
    if (!markov_) throw Error("this drafter has no Markov head (DSpark with markov_rank > 0 only)");
    auto b = markov_->bias(e);  // [n, V_d] float32
    if (draftToTarget_.defined())
        b = at::zeros({e.size(0), target_.config().vocabSize}, b.options()).index_copy_(1, draftToTarget_, b);
    if (config_.outputMultiplier != 1.0) b = b * config_.outputMultiplier;
    return b;
}

std::vector<std::string> DFlashDrafter::ignoredTensorPrefixes(const DrafterConfig& d) {
    if (d.format != DrafterFormat::Speculators) return {};
    return {"t2d", "verifier_norm.", "verifier_lm_head."};
}

std::vector<std::int64_t> DFlashDrafter::featureIndices() const {
    std::vector<std::int64_t> idx;
    for (auto id : config_.targetLayerIds) idx.push_back(id + 1);
    return idx;
}

at::Tensor DFlashDrafter::projectContext(const at::Tensor& features) const {
    return hiddenNorm_(fc_(features));
}

const RotaryEmbedding& DFlashDrafter::rotary(LoopRevision revision) const {
    return revision == LoopRevision::April2026 && aprilRotary_ ? *aprilRotary_ : rotary_;
}

DraftOutput DFlashDrafter::draft(const at::Tensor& features, const at::Tensor& block, KVCache& cache,
                                 LoopRevision revision, bool keepAttention, std::int64_t blockStart,
                                 const std::vector<LayerAttention>* layout) const {
    return run(features, block, cache, revision, keepAttention, blockStart, layout, nullptr);
}

std::string DFlashDrafter::staticShapeUnsupportedReason() const {
    for (std::size_t l = 0; l < layers_.size(); ++l)
        if (layerAttention(l).needsMask())
            return "drafter layer " + std::to_string(l) + " has a masked attention layout (" +
                   describeLayout({layerAttention(l)}) + ")";
    return {};
}

DraftOutput DFlashDrafter::draftStatic(const at::Tensor& features, const at::Tensor& block, KVCache& cache,
                                       LoopRevision revision, const at::Tensor& positions) const {
    const auto why = staticShapeUnsupportedReason();
    if (!why.empty()) throw Error("static-shape drafter call impossible: " + why);
    if (cache.capacity() == 0 || positions.size(0) != features.size(0) + block.size(0))
        throw Error("static-shape drafter call: needs an allocated cache and one position per context and block row");
    return run(features, block, cache, revision, false, -1, nullptr, &positions);
}

DraftOutput DFlashDrafter::run(const at::Tensor& features, const at::Tensor& block, KVCache& cache,
                               LoopRevision revision, bool keepAttention, std::int64_t blockStart,
                               const std::vector<LayerAttention>* layout, const at::Tensor* staticPositions) const {
    const auto& c = config_.body;
    if (layout && layout->size() != layers_.size())
        throw Error("drafter call: the layout override has " + std::to_string(layout->size()) +
                    " layers, the drafter has " + std::to_string(layers_.size()));
    const auto dev = target_.drafterDevice();
    const std::int64_t B = block.size(0);
    const std::int64_t C = features.size(0);
    const std::int64_t past = cache.length();
    const auto Hq = c.numHeads, Hkv = c.numKvHeads, D = c.headDim;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));

    const auto longOpts = at::TensorOptions().dtype(at::kLong).device(dev);
    const auto positions = staticPositions ? *staticPositions
                           : blockStart < 0 ? at::arange(past, past + C + B, longOpts)
                                            : at::cat({at::arange(past, past + C, longOpts),
                                                       at::arange(blockStart, blockStart + B, longOpts)});
    // Static shapes: every layer has the base layout (checked), so one mask for all of them:
    // the rows up to the block's last position.
    std::optional<at::Tensor> staticMask;
    if (staticPositions)
        staticMask = (at::arange(cache.capacity(), longOpts).unsqueeze(0) <= positions.narrow(0, C + B - 1, 1))
                         .expand({B, cache.capacity()});
    const auto [cos, sin] = rotary(revision).cosSin(positions, target_.dtype());
    const auto qCos = cos.narrow(0, C, B), qSin = sin.narrow(0, C, B);

    // Per-layer masks (DFLASH.md section 9) over absolute positions: cached keys sit at
    // rows 0..past-1 = positions 0..past-1, then the new context and block keys at
    // `positions`. The cache keeps every context key: a window masks, it never evicts.
    // Layers with the base layout run mask-free; alike layers share one mask.
    std::vector<std::pair<LayerAttention, at::Tensor>> masks;
    const auto maskOf = [&](const LayerAttention& layout) -> std::optional<at::Tensor> {
        if (!layout.needsMask()) return std::nullopt;
        for (const auto& [l, m] : masks)
            if (l == layout) return m;
        // The same positions as `positions`, made on the host (no device sync).
        std::vector<std::int64_t> keyPos(static_cast<std::size_t>(past + C)), queryPos(static_cast<std::size_t>(B));
        std::iota(keyPos.begin(), keyPos.end(), std::int64_t{0});
        std::iota(queryPos.begin(), queryPos.end(), blockStart < 0 ? past + C : blockStart);
        keyPos.insert(keyPos.end(), queryPos.begin(), queryPos.end());
        auto visible = layerVisibility(layout, queryPos, keyPos);
        const auto mask = at::from_blob(visible.data(), {B, past + C + B}, at::TensorOptions().dtype(at::kByte))
                              .to(dev)
                              .to(at::kBool);
        masks.emplace_back(layout, mask);
        return mask;
    };

    DraftOutput out;
    const auto ctx = projectContext(features.to(dev, target_.dtype()));  // [C, H], shared by all layers
    at::Tensor x = embedBlock(block);  // [B, H]
    if (config_.inputEmbeddingScale != 1.0) x = x * config_.inputEmbeddingScale;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
        const auto& layer = layers_[l];
        auto xn = layer.inputNorm(x);
        at::Tensor attentionTaps;  // DFlash2: the conv's taps after attention
        if (layer.attentionConv) std::tie(xn, attentionTaps) = layer.attentionConv->prepare(xn);
        const auto q = layer.qNorm.normRotary(layer.q(xn).view({B, Hq, D}), qCos, qSin);
        const auto kvIn = at::cat({ctx, xn}, 0);  // [C + B, H]
        const auto k = layer.kNorm.normRotary(layer.k(kvIn).view({C + B, Hkv, D}), cos, sin);
        const auto v = layer.v(kvIn).view({C + B, Hkv, D}).transpose(0, 1);
        const auto [K, V] = staticPositions ? cache.writeRows(l, k, v, positions) : cache.append(l, k, v);
        const auto mask = staticPositions ? staticMask : maskOf(layout ? (*layout)[l] : layerAttention(l));
        at::Tensor attn;
        if (keepAttention) {
            at::Tensor w;
            attn = compat::attentionWithWeights(q, K, V, mask, scale, w);
            out.attention.push_back(w);
        } else {
            attn = compat::attention(q, K, V, mask, scale);
        }
        auto attnOut = layer.o(attn.transpose(0, 1).reshape({B, Hq * D}));
        if (layer.attentionConv) attnOut = layer.attentionConv->finish(attnOut, attentionTaps);
        auto [h, hn] = layer.postNorm.addNorm(x, attnOut);
        if (layer.mlpConv) {
            auto [convIn, mlpTaps] = layer.mlpConv->prepare(hn);
            x = h + layer.mlpConv->finish(layer.mlp(convIn), mlpTaps);
        } else {
            x = h + layer.mlp(hn);
        }
    }
    if (!staticPositions) cache.advance(C);  // keep context rows only: the block rows are dropped
    out.hidden = finalNorm_(x);
    const auto first = config_.firstDraftRow();  // 0 when the anchor's row drafts too
    out.logits = logitsOf(out.hidden.narrow(0, first, B - first));
    return out;
}

at::Tensor DFlashDrafter::embedBlock(const at::Tensor& block) const {
    if (ownEmbed_.defined()) return at::embedding(ownEmbed_, block);
    return target_.drafterEmbed(block).to(target_.dtype());
}

at::Tensor DFlashDrafter::logitsOf(const at::Tensor& hidden) const {
    at::Tensor logits;
    if (!ownHead_.defined()) {
        logits = target_.drafterLogits(hidden);
    } else {
        logits = at::linear(hidden, ownHead_).to(at::kFloat);  // [rows, V_d]
        if (draftToTarget_.defined())  // draft row d is target token d + d2t[d]; no row: -inf
            logits = at::full({hidden.size(0), target_.config().vocabSize}, -INFINITY, logits.options())
                         .index_copy_(1, draftToTarget_, logits);
    }
    if (config_.outputMultiplier != 1.0) logits = logits * config_.outputMultiplier;
    if (const auto c = config_.finalLogitSoftcapping) logits = at::tanh(logits / *c) * *c;
    return logits;
}

void DFlashDrafter::loadSpeculatorsVocabulary(const WeightLoader& weights, const LoadTarget& lt,
                                              const std::string& where) {
    const auto V = target_.config().vocabSize;
    if (config_.body.vocabSize != V)
        throw Error(where + ": transformer_layer_config.vocab_size is " + std::to_string(config_.body.vocabSize) +
                    " (rows of embed_tokens) but the target's vocabulary has " + std::to_string(V) + " tokens");
    ownEmbed_ = lt.get("embed_tokens.weight");
    ownHead_ = lt.get("lm_head.weight");
    const auto Vd = config_.draftVocabSize;
    if (Vd == V) return;
    // d2t: offsets, target id = draft id + d2t[draft id]; every target id in range, none twice.
    const auto d2t = weights.loadIndices("d2t");
    std::vector<std::int64_t> ids(static_cast<std::size_t>(Vd));
    std::vector<bool> seen(static_cast<std::size_t>(V), false);
    for (std::int64_t d = 0; d < Vd; ++d) {
        const auto t = d + d2t[static_cast<std::size_t>(d)];
        if (t < 0 || t >= V)
            throw Error(where + ": d2t[" + std::to_string(d) + "] = " + std::to_string(d2t[static_cast<std::size_t>(d)]) +
                        " maps draft token " + std::to_string(d) + " to target id " + std::to_string(t) +
                        ", outside the target's vocabulary 0.." + std::to_string(V - 1));
        if (seen[static_cast<std::size_t>(t)])
            throw Error(where + ": d2t maps two draft tokens to target id " + std::to_string(t));
        seen[static_cast<std::size_t>(t)] = true;
        ids[static_cast<std::size_t>(d)] = t;
    }
    if (weights.has("t2d")) {  // optional: must mark exactly the target ids d2t reaches
        if (weights.shape("t2d") != std::vector<std::int64_t>{V})
            throw Error(where + ": t2d has shape " + shapeString(weights.shape("t2d")) + ", expected [" +
                        std::to_string(V) + "]");
        const auto t2d = weights.loadIndices("t2d");
        for (std::int64_t t = 0; t < V; ++t)
            if ((t2d[static_cast<std::size_t>(t)] != 0) != seen[static_cast<std::size_t>(t)])
                throw Error(where + ": t2d and d2t disagree at target id " + std::to_string(t) + " (t2d says " +
                            (t2d[static_cast<std::size_t>(t)] ? "in" : "not in") + " the draft vocabulary)");
    }
    draftToTarget_ = at::tensor(ids, at::TensorOptions().dtype(at::kLong)).to(target_.drafterDevice());
}

LayerAttention DFlashDrafter::layerAttention(std::size_t layer) const {
    if (layer >= config_.layers.size()) return {};
    return config_.layers[layer];
}

}  // namespace draftscope
