#include "checkpoints/shard_index.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace draftscope {

std::vector<std::pair<std::string, std::string>> parseShardIndex(const std::string& text,
                                                                  const std::string& indexPath) {
    nlohmann::json j;
    try {
        checkJsonDepth(text.data(), text.data() + text.size(), indexPath);
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + indexPath + "' is not valid JSON: " + escapeNonPrintable(e.what()));
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        throw Error("'" + indexPath + "': required object 'weight_map' is missing");
    std::vector<std::pair<std::string, std::string>> out;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        if (!it.value().is_string())
            throw Error("'" + indexPath + "': weight_map entry '" + escapeNonPrintable(it.key()) + "' is not a file name");
        std::string shard = it.value().get<std::string>();
        if (shard.empty() || std::filesystem::path(shard).filename().string() != shard || shard == "." || shard == "..")
            throw Error("'" + indexPath + "': weight_map entry '" + escapeNonPrintable(it.key()) + "' names shard '" +
                        escapeNonPrintable(shard) +
                        "', which is not a plain file name in the checkpoint directory");
        out.emplace_back(it.key(), std::move(shard));
    }
    return out;
}

}  // namespace draftscope
