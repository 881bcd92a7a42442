#include "draftscope/results_file.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/results_json.h"
#include "draftscope/safetensors.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>
#include <utility>

namespace draftscope {

namespace {

using nlohmann::json;

// ---- Tensor packing of the JSON document (docs/RESULTS_FORMAT.md, "Packing") ----
//
// Writing: every numeric, rectangular array with at least kMinTensorElements elements is
// stored as a tensor and replaced by {"$tensor": NAME}; an array of objects that all have the
// same keys becomes {"$records": N, "$columns": {key: [N values]}} (each column packed in
// turn, so per-step fields become one [steps, ...] tensor); an array of numeric arrays of
// different lengths becomes {"$ragged": {"values": flat, "lengths": [...]}}. Reading undoes
// this exactly: integers come back as integers, floats as the same double (F32 is used only
// when every value is exactly representable, else F64).

constexpr std::size_t kMinTensorElements = 16;

enum class Leaf { None, Int, Real };

/// Shape and leaf kind of a rectangular numeric array; false if not one.
bool numericShape(const json& a, std::vector<std::int64_t>& shape, Leaf& kind, std::size_t depth = 0) {
    if (!a.is_array()) return false;
    if (depth == shape.size()) shape.push_back(static_cast<std::int64_t>(a.size()));
    else if (shape[depth] != static_cast<std::int64_t>(a.size())) return false;
    if (a.empty()) return depth + 1 == shape.size();
    const bool nested = a.front().is_array();
    for (const auto& v : a) {
        if (v.is_array() != nested) return false;
        if (v.is_array()) {
            if (!numericShape(v, shape, kind, depth + 1)) return false;
            continue;
        }
        if (depth + 1 != shape.size()) return false;
        if (v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() <= std::numeric_limits<std::int64_t>::max())) {
            if (kind == Leaf::None) kind = Leaf::Int;
        } else if (v.is_number_float()) {
            kind = Leaf::Real;
        } else {
            return false;
        }
    }
    return true;
}

void flatten(const json& a, std::vector<const json*>& out) {
    for (const auto& v : a) {
        if (v.is_array()) flatten(v, out);
        else out.push_back(&v);
    }
}

bool sameKeys(const json& a, const json& b) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
        if (ia.key() != ib.key()) return false;
    return true;
}

class Packer {
public:
    explicit Packer(SafetensorsWriter& w) : w_(w) {}

