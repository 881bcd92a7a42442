#include "draftscope/stop_tokens.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace draftscope {

namespace {

/// Appends the integer ids of `v` (an integer or a list; other entries are skipped) that
/// `into` does not hold yet.
void addIds(std::vector<std::int64_t>& into, const nlohmann::json& v) {
    auto add = [&](std::int64_t id) {
        if (std::find(into.begin(), into.end(), id) == into.end()) into.push_back(id);
    };
    if (v.is_number_integer()) add(v.get<std::int64_t>());
    else if (v.is_array())
        for (const auto& e : v)
            if (e.is_number_integer()) add(e.get<std::int64_t>());
}

}  // namespace

std::vector<std::int64_t> targetStopTokenIds(const std::string& targetDir, const std::vector<std::int64_t>& configEosIds,
                                             std::optional<std::int64_t> tokenizerEosId) {
    std::vector<std::int64_t> stops = configEosIds;
    const auto gen = std::filesystem::path(targetDir) / "generation_config.json";
    if (std::filesystem::exists(gen)) {
        try {
            const std::string text = readFileToString(gen.string());
            checkJsonDepth(text.data(), text.data() + text.size(), gen.string());
            const auto j = nlohmann::json::parse(text);
            if (j.is_object() && j.contains("eos_token_id")) addIds(stops, j["eos_token_id"]);
        } catch (const nlohmann::json::exception& e) {
            throw Error("'" + gen.string() + "' is not valid JSON: " + escapeNonPrintable(e.what()));
        }
    }
    if (tokenizerEosId) addIds(stops, *tokenizerEosId);
    return stops;
}

StopTokens::StopTokens(const std::vector<std::int64_t>& targetStopIds, bool ignoreEos) {
    if (!ignoreEos) ids_ = targetStopIds;
}

bool StopTokens::isStop(std::int64_t token) const { return std::find(ids_.begin(), ids_.end(), token) != ids_.end(); }

std::optional<std::size_t> StopTokens::firstStop(const std::vector<std::int64_t>& ids, std::size_t from) const {
    for (std::size_t i = from; i < ids.size(); ++i)
        if (isStop(ids[i])) return i;
    return std::nullopt;
}

bool StopTokens::cutAfterFirstStop(std::vector<std::int64_t>& ids, std::size_t from) const {
    const auto i = firstStop(ids, from);
    if (!i) return false;
    ids.resize(*i + 1);
    return true;
}

}  // namespace draftscope
