// The run index of `draftscope-cli track` (track.json) and trainer logs (JSON lines, CSV,
// HF Trainer's trainer_state.json): draftscope/training_run.h, docs/TRACK.md.

#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/results_json.h"
#include "draftscope/training_run.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

namespace draftscope {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kFormat = "draftscope-track";
constexpr std::size_t kMaxLogBytes = std::size_t(1) << 30;

json parseJsonText(const std::string& text, const std::string& what) {
    checkJsonDepth(text.data(), text.data() + text.size(), what);
    try {
        return json::parse(text);
    } catch (const json::exception& e) {
        throw Error("'" + what + "' is not valid JSON: " + escapeNonPrintable(e.what()));
    }
}

std::string lower(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

/// The step of a log record: its "step", "global_step" or "iteration" number.
std::optional<std::int64_t> recordStep(const json& r) {
    for (const char* k : {"step", "global_step", "iteration"})
        if (r.contains(k) && r[k].is_number()) return static_cast<std::int64_t>(r[k].get<double>());
    return std::nullopt;
}

/// readTrainerLog's automatic choice among the numeric keys of the records.
std::string chooseMetric(const std::vector<json>& records) {
    std::vector<std::string> keys;
    for (const auto& r : records)
        for (const auto& [k, v] : r.items())
            if (v.is_number() && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    for (const auto& k : keys)
        if (lower(k).find("accept") != std::string::npos) return k;
    for (const char* want : {"acc_len", "tau", "acc"})
        for (const auto& k : keys) {
            const auto l = lower(k);
            const auto slash = l.rfind('/');
            if ((slash == std::string::npos ? l : l.substr(slash + 1)) == want) return k;
        }
    return {};
}

std::vector<std::string> splitCsvLine(const std::string& line) {
    std::vector<std::string> out;
    std::string cell;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char ch = line[i];
        if (quoted) {
            if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') cell += '"', ++i;
            else if (ch == '"') quoted = false;
            else cell += ch;
        } else if (ch == '"') {
            quoted = true;
        } else if (ch == ',') {
            out.push_back(cell);
            cell.clear();
        } else if (ch != '\r') {
            cell += ch;
        }
    }
    out.push_back(cell);
    return out;
}

/// The records of a log file as JSON objects (CSV cells that parse as numbers become numbers).
std::vector<json> logRecords(const std::string& path) {
    const auto text = readFileToString(path);
    if (text.size() > kMaxLogBytes) throw Error("trainer log '" + path + "' is larger than 1 GiB");
    const auto name = fs::path(path).filename().string();
    std::vector<json> records;
    if (name == "trainer_state.json") {
        const auto j = parseJsonText(text, path);
        if (!j.is_object() || !j.contains("log_history") || !j["log_history"].is_array())
            throw Error("trainer log '" + path + "' has no log_history list (HF Trainer's trainer_state.json)");
        for (const auto& r : j["log_history"])
            if (r.is_object()) records.push_back(r);
        return records;
    }
    std::istringstream in(text);
    std::string line;
    int lineNo = 0;
    if (fs::path(path).extension() == ".csv") {
        std::vector<std::string> header;
        while (std::getline(in, line)) {
            ++lineNo;
            if (line.empty() || line == "\r") continue;
            const auto cells = splitCsvLine(line);
            if (header.empty()) {
                header = cells;
                continue;
            }
            json r = json::object();
            for (std::size_t i = 0; i < cells.size() && i < header.size(); ++i) {
                char* end = nullptr;
                const double v = std::strtod(cells[i].c_str(), &end);
                if (!cells[i].empty() && end && *end == '\0' && std::isfinite(v)) r[header[i]] = v;
                else r[header[i]] = cells[i];
            }
            records.push_back(std::move(r));
        }
        const bool hasStep = std::any_of(header.begin(), header.end(), [](const std::string& h) {
            return h == "step" || h == "global_step" || h == "iteration";
        });
        if (!header.empty() && !hasStep)
            throw Error("trainer log '" + path + "': the CSV header names no step column (step, global_step or iteration)");
        return records;
    }
    while (std::getline(in, line)) {  // JSON lines
        ++lineNo;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            checkJsonDepth(line.data(), line.data() + line.size(), path, 64);
            auto r = json::parse(line);
            if (r.is_object()) records.push_back(std::move(r));
        } catch (const json::exception& e) {
            throw Error("trainer log '" + path + "', line " + std::to_string(lineNo) +
                        ": not a JSON object: " + escapeNonPrintable(e.what()));
        }
    }
    return records;
}

json findingJson(const TrackFinding& f) {
    json ev = json::object();
    for (const auto& [k, v] : f.evidence) ev[k] = std::isfinite(v) ? json(v) : json(nullptr);
    return {{"id", f.id},         {"severity", severityName(f.severity)}, {"step", f.step},
            {"from_step", f.fromStep}, {"message", f.message},           {"evidence", ev},
            {"positions", f.positions}};
}

json numbers(const std::vector<double>& v) {
    json a = json::array();
    for (double x : v) a.push_back(std::isfinite(x) ? json(x) : json(nullptr));
    return a;
}

template <class T>
T field(const json& j, const char* key, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) throw Error(where + ": missing field '" + key + "'");
    try {
        return j[key].get<T>();
    } catch (const json::exception&) {
        throw Error(where + "." + key + ": wrong type (found " + std::string(j[key].type_name()) + ")");
    }
}