    json pack(const json& j) {
        if (j.is_object()) {
            json o = json::object();
            for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = pack(it.value());
            return o;
        }
        if (!j.is_array()) return j;
        std::vector<std::int64_t> shape;
        Leaf kind = Leaf::None;
        if (numericShape(j, shape, kind)) {
            std::int64_t n = 1;
            for (auto d : shape) n *= d;
            if (n >= static_cast<std::int64_t>(kMinTensorElements)) return tensor(j, shape, kind);
            return j;
        }
        if (j.size() >= 2 && j.front().is_object() && !j.front().empty()) {
            bool records = true;
            for (const auto& v : j) records = records && v.is_object() && sameKeys(v, j.front());
            if (records) {
                json cols = json::object();
                for (auto it = j.front().begin(); it != j.front().end(); ++it) {
                    json col = json::array();
                    for (const auto& v : j) col.push_back(v[it.key()]);
                    cols[it.key()] = pack(col);
                }
                return {{"$records", j.size()}, {"$columns", cols}};
            }
        }
        bool ragged = !j.empty();
        std::size_t total = 0;
        for (const auto& v : j) {
            std::vector<std::int64_t> s;
            Leaf k = Leaf::None;
            ragged = ragged && numericShape(v, s, k) && s.size() == 1;
            if (ragged) total += v.size();
        }
        if (ragged && total >= kMinTensorElements) {
            json flat = json::array(), lengths = json::array();
            for (const auto& v : j) {
                lengths.push_back(v.size());
                for (const auto& x : v) flat.push_back(x);
            }
            return {{"$ragged", {{"values", pack(flat)}, {"lengths", pack(lengths)}}}};
        }
        json a = json::array();
        for (const auto& v : j) a.push_back(pack(v));
        return a;
    }

private:
    json tensor(const json& j, const std::vector<std::int64_t>& shape, Leaf kind) {
        std::vector<const json*> leaves;
        flatten(j, leaves);
        const std::string name = std::string("t").append(std::to_string(next_++));
        if (kind == Leaf::Int) {
            std::vector<std::int64_t> v;
            v.reserve(leaves.size());
            bool fits32 = true;
            for (const auto* x : leaves) {
                v.push_back(x->get<std::int64_t>());
                fits32 = fits32 && v.back() >= std::numeric_limits<std::int32_t>::min() &&
                         v.back() <= std::numeric_limits<std::int32_t>::max();
            }
            if (fits32) {
                std::vector<std::int32_t> n(v.begin(), v.end());
                w_.add(name, DType::I32, shape, n.data(), n.size() * sizeof(std::int32_t));
            } else {
                w_.add(name, DType::I64, shape, v.data(), v.size() * sizeof(std::int64_t));
            }
        } else {
            std::vector<double> v;
            v.reserve(leaves.size());
            bool exact32 = true;
            for (const auto* x : leaves) {
                v.push_back(x->get<double>());
                const double d = v.back();
                exact32 = exact32 && (std::isnan(d) || static_cast<double>(static_cast<float>(d)) == d);
            }
            if (exact32) {
                std::vector<float> f(v.begin(), v.end());
                w_.add(name, DType::F32, shape, f.data(), f.size() * sizeof(float));
            } else {
                w_.add(name, DType::F64, shape, v.data(), v.size() * sizeof(double));
            }
        }
        return {{"$tensor", name}};
    }

    SafetensorsWriter& w_;
    std::size_t next_ = 0;
};

class Unpacker {
public:
    explicit Unpacker(const SafetensorsFile& f) : f_(f) {}

    json unpack(const json& j, const std::string& where) {
        if (j.is_array()) {
            json a = json::array();
            for (std::size_t i = 0; i < j.size(); ++i) a.push_back(unpack(j[i], where + "[" + std::to_string(i) + "]"));
            return a;
        }
        if (!j.is_object()) return j;
        if (j.contains("$tensor")) return tensor(j["$tensor"], where);
        if (j.contains("$records")) return records(j, where);
        if (j.contains("$ragged")) return ragged(j["$ragged"], where);
        json o = json::object();
        for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = unpack(it.value(), where + "." + it.key());
        return o;
    }

private:
    json tensor(const json& ref, const std::string& where) {
        if (!ref.is_string()) throw Error(where + ": '$tensor' is not a tensor name");
        const auto name = ref.get<std::string>();
        const TensorInfo* t = f_.find(name);
        if (!t) throw Error(where + ": refers to tensor '" + name + "', which the file does not contain");
        const std::byte* p = f_.data(*t);
        const auto n = static_cast<std::size_t>(t->numel());
        json flat = json::array();
        switch (t->dtype) {
            case DType::I32:
                for (std::size_t i = 0; i < n; ++i) {
                    std::int32_t v;
                    std::memcpy(&v, p + i * 4, 4);
                    flat.push_back(static_cast<std::int64_t>(v));
                }
                break;
            case DType::I64:
                for (std::size_t i = 0; i < n; ++i) {
                    std::int64_t v;
                    std::memcpy(&v, p + i * 8, 8);
                    flat.push_back(v);
                }
                break;
            case DType::F32:
                for (std::size_t i = 0; i < n; ++i) {
                    float v;
                    std::memcpy(&v, p + i * 4, 4);
                    flat.push_back(static_cast<double>(v));
                }
                break;
            case DType::F64:
                for (std::size_t i = 0; i < n; ++i) {
                    double v;
                    std::memcpy(&v, p + i * 8, 8);
                    flat.push_back(v);
                }
                break;
            default:
                throw Error(where + ": tensor '" + name + "' has dtype " + dtypeName(t->dtype) +
                            ", expected I32, I64, F32 or F64");
        }
        if (t->shape.empty()) throw Error(where + ": tensor '" + name + "' is a scalar, expected an array");
        // Re-nest row-major.
        std::size_t pos = 0;
        std::function<json(std::size_t)> nest = [&](std::size_t dim) {
            json a = json::array();
            for (std::int64_t i = 0; i < t->shape[dim]; ++i)
                a.push_back(dim + 1 == t->shape.size() ? flat[pos++] : nest(dim + 1));
            return a;
        };
        return nest(0);
    }

