// A target model's config.json (loadTargetConfig): supported architectures, the nested
// text_config of vision-language checkpoints, MoE fields, and the keys a target refuses.

#include "checkpoints/config_fields.h"
#include "draftscope/errors.h"
#include "draftscope/model_config.h"

namespace draftscope {

using namespace config;

namespace {

/// Drafter-only keys (DFLASH.md section 9) that the target forward does not implement.
constexpr UnimplementedKey kUnimplementedInTargets[] = {
    {"use_sliding_window", "sliding-window attention in a target"},
    {"input_embedding_scale", "scaled input embeddings"},
    {"output_multiplier", "scaled output logits"},
    {"final_logit_softcapping", "final logit soft-capping in a target"},
};

/// Which HF MoE block an architecture uses (defaults and router rule differ).
enum class MoeKind { None, Qwen3Moe, Qwen3Next, Qwen3_5Moe };

/// Reads the MoE fields of `f` into c.moe with the HF config class defaults of `kind`
/// (Qwen3MoeConfig: 128 experts, top 8, 768, norm_topk_prob false; Qwen3NextConfig: 512,
/// top 10, 512, shared 512, true; Qwen3_5MoeTextConfig: 256, top 8, 512, shared 512, router
/// always renormalises). Throws Error for inconsistent values.
void parseMoe(const Fields& f, MoeKind kind, TransformerConfig& c) {
    auto& m = c.moe;
    const bool q3 = kind == MoeKind::Qwen3Moe, next = kind == MoeKind::Qwen3Next;
    const char* expertsKey = f.has("num_experts") || !f.has("num_local_experts") ? "num_experts" : "num_local_experts";
    m.numExperts = f.positiveInt(expertsKey, q3 ? 128 : next ? 512 : 256);
    m.numExpertsPerToken = f.positiveInt("num_experts_per_tok", next ? 10 : 8);
    m.expertIntermediateSize = f.positiveInt("moe_intermediate_size", q3 ? 768 : 512);
    if (!q3) m.sharedExpertIntermediateSize = f.positiveInt("shared_expert_intermediate_size", 512);
    m.normTopkProb = kind == MoeKind::Qwen3_5Moe ? true : f.boolean("norm_topk_prob", next);
    if (kind != MoeKind::Qwen3_5Moe) {  // Qwen3_5MoeDecoderLayer: every layer is sparse
        m.decoderSparseStep = f.positiveInt("decoder_sparse_step", 1);
        if (f.has("mlp_only_layers")) m.mlpOnlyLayers = f.intList("mlp_only_layers");
    }
    if (m.numExpertsPerToken > m.numExperts)
        throw Error("'" + f.path() + "': " + f.name("num_experts_per_tok") + " (" + std::to_string(m.numExpertsPerToken) +
                    ") exceeds the number of experts " + f.name(expertsKey) + " (" + std::to_string(m.numExperts) + ")");
    for (auto l : m.mlpOnlyLayers)
        if (l < 0 || l >= c.numLayers)
            throw Error("'" + f.path() + "': " + f.name("mlp_only_layers") + " names layer " + std::to_string(l) +
                        ", outside 0.." + std::to_string(c.numLayers - 1));
    for (std::int64_t l = 0; l < c.numLayers; ++l)
        if (!m.isSparseLayer(l) && c.intermediateSize <= 0)
            throw Error("'" + f.path() + "': layer " + std::to_string(l) + " has a dense MLP (mlp_only_layers / "
                        "decoder_sparse_step) but required field '" + f.name("intermediate_size") + "' is missing");
}

}  // namespace

TransformerConfig loadTargetConfig(const std::string& dir) {
    std::string path;
    const json j = readConfigJson(dir, path);
    Fields top(j, path);
    TransformerConfig c;
    c.configPath = path;
    if (!top.has("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
        !j["architectures"][0].is_string())
        throw Error("'" + path + "': required field 'architectures' (a list naming the model class) is missing");
    c.architecture = j["architectures"][0].get<std::string>();
    c.modelType = top.string("model_type", "");

    struct Supported {
        const char* name;
        TargetFamily family;
        MoeKind moe;
    };
    static const Supported kSupported[] = {
        {"Qwen3ForCausalLM", TargetFamily::Qwen3, MoeKind::None},
        {"Qwen2ForCausalLM", TargetFamily::Qwen2, MoeKind::None},
        {"LlamaForCausalLM", TargetFamily::Llama, MoeKind::None},
        {"MistralForCausalLM", TargetFamily::Llama, MoeKind::None},
        {"Qwen3_5ForCausalLM", TargetFamily::Qwen3_5, MoeKind::None},
        {"Qwen3_5ForConditionalGeneration", TargetFamily::Qwen3_5, MoeKind::None},
        {"Qwen3MoeForCausalLM", TargetFamily::Qwen3, MoeKind::Qwen3Moe},
        {"Qwen3NextForCausalLM", TargetFamily::Qwen3_5, MoeKind::Qwen3Next},
        {"Qwen3_5MoeForCausalLM", TargetFamily::Qwen3_5, MoeKind::Qwen3_5Moe},
        {"Qwen3_5MoeForConditionalGeneration", TargetFamily::Qwen3_5, MoeKind::Qwen3_5Moe},
    };
    bool known = false;
    MoeKind moeKind = MoeKind::None;
    for (const auto& s : kSupported)
        if (c.architecture == s.name) {
            c.family = s.family;
            moeKind = s.moe;
            known = true;
        }
    if (!known) {
        if (c.architecture == "DFlashDraftModel")
            throw Error("'" + path + "' describes a DFlash drafter (DFlashDraftModel), not a target model; pass it as the drafter");
        throw Error("'" + path + "': architecture '" + c.architecture +
                    "' is not supported (supported targets: Qwen3ForCausalLM, Qwen2ForCausalLM, "
                    "LlamaForCausalLM, MistralForCausalLM, Qwen3_5ForCausalLM, "
                    "Qwen3_5ForConditionalGeneration, Qwen3MoeForCausalLM, Qwen3NextForCausalLM, "
                    "Qwen3_5MoeForCausalLM, Qwen3_5MoeForConditionalGeneration)");
    }

    // Vision-language checkpoints nest the language model's fields under text_config.
    const json* lm = &j;
    if (top.has("text_config")) {
        if (!j["text_config"].is_object()) top.wrong("text_config", "an object", j["text_config"]);
        lm = &j["text_config"];
        c.weightPrefix = "model.language_model.";
    }
    Fields f(*lm, path, lm == &j ? "" : "text_config");
    c.linearAttention.fusedProjections = moeKind == MoeKind::Qwen3Next;
    parseTransformer(f, c, /*intermediateOptional=*/moeKind != MoeKind::None);
    if (moeKind != MoeKind::None) parseMoe(f, moeKind, c);
    c.tieWordEmbeddings = f.boolean("tie_word_embeddings", top.boolean("tie_word_embeddings", false));
    if (c.eosTokenIds.empty() && top.has("eos_token_id")) {
        const auto& e = j["eos_token_id"];
        if (e.is_number_integer()) c.eosTokenIds = {e.get<std::int64_t>()};
        else c.eosTokenIds = top.intList("eos_token_id");
    }
    if (c.family == TargetFamily::Qwen2) c.attentionBias = true;  // Qwen2 always has q/k/v bias
    refuseUnimplemented(f, kUnimplementedInTargets);
    if (c.architecture == "MistralForCausalLM" && f.has("sliding_window"))  // HF Mistral always applies it
        throw Error("'" + path + "': '" + f.name("sliding_window") +
                    "' asks for sliding-window attention in a target, which draftscope does not implement");
    return c;
}

}  // namespace draftscope
