#pragma once
// Reading a model's config.json: field access with messages that name the file and the
// field, the parts every model shares (transformer fields, rotary), and the config keys that
// change the math and are refused by name. Used by target_config.cpp and drafter_config.cpp.
// Private to backend/src/checkpoints.

#include "draftscope/errors.h"
#include "draftscope/model_config.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace draftscope::config {

using nlohmann::json;

/// Reads `dir`/config.json as a JSON object; `pathOut` receives its path. Throws Error
/// naming the directory or file if either is missing, or the file is not a JSON object.
json readConfigJson(const std::string& dir, std::string& pathOut);

/// Field access with messages that name the file and the field.
class Fields {
public:
    Fields(const json& j, std::string path, std::string scope = "")
        : j_(j), path_(std::move(path)), scope_(std::move(scope)) {}

    bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
    /// True if the key is written at all, null included (HF tells an absent key, which takes
    /// the class default, from an explicit null).
    bool present(const char* key) const { return j_.contains(key); }
    const json& raw(const char* key) const { return j_[key]; }

    std::int64_t positiveInt(const char* key) const {
        if (!has(key)) missing(key);
        return positiveIntValue(key);
    }
    std::int64_t positiveInt(const char* key, std::int64_t fallback) const {
        return has(key) ? positiveIntValue(key) : fallback;
    }
    std::int64_t integer(const char* key) const {
        if (!has(key)) missing(key);
        const auto& v = j_[key];
        if (!v.is_number_integer()) wrong(key, "an integer", v);
        return v.get<std::int64_t>();
    }
    double number(const char* key, double fallback) const {
        if (!has(key)) return fallback;
        const auto& v = j_[key];
        if (!v.is_number()) wrong(key, "a number", v);
        return v.get<double>();
    }
    bool boolean(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        const auto& v = j_[key];
        if (!v.is_boolean()) wrong(key, "true or false", v);
        return v.get<bool>();
    }
    std::string string(const char* key, const std::string& fallback) const {
        if (!has(key)) return fallback;
        const auto& v = j_[key];
        if (!v.is_string()) wrong(key, "a string", v);
        return v.get<std::string>();
    }
    std::vector<std::int64_t> intList(const char* key) const {
        const auto& v = j_[key];
        if (!v.is_array()) wrong(key, "a list of integers", v);
        std::vector<std::int64_t> out;
        for (const auto& e : v) {
            if (!e.is_number_integer()) wrong(key, "a list of integers", v);
            out.push_back(e.get<std::int64_t>());
        }
        return out;
    }
    std::string name(const char* key) const { return scope_.empty() ? key : scope_ + "." + key; }
    const std::string& path() const { return path_; }

    [[noreturn]] void missing(const char* key) const {
        throw Error("'" + path_ + "': required field '" + name(key) + "' is missing");
    }
    [[noreturn]] void wrong(const char* key, const char* expected, const json& found) const {
        std::string f = found.dump();
        if (f.size() > 60) f = f.substr(0, 57) + "...";
        throw Error("'" + path_ + "': field '" + name(key) + "' must be " + expected +
                    ", found " + f);
    }

private:
    std::int64_t positiveIntValue(const char* key) const {
        const auto& v = j_[key];
        if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
            wrong(key, "a positive integer", v);
        // Sizes far beyond any real model mean a corrupt or hostile config; refusing them
        // here keeps allocations sized from the config bounded.
        const auto value = v.get<std::int64_t>();
        const auto limit = maximumOf(key);
        if (value > limit)
            throw Error("'" + path_ + "': field '" + name(key) + "' is " + std::to_string(value) +
                        ", more than draftscope accepts (" + std::to_string(limit) + "); the config is probably corrupt");
        return value;
    }
    static std::int64_t maximumOf(const char* key) {
        static const std::map<std::string, std::int64_t> limits = {
            {"num_hidden_layers", 1024},       {"num_attention_heads", 1024},   {"num_key_value_heads", 1024},
            {"head_dim", 4096},                {"hidden_size", 1 << 17},        {"intermediate_size", 1 << 20},
            {"vocab_size", 1 << 24},           {"max_position_embeddings", 1 << 24},
            {"block_size", 1024},              {"linear_conv_kernel_dim", 64},  {"linear_num_key_heads", 1024},
            {"linear_num_value_heads", 1024},  {"linear_key_head_dim", 4096},   {"linear_value_head_dim", 4096},
            {"num_experts", 4096},             {"num_local_experts", 4096},     {"num_experts_per_tok", 4096},
            {"moe_intermediate_size", 1 << 20}, {"shared_expert_intermediate_size", 1 << 20},
            {"num_target_layers", 1024},       {"full_attention_interval", 1024},
            {"global_head_dim", 4096},         {"num_global_key_value_heads", 1024},
            {"hidden_size_per_layer_input", 1 << 17}, {"vocab_size_per_layer_input", 1 << 24},
            {"num_kv_shared_layers", 1024},    {"top_k_experts", 4096}};
        const auto it = limits.find(key);
        return it == limits.end() ? (std::int64_t{1} << 30) : it->second;
    }
    const json& j_;
    std::string path_;
    std::string scope_;
};

