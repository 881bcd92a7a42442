#include "draftscope/file_io.h"

#include "draftscope/errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace draftscope {

void checkJsonDepth(const char* begin, const char* end, const std::string& what, int maxDepth) {
    int depth = 0;
    bool inString = false;
    for (const char* p = begin; p < end; ++p) {
        const char c = *p;
        if (inString) {
            if (c == '\\') ++p;  // skip the escaped character
            else if (c == '"') inString = false;
        } else if (c == '"') {
            inString = true;
        } else if (c == '{' || c == '[') {
            if (++depth > maxDepth)
                throw Error("'" + what + "' nests JSON objects or arrays more than " + std::to_string(maxDepth) +
                            " levels deep (at byte " + std::to_string(p - begin) + "); refusing to parse it");
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
}

std::string readFileToString(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw Error("file not found: '" + path + "'");
    if (std::filesystem::is_directory(path, ec))
        throw Error("expected a file but found a directory: '" + path + "'");
    // A FIFO or device would block the reader or never end: refuse before opening it.
    if (!std::filesystem::is_regular_file(path, ec))
        throw Error("'" + path + "' is not a regular file (a FIFO, device or socket); give a file");
    constexpr std::uintmax_t kMaxBytes = 256u << 20;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxBytes)
        throw Error("'" + path + "' is " + std::to_string(size >> 20) + " MiB; draftscope reads configs, tokenizers and "
                    "prompt files of at most 256 MiB");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open '" + path + "': " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw Error("cannot read '" + path + "'");
    return ss.str();
}

void writeFileAtomically(const std::string& path, const std::string& contents) {
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw Error("cannot write '" + path + "': " + std::strerror(errno));
        out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw Error("cannot write '" + path + "' (disk full?)");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw Error("cannot write '" + path + "': " + why);
    }
}

}  // namespace draftscope
