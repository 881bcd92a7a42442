#pragma once
// Helpers shared by the Qt Test suites: fixture paths, goldens, tolerances, temp models,
// prompts and error messages. Put a helper here once a second suite needs it.

#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/run_types.h"
#include "draftscope/safetensors.h"

#include <nlohmann/json.hpp>

#include <QString>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace testsupport {

inline std::string dataPath(const std::string& rel) { return std::string(DRAFTSCOPE_TEST_DATA) + "/" + rel; }
/// A file or folder of tests/data that is kept xz-compressed there (pt/, models/qwen3_5-tiny-vlm,
/// tokenizers/qwen3, models/trained): its unpacked mirror in the build tree (tests/CMakeLists.txt).
inline std::string unpackedDataPath(const std::string& rel) {
    return std::string(DRAFTSCOPE_UNPACKED_TEST_DATA) + "/" + rel;
}
inline std::string demoTarget() { return std::string(DRAFTSCOPE_DEMO_DIR) + "/target"; }
inline std::string demoDrafter() { return std::string(DRAFTSCOPE_DEMO_DIR) + "/drafter"; }

/// The three fixture drafters by their golden names.
inline std::string drafterDir(const std::string& name) {
    if (name == "drafter-good") return demoDrafter();
    return unpackedDataPath("models/" + name);  // stored xz-compressed (FIXTURES.md)
}

inline const nlohmann::json& goldens() {
    static const nlohmann::json j = nlohmann::json::parse(draftscope::readFileToString(dataPath("goldens.json")));
    return j;
}

inline const draftscope::SafetensorsFile& goldenTensors() {
    static const auto f = draftscope::SafetensorsFile::open(dataPath("goldens.safetensors"));
    return *f;
}

/// variant_goldens.json: drafter layouts, the current and 2026-04 loops (FIXTURES.md).
inline const nlohmann::json& variantGoldens() {
    static const nlohmann::json j =
        nlohmann::json::parse(draftscope::readFileToString(dataPath("variant_goldens.json")));
    return j;
}

inline const draftscope::SafetensorsFile& variantTensors() {
    static const auto f = draftscope::SafetensorsFile::open(dataPath("variant_tensors.safetensors"));
    return *f;
}

inline std::vector<std::int64_t> promptIds(int i) {
    return goldens()["prompt_ids"][std::to_string(i)].get<std::vector<std::int64_t>>();
}

/// A prompt given as token ids (no tokenizer, no chat template).
inline draftscope::PromptSpec idsPrompt(std::vector<std::int64_t> ids) {
    draftscope::PromptSpec p;
    p.kind = draftscope::PromptSpec::Kind::Ids;
    p.ids = std::move(ids);
    return p;
}

/// Golden prompt `i` of goldens.json ("prompt_ids") as an ids prompt.
inline draftscope::PromptSpec goldenPrompt(int i) { return idsPrompt(promptIds(i)); }

/// The message of the draftscope::Error that `f()` throws; empty when it throws none (any
/// other exception escapes, failing the test).
template <class F>
QString errorOf(F&& f) {
    try {
        f();
    } catch (const draftscope::Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

/// max |a - b| / max |b| (the fixtures' tolerance measure). Returns +inf on size mismatch.
inline double relativeMaxError(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size() || b.empty()) return INFINITY;
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
        scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    }
    return diff / scale;
}

