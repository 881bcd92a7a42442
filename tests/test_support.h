#pragma once
// Helpers shared by the Qt Test suites: fixture paths, goldens, tolerances, temp models.

#include "draftscope/safetensors.h"

#include <nlohmann/json.hpp>

#include <QString>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace testsupport {

inline std::string dataPath(const std::string& rel) { return std::string(DRAFTSCOPE_TEST_DATA) + "/" + rel; }
inline std::string demoTarget() { return std::string(DRAFTSCOPE_DEMO_DIR) + "/target"; }
inline std::string demoDrafter() { return std::string(DRAFTSCOPE_DEMO_DIR) + "/drafter"; }

/// The three fixture drafters by their golden names.
inline std::string drafterDir(const std::string& name) {
    if (name == "drafter-good") return demoDrafter();
    return dataPath("models/" + name);
}

inline const nlohmann::json& goldens() {
    static const nlohmann::json j = nlohmann::json::parse(draftscope::readFileToString(dataPath("goldens.json")));
    return j;
}

inline const draftscope::SafetensorsFile& goldenTensors() {
    static const auto f = draftscope::SafetensorsFile::open(dataPath("goldens.safetensors"));
    return *f;
}

inline std::vector<std::int64_t> promptIds(int i) {
    return goldens()["prompt_ids"][std::to_string(i)].get<std::vector<std::int64_t>>();
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

inline nlohmann::json readJson(const std::string& path) {
    return nlohmann::json::parse(draftscope::readFileToString(path));
}
inline void writeJson(const std::string& path, const nlohmann::json& j) {
    std::ofstream(path, std::ios::trunc) << j.dump(2);
}
inline void writeBytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace testsupport