/// The rotary settings of `f` (rope_parameters in transformers 5.x, rope_theta +
/// rope_scaling in 4.x; HF defaults). Throws Error for unsupported types or bad values.
RopeConfig parseRope(const Fields& f, std::int64_t maxPositions);

/// True if `f` sets rotary key `key` (top level, or non-null in rope_parameters / rope_scaling):
/// where it does not, a family's own default applies (Qwen3.5's rope_theta 1e7, gpt-oss's 150000).
bool ropeKeyGiven(const Fields& f, const char* key);

/// A config key that changes the math and that draftscope does not implement, with why.
struct UnimplementedKey {
    const char* key;
    const char* what;
};

/// Keys no model may set (to anything but null or false): each one changes the forward
/// pass and is not implemented, so running without it would silently compute something
/// else. One table per kind of model; refuseUnimplemented() applies it.
inline constexpr UnimplementedKey kUnimplementedEverywhere[] = {
    {"mlp_bias", "MLP projections with bias"},
    {"attn_logit_softcapping", "attention logit soft-capping"},
    {"query_pre_attn_scalar", "an attention scale other than head_dim^-0.5"},
    {"attention_multiplier", "an attention scale other than head_dim^-0.5"},
    {"embedding_multiplier", "scaled input embeddings"},
    {"residual_multiplier", "scaled residual branches"},
    {"logits_scaling", "scaled output logits"},
    {"transformer_layer_config", "the vllm-project/speculators drafter format (nested transformer fields, its own "
                                 "embed_tokens and lm_head)"},
    {"aux_hidden_state_layer_ids", "the vllm-project/speculators drafter format (taps named "
                                   "aux_hidden_state_layer_ids)"},
    {"draft_vocab_size", "a reduced draft vocabulary (d2t / t2d token maps)"},
};
/// Throws Error naming the key and what it asks for if `f` sets any key of `table` to
/// anything but null or false.
template <std::size_t N>
void refuseUnimplemented(const Fields& f, const UnimplementedKey (&table)[N]) {
    for (const auto& k : table) {
        if (!f.has(k.key)) continue;
        const auto& v = f.raw(k.key);
        if (v.is_boolean() && v == false) continue;
        std::string value = v.dump();
        if (value.size() > 40) value = value.substr(0, 37) + "...";
        throw Error("'" + f.path() + "': '" + f.name(k.key) + "' = " + value + " asks for " + k.what +
                    ", which draftscope does not implement; refusing to run the model with different math");
    }
}

/// Fills the transformer fields shared by targets and drafters from `f`. With
/// `intermediateOptional` (MoE targets, whose dense intermediate_size may be absent when
/// every layer is sparse), a missing intermediate_size leaves 0.
/// `drafter`: sliding_attention layers are allowed (their window is resolved by
/// loadDrafterConfig); targets accept full_attention and, for Qwen3_5, linear_attention, for
/// GptOss sliding_attention (default: HF's alternation, sliding first).
void parseTransformer(const Fields& f, TransformerConfig& c, bool intermediateOptional = false,
                      bool drafter = false);

}  // namespace draftscope::config
