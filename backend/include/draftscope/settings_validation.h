#pragma once
// The one place run and load settings are validated: the CLI, the GUI and the engine's own
// entry points call these, so a bad value is refused by name however it arrives (an option,
// a form field, a RunSettings built in code). Torch-free.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/run_types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace draftscope {

/// Largest CPU thread count accepted (LoadOptions::threads; 0 = all cores).
constexpr int kMaxThreads = 1024;
/// Largest draft top-k recorded per position (RunSettings::recordTopK; display only).
constexpr int kMaxRecordTopK = 1024;

/// A setting outside its accepted values. what() is "<option>: expected <expected>, found
/// <found>", e.g. "temperature: expected a finite number >= 0 (0 = greedy), found nan".
/// `option` is the setting's name as the CLI spells it without dashes ("temperature",
/// "top-p", "device"); a front end that spells it otherwise re-throws renamed().
class InvalidSetting : public Error {
public:
    InvalidSetting(std::string option, std::string expected, std::string found);
    const std::string& option() const noexcept { return option_; }
    const std::string& expected() const noexcept { return expected_; }
    const std::string& found() const noexcept { return found_; }
    /// The same error under another spelling of the option (e.g. "--temperature").
    InvalidSetting renamed(const std::string& spelling) const { return {spelling, expected_, found_}; }

private:
    std::string option_, expected_, found_;
};

/// `v` as a message shows it: the shortest decimal that reads back as `v` ("0.1", "1.5",
/// "1e+300"), "nan", "inf" or "-inf".
std::string formatSettingValue(double v);

/// Checks every field of a run's settings: max-new >= 1 (the target's
/// max_position_embeddings bounds it further when the run starts), temperature finite and
/// >= 0, top-p in (0, 1], top-k >= 0, record-top-k in 1..kMaxRecordTopK, drafter index
/// >= 0 (the engine checks it against the drafters loaded). Throws InvalidSetting naming the
/// first bad field.
void validate(const RunSettings& settings);

/// Parses a sampler seed written in decimal ("0" to "18446744073709551615", no sign, no
/// spaces). Throws InvalidSetting for "seed" otherwise: a "-1" must not wrap around to 2^64 - 1.
std::uint64_t parseSeed(const std::string& text);

/// Checks load options before anything loads: device "cpu", "cuda", "cuda:N", a
/// comma-separated list of those, or "auto" alone (whether CUDA is there is checked when
/// loading); dtype "float32" or "bfloat16" (or their short spellings fp32, f32, bf16);
/// threads in 0..kMaxThreads; one memory limit per listed device; one fewer forced
/// boundary than devices, strictly increasing from 0; a drafter device among the listed
/// ones; max-context >= 1. Throws InvalidSetting naming the first bad field.
void validate(const LoadOptions& options);

/// The entries of a device list ("cuda:0,cuda:1" or "cuda:0, cuda:1" -> {"cuda:0",
/// "cuda:1"}; spaces around entries are dropped; "auto" stays one entry), each checked as validate(LoadOptions) does. Throws InvalidSetting("device").
std::vector<std::string> deviceList(const std::string& device);

/// The comma-separated entries of `text`, each without surrounding spaces and tabs ("a, b"
/// is {"a", "b"}; an empty entry stays empty: "1," is {"1", ""}). Shared by the list options
/// (--device, --gpu-memory, --prompt-ids).
std::vector<std::string> splitCommas(const std::string& text);

/// Parses per-device memory limits "40GiB,40GiB" (spaces around entries allowed): each a number >= 0 (decimals allowed)
/// with a unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024),
/// rounded down to whole bytes. Throws InvalidSetting for "gpu-memory" naming the bad entry
/// (no unit, NaN, negative, overflow).
std::vector<std::uint64_t> parseMemoryLimits(const std::string& text);

/// What an input path option must name.
enum class PathKind { File, Directory, FileOrDirectory };

/// Checks that `path`, the value of input option `option` (e.g. "target", "prompt-file"),
/// exists and is of `kind` (a file is a regular file, or a symlink to one: a FIFO or device
/// would block the reader). Throws InvalidSetting, e.g. "target: expected an existing
/// directory, found '/models/x' (not found)".
void validateInputPath(const std::string& option, const std::string& path, PathKind kind);

}  // namespace draftscope
