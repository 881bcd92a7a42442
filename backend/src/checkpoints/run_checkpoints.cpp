// The checkpoints a trainer wrote into a run directory (findRunCheckpoints,
// draftscope/training_run.h; docs/TRACK.md, "Run directories").

#include "checkpoints/training_checkpoint.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/training_run.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>

namespace draftscope {

namespace {

namespace fs = std::filesystem;

/// Newest modification time among `files`, as seconds before now (0 for a future time).
double ageSeconds(const std::vector<fs::path>& files) {
    std::error_code ec;
    auto newest = fs::file_time_type::min();
    for (const auto& f : files) {
        const auto t = fs::last_write_time(f, ec);
        if (!ec) newest = std::max(newest, t);
    }
    const auto age = std::chrono::duration<double>(fs::file_time_type::clock::now() - newest).count();
    return std::max(0.0, age);
}

/// "name:size:mtime;" over `files`: changes when a file is rewritten.
std::string signatureOf(const std::vector<fs::path>& files) {
    std::string s;
    for (const auto& f : files) {
        std::error_code ec;
        const auto size = fs::file_size(f, ec);
        const auto t = fs::last_write_time(f, ec).time_since_epoch().count();
        s += f.filename().string() + ":" + std::to_string(size) + ":" + std::to_string(t) + ";";
    }
    return s;
}

/// The config and weight files of a drafter directory (config.json and *.safetensors, with
/// a shard index); empty weights if it has none.
std::vector<fs::path> drafterFiles(const fs::path& dir, bool& hasWeights) {
    std::vector<fs::path> files;
    hasWeights = false;
    std::error_code ec;
    if (fs::is_regular_file(dir / "config.json", ec)) files.push_back(dir / "config.json");
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const auto name = e.path().filename().string();
        const bool weights = name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
        if (weights || name == "model.safetensors.index.json") files.push_back(e.path());
        hasWeights = hasWeights || weights;
    }
    std::sort(files.begin(), files.end());
    return files;
}

/// trainer_state.json's global_step, if the file has one.
std::optional<std::int64_t> trainerStateStep(const fs::path& dir) {
    const auto path = dir / "trainer_state.json";
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return std::nullopt;
    try {
        const auto text = readFileToString(path.string());
        checkJsonDepth(text.data(), text.data() + text.size(), path.string());
        const auto j = nlohmann::json::parse(text);
        if (j.is_object() && j.contains("global_step") && j["global_step"].is_number_integer())
            return j["global_step"].get<std::int64_t>();
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

}  // namespace

std::vector<RunCheckpoint> findRunCheckpoints(const std::string& runDir, double settleSeconds,
                                              std::vector<SkippedCheckpoint>* skipped) {
    std::error_code ec;
    if (!fs::is_directory(runDir, ec)) throw Error("run directory not found (or not a directory): '" + runDir + "'");
    const fs::path root = fs::absolute(runDir, ec).lexically_normal();
    std::vector<fs::directory_entry> entries;
    for (const auto& e : fs::directory_iterator(root, ec)) entries.push_back(e);
    if (ec) throw Error("cannot read run directory '" + runDir + "': " + ec.message());
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });

    // At most 15 digits: a step fits an int64 (std::stoll cannot throw).
    static const std::regex specForge(R"(epoch_(\d{1,15})_step_(\d{1,15}))");
    static const std::regex stepDir(R"(step[_-]?(\d{1,15}))");
    static const std::regex hfTrainer(R"(checkpoint-(\d{1,15}))");
    static const std::regex trailingNumber(R"((?:^|\D)(\d{1,15})$)");  // of a file's stem
    auto skip = [&](const fs::path& p, const std::string& why) {
        if (skipped) skipped->push_back({p.string(), why});
    };
    std::map<std::int64_t, RunCheckpoint> byStep;
    auto take = [&](RunCheckpoint c) {
        const auto it = byStep.find(c.step);
        if (it != byStep.end()) {
            // A directory wins over a file; between two of a kind the first by name stays.
            const bool replace = it->second.layout == "pt" && c.layout != "pt";
            const auto& loser = replace ? it->second : c;
            skip(loser.path, "step " + std::to_string(c.step) + " is also " + (replace ? c.path : it->second.path));
            if (!replace) return;
        }
        byStep[c.step] = std::move(c);
    };

    const bool runConfig = fs::is_regular_file(root / "config.json", ec);
    for (const auto& e : entries) {
        const auto name = e.path().filename().string();
        std::smatch m;
        if (e.is_directory(ec)) {
            RunCheckpoint c;
            if (std::regex_match(name, m, specForge)) {
                c.layout = "specforge";
                c.epoch = std::stoll(m[1]);
                c.step = std::stoll(m[2]);
            } else if (std::regex_match(name, m, hfTrainer)) {
                c.layout = "hf-trainer";
                c.step = std::stoll(m[1]);
            } else if (std::regex_match(name, m, stepDir)) {
                c.layout = "step";
                c.step = std::stoll(m[1]);
            } else {
                continue;  // logs, tensorboard/, the track output ...
            }
            c.stepFrom = "name";
            if (c.layout == "hf-trainer")
                if (const auto s = trainerStateStep(e.path())) {
                    c.step = *s;
                    c.stepFrom = "trainer_state.json";
                }
            bool weights = false;
            const auto files = drafterFiles(e.path(), weights);
            if (!weights || !fs::is_regular_file(e.path() / "config.json", ec)) {
                skip(e.path(), weights ? "no config.json" : "no *.safetensors weights (yet)");
                continue;
            }
            if (ageSeconds(files) < settleSeconds) {
                skip(e.path(), "written less than " + std::to_string(static_cast<int>(settleSeconds)) + " s ago");
                continue;
            }
            c.path = e.path().string();
            c.signature = signatureOf(files);
            take(std::move(c));
            continue;
        }
        const auto ext = e.path().extension().string();
        if (!e.is_regular_file(ec) || (ext != ".pt" && ext != ".pth")) continue;
        RunCheckpoint c;
        c.layout = "pt";
        c.path = e.path().string();
        std::vector<fs::path> files = {e.path()};
        if (runConfig) files.push_back(root / "config.json");
        if (ageSeconds(files) < settleSeconds) {
            skip(e.path(), "written less than " + std::to_string(static_cast<int>(settleSeconds)) + " s ago");
            continue;
        }
        try {
            if (const auto s = trainingCheckpointStep(c.path)) {
                c.step = *s;
                c.stepFrom = "checkpoint field";
            }
        } catch (const Error& err) {
            skip(e.path(), err.what());
            continue;
        }
        const auto stem = e.path().stem().string();
        if (c.step < 0 && std::regex_search(stem, m, trailingNumber)) {
            c.step = std::stoll(m[1]);
            c.stepFrom = "name";
        }
        if (c.step < 0) {
            skip(e.path(), "no step in its name or its contents (global_step, step, iteration)");
            continue;
        }
        if (!runConfig) {
            skip(e.path(), "no config.json beside it in the run directory");
            continue;
        }
        c.signature = signatureOf(files);
        take(std::move(c));
    }
    std::vector<RunCheckpoint> out;
    for (auto& [step, c] : byStep) out.push_back(std::move(c));
    return out;
}

}  // namespace draftscope
