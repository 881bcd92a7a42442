#pragma once
// Test helper: a z-lab drafter written in the vllm-project/speculators layout, the way
// speculators' `convert/dflash` converter writes it (tst_speculators, tst_dspark).

#include "draftscope/safetensors.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace testsupport {
using namespace draftscope;

/// Every tensor of a checkpoint directory's safetensors files (a sharded one included).
inline std::vector<std::shared_ptr<const SafetensorsFile>> checkpointFiles(const std::string& dir) {
    std::vector<std::shared_ptr<const SafetensorsFile>> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".safetensors") out.push_back(SafetensorsFile::open(e.path().string()));
    return out;
}

/// Writes `zlab` (a z-lab DFlash or DFlash2 drafter of the demo target) to `out` in the
/// speculators layout. `draftIds` (ascending target ids) makes a reduced draft vocabulary with
/// d2t and t2d; empty: the full vocabulary, no maps. `edit` may change the config at the end;
/// the tensors of `extraFiles` (safetensors) are written too (a DSpark drafter's heads). The own
/// embed_tokens / lm_head are copies of `targetDir`'s; `keepTensor`, if given, filters the z-lab
/// drafter's tensors (a DFlash body out of a DFlash2 checkpoint).
inline void writeSpeculators(const std::string& zlab, const std::string& out,
                             const std::vector<std::int64_t>& draftIds = {},
                             const std::function<void(nlohmann::json&)>& edit = {},
                             const std::vector<std::string>& extraFiles = {},
                             const std::string& targetDir = demoTarget(),
                             const std::function<bool(const std::string&)>& keepTensor = {}) {
    std::filesystem::create_directories(out);
    const auto z = readJson(zlab + "/config.json");
    const auto& dc = z["dflash_config"];
    const bool v2 = z["architectures"][0] == "DFlash2DraftModel";
    nlohmann::json body = nlohmann::json::object();
    for (const char* k : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_parameters", "vocab_size",
                          "max_position_embeddings", "layer_types"})
        body[k] = z[k];
    for (const char* k : {"use_sliding_window", "sliding_window"})  // a sliding layer's window, where there is one
        if (z.contains(k) && !z[k].is_null()) body[k] = z[k];
    body["model_type"] = "qwen3";
    std::vector<std::int64_t> aux;
    for (auto t : dc["target_layer_ids"].get<std::vector<std::int64_t>>()) aux.push_back(t + 1);
    const std::int64_t V = z["vocab_size"], H = z["hidden_size"];
    const auto Vd = draftIds.empty() ? V : static_cast<std::int64_t>(draftIds.size());
    nlohmann::json c = {{"speculators_model_type", v2 ? "dflash2" : "dflash"},
                        {"architectures", {v2 ? "DFlash2DraftModel" : "DFlashSpeculator"}},
                        {"transformer_layer_config", body},
                        {"block_size", z.contains("block_size") ? z["block_size"] : dc["block_size"]},
                        {"mask_token_id", dc["mask_token_id"]},
                        {"aux_hidden_state_layer_ids", aux},
                        {"draft_vocab_size", Vd},
                        {"target_hidden_size", nullptr},
                        {"sliding_window_non_causal", false},
                        {"sample_from_anchor", false}};
    if (v2)
        for (const char* k : {"conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k",
                              "output_multiplier", "final_logit_softcapping"})
            if (dc.contains(k)) c[k] = dc[k];  // (a const json's operator[] on a missing key is undefined)
    if (edit) edit(c);
    writeJson(out + "/config.json", c);

    SafetensorsWriter w;
    for (const auto& f : checkpointFiles(zlab))
        for (const auto& t : f->tensors())
            if (!keepTensor || keepTensor(t.name)) w.add(t.name, t.dtype, t.shape, f->data(t), t.byteSize());
    for (const auto& path : extraFiles) {
        const auto f = SafetensorsFile::open(path);
        for (const auto& t : f->tensors()) w.add(t.name, t.dtype, t.shape, f->data(t), t.byteSize());
    }
    const auto target = SafetensorsFile::open(targetDir + "/model.safetensors");
    const auto& embed = target->at("model.embed_tokens.weight");
    w.add("embed_tokens.weight", embed.dtype, embed.shape, target->data(embed), embed.byteSize());
    const auto& head = target->at("lm_head.weight");
    if (draftIds.empty()) {
        w.add("lm_head.weight", head.dtype, head.shape, target->data(head), head.byteSize());
    } else {
        const auto row = head.byteSize() / static_cast<std::size_t>(V);
        std::vector<std::byte> rows;
        std::vector<std::int64_t> d2t;
        std::vector<std::uint8_t> t2d(static_cast<std::size_t>(V), 0);
        for (std::size_t d = 0; d < draftIds.size(); ++d) {
            const auto* from = target->data(head) + static_cast<std::size_t>(draftIds[d]) * row;
            rows.insert(rows.end(), from, from + row);
            d2t.push_back(draftIds[d] - static_cast<std::int64_t>(d));
            t2d[static_cast<std::size_t>(draftIds[d])] = 1;
        }
        w.add("lm_head.weight", head.dtype, {Vd, H}, rows.data(), rows.size());
        w.addInt64("d2t", {Vd}, d2t);
        w.add("t2d", DType::BOOL, {V}, t2d.data(), t2d.size());
    }
    w.write(out + "/model.safetensors");
}

}  // namespace testsupport
