#pragma once
// A training run made at test time (tst_track, tst_track_gui): the demo drafter's weights
// interpolated from noise (alpha 0) to drafter-good (alpha 1), saved as bf16 checkpoints in
// the layouts trainers write (docs/TRACK.md, "Run directories"). Include before Qt when
// using the .pt layout (torch_save_support.h includes ATen).

#include "draftscope/safetensors.h"
#include "test_support.h"
#include "torch_save_support.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace testsupport::track {

using Tensors = std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<float>>>;

/// The demo drafter's weights with every matrix w = alpha * good + (1 - alpha) * noise (noise
/// N(0, rms(good)), seeded); vectors (the norms) stay as trained.
inline Tensors interpolatedDrafter(double alpha, std::uint32_t seed) {
    const auto f = draftscope::SafetensorsFile::open(demoDrafter() + "/model.safetensors");
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Tensors out;
    for (const auto& t : f->tensors()) {
        auto v = f->readFloat32(t.name);
        if (t.shape.size() == 2) {
            double ss = 0;
            for (float x : v) ss += static_cast<double>(x) * x;
            const auto rms = static_cast<float>(std::sqrt(ss / static_cast<double>(v.size())));
            for (auto& x : v) x = static_cast<float>(alpha * x + (1 - alpha) * normal(gen) * rms);
        }
        out[t.name] = {t.shape, std::move(v)};
    }
    return out;
}

/// Rounds to bf16 (nearest even), as a trainer's save_pretrained of a bf16 model stores it.
inline std::vector<std::uint16_t> toBf16(const std::vector<float>& v) {
    std::vector<std::uint16_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        std::uint32_t u;
        std::memcpy(&u, &v[i], 4);
        u += 0x7FFF + ((u >> 16) & 1);
        out[i] = static_cast<std::uint16_t>(u >> 16);
    }
    return out;
}

/// The values a bf16 checkpoint of `t` holds, back as float32 (what the .pt layout stores, so
/// every layout carries the same numbers).
inline Tensors roundedToBf16(Tensors t) {
    for (auto& [name, st] : t)
        for (auto& x : st.second) {
            std::uint32_t u;
            std::memcpy(&u, &x, 4);
            u += 0x7FFF + ((u >> 16) & 1);
            u &= 0xFFFF0000u;
            std::memcpy(&x, &u, 4);
        }
    return t;
}

/// Writes step `step` of a run into `runDir` in `layout`: "specforge" (epoch_0_step_S/),
/// "step" (step_S/), "hf-trainer" (checkpoint-S/ with trainer_state.json and an optimizer
/// file beside the weights) or "pt" (drafter-S.pt whose "step" entry is S, and the drafter's
/// config.json in the run directory). Returns the checkpoint's path.
inline std::string writeCheckpoint(const std::string& runDir, const std::string& layout, std::int64_t step,
                                   const Tensors& tensors) {
    namespace fs = std::filesystem;
    fs::create_directories(runDir);
    const auto rounded = roundedToBf16(tensors);
    if (layout == "pt") {
        fs::copy_file(demoDrafter() + "/config.json", runDir + "/config.json", fs::copy_options::overwrite_existing);
        const auto path = runDir + "/drafter-" + std::to_string(step) + ".pt";
        writeTorchSave(path, rounded, step);
        return path;
    }
    const std::string name = layout == "specforge" ? "epoch_0_step_" + std::to_string(step)
                             : layout == "step"    ? "step_" + std::to_string(step)
                                                   : "checkpoint-" + std::to_string(step);
    const auto dir = runDir + "/" + name;
    fs::create_directories(dir);
    fs::copy_file(demoDrafter() + "/config.json", dir + "/config.json", fs::copy_options::overwrite_existing);
    draftscope::SafetensorsWriter w;
    for (const auto& [n, st] : tensors) {
        const auto bf = toBf16(st.second);
        w.add(n, draftscope::DType::BF16, st.first, bf.data(), bf.size() * 2);
    }
    w.write(dir + "/model.safetensors");
    if (layout == "hf-trainer") {
        writeJson(dir + "/trainer_state.json", {{"global_step", step}, {"log_history", nlohmann::json::array()}});
        writeBytes(dir + "/optimizer.pt", "not read");
    }
    return dir;
}

/// The planted series: alpha per step, rising, with a regression at step 4000.
inline const std::vector<std::pair<std::int64_t, double>> kSeries = {
    {1000, 0.0}, {2000, 0.6}, {3000, 1.0}, {4000, 0.1}, {5000, 1.0}};

/// Writes the first `count` steps of kSeries into `runDir` in `layout`.
inline void writeSeries(const std::string& runDir, const std::string& layout, std::size_t count = kSeries.size()) {
    for (std::size_t i = 0; i < count && i < kSeries.size(); ++i)
        writeCheckpoint(runDir, layout, kSeries[i].first, interpolatedDrafter(kSeries[i].second, 7));
}

}  // namespace testsupport::track