    json records(const json& j, const std::string& where) {
        const auto& nv = j["$records"];
        if (!nv.is_number_unsigned() && !nv.is_number_integer()) throw Error(where + ": '$records' is not a count");
        const auto n = nv.get<std::int64_t>();
        if (n < 0 || !j.contains("$columns") || !j["$columns"].is_object())
            throw Error(where + ": '$records' without a '$columns' object");
        json out = json::array();
        for (std::int64_t i = 0; i < n; ++i) out.push_back(json::object());
        for (auto it = j["$columns"].begin(); it != j["$columns"].end(); ++it) {
            const json col = unpack(it.value(), where + "." + it.key());
            if (!col.is_array() || static_cast<std::int64_t>(col.size()) != n)
                throw Error(where + "." + it.key() + ": column has " + (col.is_array() ? std::to_string(col.size()) : "no") +
                            " values, expected " + std::to_string(n));
            for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)][it.key()] = col[static_cast<std::size_t>(i)];
        }
        return out;
    }

    json ragged(const json& r, const std::string& where) {
        if (!r.is_object() || !r.contains("values") || !r.contains("lengths"))
            throw Error(where + ": '$ragged' needs 'values' and 'lengths'");
        const json values = unpack(r["values"], where + ".values");
        const json lengths = unpack(r["lengths"], where + ".lengths");
        if (!values.is_array() || !lengths.is_array()) throw Error(where + ": '$ragged' values and lengths must be arrays");
        json out = json::array();
        std::size_t pos = 0;
        for (const auto& l : lengths) {
            if (!l.is_number_integer() && !l.is_number_unsigned()) throw Error(where + ".lengths: expected integers");
            const auto len = l.get<std::int64_t>();
            if (len < 0 || pos + static_cast<std::size_t>(len) > values.size())
                throw Error(where + ": ragged lengths add up to more than the " + std::to_string(values.size()) + " values");
            json a = json::array();
            for (std::int64_t k = 0; k < len; ++k) a.push_back(values[pos++]);
            out.push_back(std::move(a));
        }
        if (pos != values.size())
            throw Error(where + ": ragged lengths add up to " + std::to_string(pos) + ", expected " + std::to_string(values.size()));
        return out;
    }

    const SafetensorsFile& f_;
};

// ---- The document ----

json modelJson(const ResultsModel& m) {
    json j = toJson(m.summary);
    j["config_sha256"] = m.configSha256;
    return j;
}

ResultsModel modelFromJson(const json& j, const std::string& where) {
    ResultsModel m;
    m.summary = modelSummaryFromJson(j, where);
    if (!j.contains("config_sha256") || !j["config_sha256"].is_string())
        throw Error(where + ": missing string field 'config_sha256'");
    m.configSha256 = j["config_sha256"].get<std::string>();
    return m;
}

template <class T>
struct IsVector : std::false_type {};
template <class U>
struct IsVector<std::vector<U>> : std::true_type {};

