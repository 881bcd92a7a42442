#pragma once
// Helpers shared by the libFuzzer targets in this folder (docs/RELIABILITY.md "Fuzzing").

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace draftscope::fuzz {

/// A private scratch directory (in /dev/shm when it exists, so no disk I/O) for parsers
/// that take a path: each input is written to a file there before the parser reads it.
/// Removed when the fuzzer exits normally.
class ScratchDir {
public:
    ScratchDir() {
        const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::getenv("TMPDIR");
        std::string tmpl = std::string(base ? base : "/tmp") + "/draftscope-fuzz-XXXXXX";
        if (!::mkdtemp(tmpl.data())) std::abort();
        dir_ = tmpl;
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const std::string& path() const { return dir_; }

    /// Writes `size` bytes to `<dir>/<name>` (replacing it) and returns the file's path.
    std::string write(const std::string& name, const void* data, std::size_t size) const {
        const std::string file = dir_ + "/" + name;
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
        out.close();
        if (!out) std::abort();  // the harness itself failed, not the parser
        return file;
    }

private:
    std::string dir_;
};

/// The input as a string.
inline std::string asString(const std::uint8_t* data, std::size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace draftscope::fuzz
