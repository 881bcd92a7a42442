#include "draftscope/settings_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

namespace draftscope {

InvalidSetting::InvalidSetting(std::string option, std::string expected, std::string found)
    : Error(option + ": expected " + expected + ", found " + found),
      option_(std::move(option)),
      expected_(std::move(expected)),
      found_(std::move(found)) {}

std::string formatSettingValue(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[40];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

namespace {

std::string quoted(const std::string& text) { return "'" + escapeNonPrintable(text) + "'"; }

/// "cuda:N" with N a decimal device index of at most 4 digits.
bool isCudaIndex(const std::string& name) {
    if (name.rfind("cuda:", 0) != 0) return false;
    const std::string index = name.substr(5);
    if (index.empty() || index.size() > 4) return false;
    for (char c : index)
        if (c < '0' || c > '9') return false;
    return true;
}

/// One "40GiB" entry of a memory list, in bytes.
std::uint64_t parseMemoryLimit(const std::string& entry) {
    static const std::pair<const char*, double> kUnits[] = {
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
        {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},          {"TB", 1e12},  {"B", 1.0}};
    const auto bad = [&] {
        return InvalidSetting("gpu-memory", "a comma-separated list of sizes >= 0 with a unit (e.g. 40GiB,40GiB; "
                                            "units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", quoted(entry));
    };
    for (const auto& [unit, scale] : kUnits) {
        const std::string u = unit;
        if (entry.size() <= u.size() || entry.compare(entry.size() - u.size(), u.size(), u) != 0) continue;
        const std::string number = entry.substr(0, entry.size() - u.size());
        if (number.find_first_not_of("0123456789.") != std::string::npos) throw bad();  // no sign, nan, inf, spaces
        char* end = nullptr;
        const double v = std::strtod(number.c_str(), &end) * scale;
        if (end != number.c_str() + number.size() || !(v >= 0) || v >= 18446744073709551615.0) throw bad();
        return static_cast<std::uint64_t>(v);
    }
    throw bad();
}

}  // namespace

std::vector<std::string> splitCommas(const std::string& text) {
    const auto trimmed = [](const std::string& e) {
        const auto first = e.find_first_not_of(" \t");
        return first == std::string::npos ? std::string() : e.substr(first, e.find_last_not_of(" \t") - first + 1);
    };
    std::vector<std::string> out;
    std::size_t from = 0;
    for (auto comma = text.find(','); comma != std::string::npos; comma = text.find(',', from)) {
        out.push_back(trimmed(text.substr(from, comma - from)));
        from = comma + 1;
    }
    out.push_back(trimmed(text.substr(from)));
    return out;
}


std::vector<std::string> deviceList(const std::string& device) {
    const auto entries = splitCommas(device);
    for (const auto& e : entries) {
        const bool ok = e == "cpu" || e == "cuda" || isCudaIndex(e) || (e == "auto" && entries.size() == 1);
        if (!ok)
            throw InvalidSetting("device", "cpu, cuda, cuda:N, a comma-separated list of them (cuda:0,cuda:1) or auto",
                                 quoted(device));
    }
    return entries;
}

std::vector<std::uint64_t> parseMemoryLimits(const std::string& text) {
    std::vector<std::uint64_t> out;
    for (const auto& e : splitCommas(text)) out.push_back(parseMemoryLimit(e));
    return out;
}

void validate(const RunSettings& s) {
    if (s.maxNewTokens < 1)
        throw InvalidSetting("max-new", "an integer >= 1 (tokens to generate)", std::to_string(s.maxNewTokens));
    if (!std::isfinite(s.temperature) || s.temperature < 0)
        throw InvalidSetting("temperature", "a finite number >= 0 (0 = greedy)", formatSettingValue(s.temperature));
    if (!(s.topP > 0 && s.topP <= 1))  // NaN fails both comparisons
        throw InvalidSetting("top-p", "a number in (0, 1] (1 = off)", formatSettingValue(s.topP));
    if (s.topK < 0) throw InvalidSetting("top-k", "an integer >= 0 (0 = off)", std::to_string(s.topK));
    if (s.recordTopK < 1 || s.recordTopK > kMaxRecordTopK)
        throw InvalidSetting("record-top-k", "an integer from 1 to " + std::to_string(kMaxRecordTopK),
                             std::to_string(s.recordTopK));
    if (s.drafter < 0) throw InvalidSetting("drafter", "a drafter index >= 0", std::to_string(s.drafter));
}

std::uint64_t parseSeed(const std::string& text) {
    const auto bad = [&] { return InvalidSetting("seed", "an integer from 0 to 18446744073709551615", quoted(text)); };
    if (text.empty() || text.size() > 20) throw bad();
    std::uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') throw bad();
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (v > (UINT64_MAX - digit) / 10) throw bad();
        v = v * 10 + digit;
    }
    return v;
}

namespace {

/// The placement fields of LoadOptions against the device list `devices`.
void validatePlacement(const LoadOptions& o, const std::vector<std::string>& devices) {
    const bool automatic = devices.front() == "auto";
    const auto n = devices.size();
    if (!o.deviceMemory.empty() && !automatic && o.deviceMemory.size() != n)
        throw InvalidSetting("gpu-memory", "one limit per device of --device (" + std::to_string(n) + ")",
                             std::to_string(o.deviceMemory.size()) + " limits");
    const auto& split = o.splitAfterLayers;
    if (!split.empty() && (automatic || split.size() + 1 != n))
        throw InvalidSetting("split-after",
                             automatic ? std::string("no layer indices with --device auto (the placement is planned)")
                                       : std::to_string(n - 1) + " layer index(es), one fewer than the " +
                                             std::to_string(n) + " device(s) the target is split across",
                             std::to_string(split.size()));
    for (std::size_t i = 0; i < split.size(); ++i)
        if (split[i] < 0 || (i > 0 && split[i] <= split[i - 1]))
            throw InvalidSetting("split-after", "strictly increasing decoder layer indices >= 0",
                                 std::to_string(split[i]) + " at position " + std::to_string(i + 1));
    if (!o.drafterDevice.empty() && !automatic &&
        std::find(devices.begin(), devices.end(), o.drafterDevice) == devices.end())
        throw InvalidSetting("drafter-device", "one of the devices listed in --device ('" + o.device + "')",
                             quoted(o.drafterDevice));
    if (o.maxContext < 1)
        throw InvalidSetting("max-context", "an integer >= 1 (tokens of KV cache planned per layer)",
                             std::to_string(o.maxContext));
}

}  // namespace

void validate(const LoadOptions& o) {
    validatePlacement(o, deviceList(o.device));
    static const char* const kDtypes[] = {"float32", "fp32", "f32", "bfloat16", "bf16"};
    bool known = false;
    for (const char* d : kDtypes) known = known || o.dtype == d;
    if (!known) throw InvalidSetting("dtype", "float32 or bfloat16", quoted(o.dtype));
    if (o.cudaGraphs != "auto" && o.cudaGraphs != "on" && o.cudaGraphs != "off")
        throw InvalidSetting("cuda-graphs", "auto, on or off", quoted(o.cudaGraphs));
    if (o.mxfp4Experts != "auto" && o.mxfp4Experts != "packed" && o.mxfp4Experts != "unpacked")
        throw InvalidSetting("mxfp4-experts", "auto, packed or unpacked", quoted(o.mxfp4Experts));
    if (o.threads < 0 || o.threads > kMaxThreads)
        throw InvalidSetting("threads", "an integer from 0 to " + std::to_string(kMaxThreads) + " (0 = all cores)",
                             std::to_string(o.threads));
}

void validateInputPath(const std::string& option, const std::string& path, PathKind kind) {
    namespace fs = std::filesystem;
    const char* expected = kind == PathKind::File        ? "an existing file"
                           : kind == PathKind::Directory ? "an existing directory"
                                                         : "an existing directory or file";
    std::error_code ec;
    const auto status = fs::status(path, ec);  // follows symlinks
    if (path.empty()) throw InvalidSetting(option, expected, "an empty path");
    if (!fs::exists(status)) throw InvalidSetting(option, expected, quoted(path) + " (not found)");
    const bool isDir = fs::is_directory(status), isFile = fs::is_regular_file(status);
    if (isDir && kind == PathKind::File) throw InvalidSetting(option, expected, quoted(path) + " (a directory)");
    if (isFile && kind == PathKind::Directory) throw InvalidSetting(option, expected, quoted(path) + " (a file)");
    if (!isDir && !isFile)
        throw InvalidSetting(option, expected, quoted(path) + " (not a regular file: a FIFO, device or socket)");
}

}  // namespace draftscope
