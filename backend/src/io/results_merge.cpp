#include "draftscope/results_merge.h"

#include "draftscope/errors.h"
#include "draftscope/evaluation.h"
#include "draftscope/results_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

namespace draftscope {

namespace {

using nlohmann::json;

/// A value as a message shows it: compact JSON, long values cut.
std::string shown(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    return escapeNonPrintable(s);
}

/// Throws unless `found` equals `expected`; objects (key by key) and arrays of one length
/// (element by element) are descended into, so the message names the first field that differs ("file 'b': settings.max_new_tokens: expected 16 (as
/// 'a'), found 8").
void requireSame(const json& expected, const json& found, const std::string& field, const NamedResults& ref,
                 const NamedResults& part) {
    if (expected == found) return;
    if (expected.is_object() && found.is_object()) {
        for (auto it = expected.begin(); it != expected.end(); ++it)
            requireSame(it.value(), found.contains(it.key()) ? found[it.key()] : json(), field + "." + it.key(), ref, part);
        for (auto it = found.begin(); it != found.end(); ++it)
            if (!expected.contains(it.key())) requireSame(json(), it.value(), field + "." + it.key(), ref, part);
        return;
    }
    if (expected.is_array() && found.is_array() && expected.size() == found.size()) {
        for (std::size_t i = 0; i < expected.size(); ++i)
            requireSame(expected[i], found[i], field + "[" + std::to_string(i) + "]", ref, part);
        return;
    }
    throw Error("cannot merge: file '" + part.name + "': " + field + ": expected " + shown(expected) + " (as '" + ref.name +
                "'), found " + shown(found));
}

/// A model's identity as recorded: every summary field but the directory, and config_sha256.
json modelIdentity(const ResultsModel& m) {
    json j = toJson(m.summary);
    j.erase("directory");
    j["config_sha256"] = m.configSha256;
    return j;
}

/// What every shard of one evaluation shares.
json sharedFields(const ResultsFile& r) {
    json drafters = json::array();
    for (const auto& d : r.drafters) drafters.push_back(modelIdentity(d));
    return {{"prompt_set", {{"sha256", r.promptSetSha256}, {"prompts", r.promptSetLines}}},
            {"target", modelIdentity(r.target)},
            {"drafter_count", r.drafters.size()},
            {"drafters", drafters},
            {"settings", toJson(r.settings)},
            {"shard", {{"count", r.shard.count}}}};
}

/// Refuses an interrupted file or one whose prompts carry no index.
void requireMergeable(const NamedResults& part) {
    if (!part.results.complete)
        throw Error("cannot merge: file '" + part.name + "' is incomplete (its eval was interrupted after " +
                    std::to_string(part.results.prompts.size()) + " prompt(s)); run that shard again");
    for (std::size_t i = 0; i < part.results.prompts.size(); ++i)
        if (part.results.prompts[i].index < 0)
            throw Error("cannot merge: file '" + part.name + "': prompts[" + std::to_string(i) + "] ('" +
                        escapeNonPrintable(part.results.prompts[i].id) +
                        "') has no recorded index (written before sharding); evaluate it again with eval --shard");
}

/// Checks that each shard 0..count-1 is there exactly once.
void requireEveryShard(const std::vector<NamedResults>& parts) {
    const int count = parts.front().results.shard.count;
    std::map<int, const NamedResults*> seen;
    for (const auto& part : parts) {
        const auto [it, fresh] = seen.emplace(part.results.shard.index, &part);
        if (!fresh)
            throw Error("cannot merge: file '" + part.name + "' holds shard " + std::to_string(part.results.shard.index) +
                        "/" + std::to_string(count) + ", as '" + it->second->name + "' does (the same shard twice)");
    }
    for (int i = 0; i < count; ++i)
        if (!seen.count(i))
            throw Error("cannot merge: shard " + std::to_string(i) + "/" + std::to_string(count) +
                        " is missing (expected one file for each shard 0.." + std::to_string(count - 1) + ", found " +
                        std::to_string(parts.size()) + " file(s))");
}

/// Adds `part`'s token pieces to `pieces`; a piece that differs means another tokenizer.
void unitePieces(std::map<std::int64_t, std::string>& pieces, const NamedResults& part, const NamedResults& ref) {
    for (const auto& [id, piece] : part.results.tokenPieces) {
        const auto [it, fresh] = pieces.emplace(id, piece);
        if (!fresh && it->second != piece)
            requireSame(it->second, piece, "token_pieces[" + std::to_string(id) + "]", ref, part);
    }
}

}  // namespace

ResultsFile mergeResults(const std::vector<NamedResults>& parts) {
    if (parts.empty()) throw Error("cannot merge: no results files given");
    const NamedResults& ref = parts.front();
    const json shared = sharedFields(ref.results);
    for (const auto& part : parts) {
        requireMergeable(part);
        requireSame(shared, sharedFields(part.results), "results", ref, part);
    }
    requireEveryShard(parts);

    ResultsFile out = ref.results;
    out.createdUtc = utcTimestamp();
    out.shard = {};
    out.prompts.clear();
    std::map<std::int64_t, const NamedResults*> owner;
    for (const auto& part : parts) {
        unitePieces(out.tokenPieces, part, ref);
        for (const auto& p : part.results.prompts) {
            const auto [it, fresh] = owner.emplace(p.index, &part);
            if (!fresh)
                throw Error("cannot merge: file '" + part.name + "': prompt index " + std::to_string(p.index) + " ('" +
                            escapeNonPrintable(p.id) + "') is also in '" + it->second->name + "' (shards overlap)");
            out.prompts.push_back(p);
        }
    }
    std::stable_sort(out.prompts.begin(), out.prompts.end(),
                     [](const PromptResult& a, const PromptResult& b) { return a.index < b.index; });
    return out;
}

ResultsFile mergeResultsFiles(const std::vector<std::string>& paths) {
    std::vector<NamedResults> parts;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            std::error_code ec;
            if (paths[i] == paths[j] || std::filesystem::equivalent(paths[i], paths[j], ec))
                throw Error("cannot merge: file '" + paths[i] + "' is given twice (also as '" + paths[j] + "')");
        }
        parts.push_back({paths[i], readResultsFile(paths[i])});
    }
    return mergeResults(parts);
}

}  // namespace draftscope