std::vector<double> numbersFrom(const json& j, const char* key, const std::string& where) {
    const auto& a = j.contains(key) ? j[key] : json();
    if (!a.is_array()) throw Error(where + "." + key + ": expected an array of numbers");
    std::vector<double> out;
    for (const auto& v : a) {
        if (v.is_null()) out.push_back(NAN);
        else if (v.is_number()) out.push_back(v.get<double>());
        else throw Error(where + "." + key + ": expected an array of numbers");
    }
    return out;
}

Severity severityFrom(const std::string& s, const std::string& where) {
    if (s == "info") return Severity::Info;
    if (s == "warning") return Severity::Warning;
    if (s == "error") return Severity::Error;
    throw Error(where + ".severity: expected info, warning or error, found '" + escapeNonPrintable(s) + "'");
}

}  // namespace

TrainerLog readTrainerLog(const std::string& path, const std::string& metric) {
    const auto records = logRecords(path);
    TrainerLog log;
    log.path = path;
    log.metric = metric.empty() ? chooseMetric(records) : metric;
    std::map<std::int64_t, double> points;
    for (const auto& r : records) {
        const auto step = recordStep(r);
        if (!step || log.metric.empty() || !r.contains(log.metric) || !r[log.metric].is_number()) continue;
        points[*step] = r[log.metric].get<double>();
    }
    if (points.empty()) {
        std::vector<std::string> keys;
        for (const auto& r : records)
            for (const auto& [k, v] : r.items())
                if (v.is_number() && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        std::string list;
        for (const auto& k : keys) list += (list.empty() ? "" : ", ") + escapeNonPrintable(k);
        throw Error("trainer log '" + path + "': " +
                    (log.metric.empty() ? std::string("no acceptance metric found (a key containing 'accept', or acc_len, "
                                                      "tau, acc); name one with --log-metric")
                                        : "no record has both a step and '" + escapeNonPrintable(log.metric) + "'") +
                    (list.empty() ? std::string("; the records hold no numbers") : "; numeric keys found: " + list));
    }
    log.points.assign(points.begin(), points.end());
    return log;
}

std::string findTrainerLog(const std::string& runDir) {
    std::error_code ec;
    std::vector<fs::path> logs;
    std::int64_t newestStep = -1;
    std::string newestState;
    for (const auto& e : fs::directory_iterator(runDir, ec)) {
        const auto name = e.path().filename().string();
        if (e.is_regular_file(ec) && (e.path().extension() == ".jsonl" || e.path().extension() == ".csv"))
            logs.push_back(e.path());
        if (e.is_directory(ec) && name.rfind("checkpoint-", 0) == 0 && fs::is_regular_file(e.path() / "trainer_state.json", ec)) {
            try {
                const auto step = std::stoll(name.substr(11));
                if (step > newestStep) newestStep = step, newestState = (e.path() / "trainer_state.json").string();
            } catch (const std::exception&) {
            }
        }
    }
    if (!newestState.empty()) return newestState;
    std::sort(logs.begin(), logs.end());
    return logs.empty() ? std::string() : logs.front().string();
}

std::string trackIndexPathOf(const std::string& dir) {
    std::error_code ec;
    for (const auto& p : {fs::path(dir) / "track.json", fs::path(dir) / "draftscope-track" / "track.json"})
        if (fs::is_regular_file(p, ec)) return p.string();
    return {};
}

void writeTrackIndex(const std::string& path, const TrackIndex& x) {
    json cps = json::array();
    for (const auto& c : x.checkpoints) {
        json conv = json::array();
        for (const auto& f : c.conventionFindings) conv.push_back(toJson(f));
        cps.push_back({{"step", c.checkpoint.step},
                       {"epoch", c.checkpoint.epoch},
                       {"path", c.checkpoint.path},
                       {"layout", c.checkpoint.layout},
                       {"step_from", c.checkpoint.stepFrom},
                       {"signature", c.checkpoint.signature},
                       {"status", c.status},
                       {"error", c.error},
                       {"results_file", c.resultsFile},
                       {"evaluated_utc", c.evaluatedUtc},
                       {"seconds", c.seconds},
                       {"prompt_ids", c.promptIds},
                       {"tau", c.tau},
                       {"prompt_taus", numbers(c.promptTaus)},
                       {"position_acceptance", numbers(c.positionAcceptance)},
                       {"ddtree_budgets", c.treeBudgets},
                       {"ddtree_taus", numbers(c.treeTaus)},
                       {"teacher_forced_tau", c.teacherForcedTau},
                       {"teacher_forced_expected", c.teacherForcedExpected},
                       {"prompt_teacher_forced_expected", numbers(c.promptTeacherForcedExpected)},
                       {"gap", c.gap},
                       {"convention_findings", conv}});
    }
    json findings = json::array();
    for (const auto& f : x.findings) findings.push_back(findingJson(f));
    json log = nullptr;
    if (x.trainerLog) {
        json pts = json::array();
        for (const auto& [s, v] : x.trainerLog->points) pts.push_back({s, v});
        log = {{"path", x.trainerLog->path}, {"metric", x.trainerLog->metric}, {"points", pts}};
    }
    const json j = {{"format", kFormat},
                    {"version", x.version},
                    {"run_dir", x.runDir},
                    {"target", {{"directory", x.targetDir}, {"config_sha256", x.targetConfigSha256}}},
                    {"prompt_set", {{"path", x.promptSetPath}, {"sha256", x.promptSetSha256}}},
                    {"settings", toJson(x.settings)},
                    {"shard", {{"index", x.shard.index}, {"count", x.shard.count}}},
                    {"checkpoints", cps},
                    {"findings", findings},
                    {"trainer_log", log},
                    {"trainer_log_note", x.trainerLogNote},
                    {"best_step", x.bestStep},
                    {"updated_utc", x.updatedUtc}};
    writeFileAtomically(path, j.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
}

TrackIndex readTrackIndex(const std::string& path) {
    const auto j = parseJsonText(readFileToString(path), path);
    const std::string w = "run index '" + path + "'";
    if (!j.is_object() || !j.contains("format") || j["format"] != kFormat)
        throw Error(w + " is not a draftscope run index (no \"format\": \"" + kFormat + "\")");
    TrackIndex x;
    x.version = field<int>(j, "version", w);
    if (x.version != 1) throw Error(w + " has version " + std::to_string(x.version) + "; this build reads version 1");
    x.runDir = field<std::string>(j, "run_dir", w);
    const auto t = field<json>(j, "target", w);
    x.targetDir = field<std::string>(t, "directory", w + ".target");
    x.targetConfigSha256 = field<std::string>(t, "config_sha256", w + ".target");
    const auto ps = field<json>(j, "prompt_set", w);
    x.promptSetPath = field<std::string>(ps, "path", w + ".prompt_set");
    x.promptSetSha256 = field<std::string>(ps, "sha256", w + ".prompt_set");
    x.settings = evalSettingsFromJson(field<json>(j, "settings", w), w + ".settings");
    const auto sh = field<json>(j, "shard", w);
    x.shard = {field<int>(sh, "index", w + ".shard"), field<int>(sh, "count", w + ".shard")};
    const auto cps = field<json>(j, "checkpoints", w);
    if (!cps.is_array()) throw Error(w + ".checkpoints: expected an array");
    for (std::size_t i = 0; i < cps.size(); ++i) {
        const auto& c = cps[i];
        const auto cw = w + ".checkpoints[" + std::to_string(i) + "]";
        TrackedCheckpoint t;
        t.checkpoint.step = field<std::int64_t>(c, "step", cw);
        t.checkpoint.epoch = field<std::int64_t>(c, "epoch", cw);
        t.checkpoint.path = field<std::string>(c, "path", cw);
        t.checkpoint.layout = field<std::string>(c, "layout", cw);
        t.checkpoint.stepFrom = field<std::string>(c, "step_from", cw);
        t.checkpoint.signature = field<std::string>(c, "signature", cw);
        t.status = field<std::string>(c, "status", cw);
        if (t.status != "done" && t.status != "partial" && t.status != "failed")
            throw Error(cw + ".status: expected done, partial or failed, found '" + escapeNonPrintable(t.status) + "'");
        t.error = field<std::string>(c, "error", cw);
        t.resultsFile = field<std::string>(c, "results_file", cw);
        t.evaluatedUtc = field<std::string>(c, "evaluated_utc", cw);
        t.seconds = field<double>(c, "seconds", cw);
        t.promptIds = field<std::vector<std::string>>(c, "prompt_ids", cw);
        t.tau = field<double>(c, "tau", cw);
        t.promptTaus = numbersFrom(c, "prompt_taus", cw);
        t.positionAcceptance = numbersFrom(c, "position_acceptance", cw);
        t.treeBudgets = field<std::vector<int>>(c, "ddtree_budgets", cw);
        t.treeTaus = numbersFrom(c, "ddtree_taus", cw);
        t.teacherForcedTau = field<double>(c, "teacher_forced_tau", cw);
        t.teacherForcedExpected = field<double>(c, "teacher_forced_expected", cw);
        t.promptTeacherForcedExpected = numbersFrom(c, "prompt_teacher_forced_expected", cw);
        t.gap = field<double>(c, "gap", cw);
        if (t.promptTaus.size() != t.promptIds.size() || t.promptTeacherForcedExpected.size() != t.promptIds.size() ||
            t.treeTaus.size() != t.treeBudgets.size())
            throw Error(cw + ": per-prompt and per-budget lists of different lengths");
        const auto conv = field<json>(c, "convention_findings", cw);
        if (!conv.is_array()) throw Error(cw + ".convention_findings: expected an array");
        for (std::size_t k = 0; k < conv.size(); ++k) {
            const auto fw = cw + ".convention_findings[" + std::to_string(k) + "]";
            Finding f;
            f.id = field<std::string>(conv[k], "id", fw);
            f.severity = severityFrom(field<std::string>(conv[k], "severity", fw), fw);
            f.message = field<std::string>(conv[k], "message", fw);
            t.conventionFindings.push_back(std::move(f));
        }
        x.checkpoints.push_back(std::move(t));
    }
    const auto fs = field<json>(j, "findings", w);
    if (!fs.is_array()) throw Error(w + ".findings: expected an array");
    for (std::size_t i = 0; i < fs.size(); ++i) {
        const auto fw = w + ".findings[" + std::to_string(i) + "]";
        TrackFinding f;
        f.id = field<std::string>(fs[i], "id", fw);
        f.severity = severityFrom(field<std::string>(fs[i], "severity", fw), fw);
        f.step = field<std::int64_t>(fs[i], "step", fw);
        f.fromStep = field<std::int64_t>(fs[i], "from_step", fw);
        f.message = field<std::string>(fs[i], "message", fw);
        f.positions = field<std::vector<int>>(fs[i], "positions", fw);
        const auto ev = field<json>(fs[i], "evidence", fw);
        if (!ev.is_object()) throw Error(fw + ".evidence: expected an object");
        for (const auto& [k, v] : ev.items()) f.evidence.emplace_back(k, v.is_number() ? v.get<double>() : NAN);
        x.findings.push_back(std::move(f));
    }
    if (j.contains("trainer_log") && j["trainer_log"].is_object()) {
        const auto& l = j["trainer_log"];
        TrainerLog log;
        log.path = field<std::string>(l, "path", w + ".trainer_log");
        log.metric = field<std::string>(l, "metric", w + ".trainer_log");
        for (const auto& p : field<json>(l, "points", w + ".trainer_log")) {
            if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
                throw Error(w + ".trainer_log.points: expected [step, value] pairs");
            log.points.emplace_back(p[0].get<std::int64_t>(), p[1].get<double>());
        }
        x.trainerLog = std::move(log);
    }
    x.trainerLogNote = field<std::string>(j, "trainer_log_note", w);
    x.bestStep = field<std::int64_t>(j, "best_step", w);
    x.updatedUtc = field<std::string>(j, "updated_utc", w);
    return x;
}

}  // namespace draftscope