/// Copies model directory `src` into `dst` (created), returning dst.
inline std::string copyModel(const std::string& src, const std::string& dst) {
    std::filesystem::create_directories(dst);
    for (const auto& e : std::filesystem::directory_iterator(src))
        std::filesystem::copy_file(e.path(), std::filesystem::path(dst) / e.path().filename(),
                                   std::filesystem::copy_options::overwrite_existing);
    for (const auto& e : std::filesystem::directory_iterator(dst))
        std::filesystem::permissions(e.path(), std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
    return dst;
}

/// Copies model `src` to `dst`, writing its model.safetensors again through `transform`: it
/// receives the original file and adds to the writer what the new one should hold.
inline void rewriteCheckpoint(const std::string& src, const std::string& dst,
                              const std::function<void(const draftscope::SafetensorsFile&,
                                                       draftscope::SafetensorsWriter&)>& transform) {
    copyModel(src, dst);
    const auto f = draftscope::SafetensorsFile::open(src + "/model.safetensors");
    draftscope::SafetensorsWriter w;
    transform(*f, w);
    std::filesystem::remove(dst + "/model.safetensors");
    w.write(dst + "/model.safetensors");
}

inline nlohmann::json readJson(const std::string& path) {
    return nlohmann::json::parse(draftscope::readFileToString(path));
}
inline void writeJson(const std::string& path, const nlohmann::json& j) {
    std::ofstream(path, std::ios::trunc) << j.dump(2);
}
inline void writeBytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// Shape of a random one-layer DFlash drafter for a tiny test target (4 query / 2 KV heads).
struct RandomDrafterShape {
    std::int64_t hidden, headDim, intermediate, vocab;
};

/// Writes a random DFlash drafter (config.json + model.safetensors, float32) into `dir`:
/// one layer, `blockSize`, mask token vocab - 1, weights N(0, 1/fan_in) from `seed`.
inline void writeRandomDrafter(const std::string& dir, const RandomDrafterShape& shape, std::int64_t blockSize,
                               std::uint32_t seed) {
    std::filesystem::create_directories(dir);
    const std::int64_t H = shape.hidden, heads = 4, kv = 2, D = shape.headDim, I = shape.intermediate;
    const std::vector<std::int64_t> tapped = {0, 2};
    nlohmann::json c = {
        {"architectures", {"DFlashDraftModel"}},
        {"model_type", "qwen3"},
        {"hidden_size", H},
        {"intermediate_size", I},
        {"num_hidden_layers", 1},
        {"num_attention_heads", heads},
        {"num_key_value_heads", kv},
        {"head_dim", D},
        {"vocab_size", shape.vocab},
        {"max_position_embeddings", 4096},
        {"rms_norm_eps", 1e-6},
        {"hidden_act", "silu"},
        {"rope_theta", 1000000.0},
        {"dtype", "float32"},
        {"block_size", blockSize},
        {"num_target_layers", 4},
        {"dflash_config", {{"mask_token_id", shape.vocab - 1}, {"target_layer_ids", tapped}}},
    };
    writeJson(dir + "/config.json", c);
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    draftscope::SafetensorsWriter w;
    auto random = [&](const std::string& name, std::vector<std::int64_t> shape, float scale) {
        std::int64_t n = 1;
        for (auto d : shape) n *= d;
        std::vector<float> v(static_cast<std::size_t>(n));
        for (auto& x : v) x = normal(gen) * scale;
        w.addFloat32(name, shape, v);
    };
    auto ones = [&](const std::string& name, std::int64_t n) {
        w.addFloat32(name, {n}, std::vector<float>(static_cast<std::size_t>(n), 1.0f));
    };
    const auto fcIn = static_cast<std::int64_t>(tapped.size()) * H;
    random("fc.weight", {H, fcIn}, 1.0f / std::sqrt(static_cast<float>(fcIn)));
    ones("hidden_norm.weight", H);
    ones("norm.weight", H);
    const std::string p = "layers.0.";
    ones(p + "input_layernorm.weight", H);
    ones(p + "post_attention_layernorm.weight", H);
    const float s = 1.0f / std::sqrt(static_cast<float>(H));
    random(p + "self_attn.q_proj.weight", {heads * D, H}, s);
    random(p + "self_attn.k_proj.weight", {kv * D, H}, s);
    random(p + "self_attn.v_proj.weight", {kv * D, H}, s);
    random(p + "self_attn.o_proj.weight", {H, heads * D}, s);
    ones(p + "self_attn.q_norm.weight", D);
    ones(p + "self_attn.k_norm.weight", D);
    random(p + "mlp.gate_proj.weight", {I, H}, s);
    random(p + "mlp.up_proj.weight", {I, H}, s);
    random(p + "mlp.down_proj.weight", {H, I}, 1.0f / std::sqrt(static_cast<float>(I)));
    w.write(dir + "/model.safetensors");
}

}  // namespace testsupport