/// `v` as T. Integer fields (and arrays of them) take only JSON integers that fit T:
/// nlohmann's get<T>() would cast a float to an integer (undefined behaviour out of range,
/// found by fuzz_results_file) or narrow a wide integer silently. Throws Error naming
/// `where` otherwise.
template <class T>
T strictGet(const json& v, const std::string& where) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        constexpr auto lo = std::numeric_limits<T>::min();
        constexpr auto hi = std::numeric_limits<T>::max();
        auto outOfRange = [&](const std::string& n) {
            return Error(where + ": " + n + " is out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
        };
        if (v.is_number_unsigned()) {
            const auto u = v.get<std::uint64_t>();
            if (!std::in_range<T>(u)) throw outOfRange(std::to_string(u));
            return static_cast<T>(u);
        }
        if (v.is_number_integer()) {
            const auto i = v.get<std::int64_t>();
            if (!std::in_range<T>(i)) throw outOfRange(std::to_string(i));
            return static_cast<T>(i);
        }
        throw Error(where + ": wrong type (" + v.type_name() + "), expected an integer");
    } else if constexpr (IsVector<T>::value) {
        if (!v.is_array()) throw Error(where + ": wrong type (" + v.type_name() + "), expected an array");
        T out;
        out.reserve(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
            out.push_back(strictGet<typename T::value_type>(v[i], where + "[" + std::to_string(i) + "]"));
        return out;
    } else {
        try {
            return v.get<T>();
        } catch (const json::exception&) {
            throw Error(where + ": wrong type (" + v.type_name() + ")");
        }
    }
}

template <class T>
T field(const json& j, const std::string& key, const std::string& where) {
    if (!j.is_object()) throw Error(where + ": expected an object, found " + std::string(j.type_name()));
    const auto it = j.find(key);
    if (it == j.end()) throw Error(where + ": missing field '" + key + "'");
    return strictGet<T>(*it, where + "." + key);
}

EvalSettings settingsFromJson(const json& j, const std::string& w) {
    EvalSettings s;
    s.run.maxNewTokens = field<std::int64_t>(j, "max_new_tokens", w);
    s.run.ignoreEos = field<bool>(j, "ignore_eos", w);
    readSamplingJson(j, s.run, w);
    s.ddtreeBudgets = field<std::vector<int>>(j, "ddtree_budgets", w);
    const auto turns = field<std::string>(j, "turns", w);
    if (turns != "first" && turns != "all") throw Error(w + ".turns: expected \"first\" or \"all\", found \"" + turns + "\"");
    s.allTurns = turns == "all";
    s.chatWrapRaw = field<bool>(j, "chat_wrap_raw", w);
    s.thinking = field<bool>(j, "thinking", w);
    s.limit = field<std::int64_t>(j, "limit", w);
    s.histogramBins = field<int>(j, "histogram_bins", w);
    s.device = field<std::string>(j, "device", w);
    s.dtype = field<std::string>(j, "dtype", w);
    return s;
}

ResultsShard shardFromJson(const json& j, const std::string& w) {
    ResultsShard s{field<int>(j, "index", w), field<int>(j, "count", w)};
    if (s.count < 1 || s.index < 0 || s.index >= s.count)
        throw Error(w + ": expected 0 <= index < count, found index " + std::to_string(s.index) + ", count " +
                    std::to_string(s.count));
    return s;
}

json documentJson(const ResultsFile& r) {
    json drafters = json::array();
    for (const auto& d : r.drafters) drafters.push_back(modelJson(d));
    json prompts = json::array();
    for (const auto& p : r.prompts) {
        json per = json::array();
        for (const auto& d : p.drafters) {
            json trees = json::array();
            for (const auto& t : d.trees) trees.push_back(toJson(t));
            json run = toJson(d.run);
            // Definitions are documented once in RESULTS_FORMAT.md; keep the file lean.
            run.erase("tau_definition");
            run.erase("per_position_acceptance_definition");
            run.erase("acceptance_histogram_definition");
            for (auto& t : trees) t.erase("tau_definition");
            per.push_back({{"run", run},
                           {"ddtree", trees},
                           {"hidden_stats", toJson(d.hiddenStats)},
                           {"hidden_stats_error", d.hiddenStatsError}});
        }
        prompts.push_back({{"id", p.id},
                           {"source_id", p.sourceId},
                           {"line", p.line},
                           {"turn", p.turn},
                           {"index", p.index},
                           {"prompt", toJson(p.prompt)},
                           {"error", p.error},
                           {"drafters", per}});
    }
    json ids = json::array(), pieces = json::array();
    for (const auto& [id, piece] : r.tokenPieces) {
        ids.push_back(id);
        pieces.push_back(piece);
    }
    return {{"format", kResultsMetadataKey},
            {"version", r.version},
            {"producer", r.producer},
            {"created_utc", r.createdUtc},
            {"complete", r.complete},
            {"prompt_set", {{"path", r.promptSetPath}, {"sha256", r.promptSetSha256}, {"prompts", r.promptSetLines}}},
            {"shard", {{"index", r.shard.index}, {"count", r.shard.count}}},
            {"target", modelJson(r.target)},
            {"drafters", drafters},
            {"settings", toJson(r.settings)},
            {"token_pieces", {{"ids", ids}, {"pieces", pieces}}},
            {"prompts", prompts}};
}

