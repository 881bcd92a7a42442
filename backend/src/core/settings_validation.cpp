#include "draftscope/settings_validation.h"

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

}  // namespace

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

void validate(const LoadOptions& o) {
    if (o.device != "cpu" && o.device != "cuda" && !isCudaIndex(o.device))
        throw InvalidSetting("device", "cpu, cuda or cuda:N", quoted(o.device));
    static const char* const kDtypes[] = {"float32", "fp32", "f32", "bfloat16", "bf16"};
    bool known = false;
    for (const char* d : kDtypes) known = known || o.dtype == d;
    if (!known) throw InvalidSetting("dtype", "float32 or bfloat16", quoted(o.dtype));
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