ResultsFile documentFromJson(const json& j) {
    ResultsFile r;
    const std::string w = "results";
    r.version = field<int>(j, "version", w);
    r.producer = field<std::string>(j, "producer", w);
    r.createdUtc = field<std::string>(j, "created_utc", w);
    r.complete = field<bool>(j, "complete", w);
    const auto& ps = j.at("prompt_set");
    r.promptSetPath = field<std::string>(ps, "path", w + ".prompt_set");
    r.promptSetSha256 = field<std::string>(ps, "sha256", w + ".prompt_set");
    r.promptSetLines = field<std::int64_t>(ps, "prompts", w + ".prompt_set");
    if (j.contains("shard")) r.shard = shardFromJson(j["shard"], w + ".shard");  // absent before sharding: {0, 1}
    r.target = modelFromJson(field<json>(j, "target", w), w + ".target");
    const auto drafters = field<json>(j, "drafters", w);
    if (!drafters.is_array()) throw Error(w + ".drafters: expected an array");
    for (std::size_t i = 0; i < drafters.size(); ++i)
        r.drafters.push_back(modelFromJson(drafters[i], w + ".drafters[" + std::to_string(i) + "]"));
    r.settings = settingsFromJson(field<json>(j, "settings", w), w + ".settings");
    const auto tp = field<json>(j, "token_pieces", w);
    const auto ids = field<std::vector<std::int64_t>>(tp, "ids", w + ".token_pieces");
    const auto pieces = field<std::vector<std::string>>(tp, "pieces", w + ".token_pieces");
    if (ids.size() != pieces.size())
        throw Error(w + ".token_pieces: " + std::to_string(ids.size()) + " ids but " + std::to_string(pieces.size()) + " pieces");
    for (std::size_t i = 0; i < ids.size(); ++i) r.tokenPieces[ids[i]] = pieces[i];
    const auto prompts = field<json>(j, "prompts", w);
    if (!prompts.is_array()) throw Error(w + ".prompts: expected an array");
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        const std::string pw = w + ".prompts[" + std::to_string(i) + "]";
        const auto& pj = prompts[i];
        PromptResult p;
        p.id = field<std::string>(pj, "id", pw);
        p.sourceId = field<std::string>(pj, "source_id", pw);
        p.line = field<int>(pj, "line", pw);
        p.turn = field<int>(pj, "turn", pw);
        if (pj.contains("index")) p.index = field<std::int64_t>(pj, "index", pw);  // absent before sharding: -1
        p.prompt = promptSpecFromJson(field<json>(pj, "prompt", pw), pw + ".prompt");
        p.error = field<std::string>(pj, "error", pw);
        const auto per = field<json>(pj, "drafters", pw);
        if (!per.is_array()) throw Error(pw + ".drafters: expected an array");
        if (p.error.empty() && per.size() != r.drafters.size())
            throw Error(pw + ".drafters: " + std::to_string(per.size()) + " entries, expected one per drafter (" +
                        std::to_string(r.drafters.size()) + ")");
        for (std::size_t d = 0; d < per.size(); ++d) {
            const std::string dw = pw + ".drafters[" + std::to_string(d) + "]";
            DrafterPromptResult x;
            x.run = runResultFromJson(field<json>(per[d], "run", dw), dw + ".run");
            const auto trees = field<json>(per[d], "ddtree", dw);
            if (!trees.is_array()) throw Error(dw + ".ddtree: expected an array");
            for (std::size_t t = 0; t < trees.size(); ++t)
                x.trees.push_back(treeRunResultFromJson(trees[t], dw + ".ddtree[" + std::to_string(t) + "]"));
            x.hiddenStats = hiddenStateStatsFromJson(field<json>(per[d], "hidden_stats", dw), dw + ".hidden_stats");
            x.hiddenStatsError = field<std::string>(per[d], "hidden_stats_error", dw);
            p.drafters.push_back(std::move(x));
        }
        r.prompts.push_back(std::move(p));
    }
    return r;
}

}  // namespace

EvalSettings evalSettingsFromJson(const json& j, const std::string& where) { return settingsFromJson(j, where); }

std::string ResultsFile::pieceOf(std::int64_t id) const {
    const auto it = tokenPieces.find(id);
    // Appended, not "#" + to_string(id): GCC 12 at -O2 warns falsely (-Wrestrict) on that form.
    return it == tokenPieces.end() ? std::string("#").append(std::to_string(id)) : it->second;
}

void writeResultsFile(const std::string& path, const ResultsFile& results) {
    SafetensorsWriter w;
    Packer packer(w);
    const json doc = packer.pack(documentJson(results));
    w.setMetadata(kResultsMetadataKey, doc.dump(-1, ' ', false, json::error_handler_t::replace));
    w.setMetadata("format", "draftscope results, version " + std::to_string(results.version) +
                                " (docs/RESULTS_FORMAT.md)");
    w.write(path);
}

ResultsFile readResultsFile(const std::string& path) {
    std::shared_ptr<const SafetensorsFile> f;
    try {
        f = SafetensorsFile::open(path);
    } catch (const Error& e) {
        throw Error("cannot open results file: " + std::string(e.what()));
    }
    const auto& meta = f->metadata();
    const auto it = meta.find(kResultsMetadataKey);
    if (it == meta.end())
        throw Error("not a draftscope results file: no '" + std::string(kResultsMetadataKey) + "' metadata in '" + path +
                    "' (a safetensors file with " + std::to_string(f->tensors().size()) + " tensor(s))");
    const std::string& text = it->second;
    const std::string where = "results file '" + path + "'";
    checkJsonDepth(text.data(), text.data() + text.size(), where);
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(where + " is damaged: its '" + kResultsMetadataKey + "' metadata is not valid JSON (" + escapeNonPrintable(e.what()) + ")");
    }
    const auto format = doc.is_object() ? doc.find("format") : doc.end();
    if (!doc.is_object() || format == doc.end() || !format->is_string() || format->get<std::string>() != kResultsMetadataKey)
        throw Error("not a draftscope results file: the '" + std::string(kResultsMetadataKey) + "' metadata in '" + path +
                    "' has no \"format\": \"" + kResultsMetadataKey + "\"");
    if (!doc.contains("version") || !doc["version"].is_number_integer())
        throw Error(where + " is damaged: no integer format 'version'");
    const int version = strictGet<int>(doc["version"], where + ": format 'version'");
    if (version > kResultsFormatVersion)
        throw Error(where + " was written by format version " + std::to_string(version) + ", this build reads " +
                    std::to_string(kResultsFormatVersion) + " (update draftscope)");
    if (version < 1) throw Error(where + " has format version " + std::to_string(version) + ", expected 1 to " +
                                  std::to_string(kResultsFormatVersion));
    try {
        Unpacker unpacker(*f);
        return documentFromJson(unpacker.unpack(doc, "results"));
    } catch (const Error& e) {
        throw Error(where + " is damaged: " + e.what());
    } catch (const json::exception& e) {
        throw Error(where + " is damaged: " + escapeNonPrintable(e.what()));
    }
}

}  // namespace draftscope
