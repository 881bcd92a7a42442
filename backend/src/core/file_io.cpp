#include "draftscope/file_io.h"

#include "draftscope/errors.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
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

namespace {

namespace fs = std::filesystem;

/// The directory part of `path` ("." for a bare name).
std::string directoryOf(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    return parent.empty() ? std::string(".") : parent.string();
}

/// What is at a path, in words, for a refusal.
const char* kindOf(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

// Temporary files of uncommitted AtomicOutputFiles, for removePendingOutputFiles(): a fixed
// table a signal handler can read (no allocation, no locks). state: 0 free, 1 being filled
// or emptied, 2 holds a path to remove.
constexpr int kPendingSlots = 64;
constexpr std::size_t kPendingPathMax = 4096;
struct PendingSlot {
    std::atomic<int> state{0};
    char path[kPendingPathMax];
};
PendingSlot g_pending[kPendingSlots];

int registerPending(const std::string& temp) {
    if (temp.size() >= kPendingPathMax) return -1;
    for (int i = 0; i < kPendingSlots; ++i) {
        int expected = 0;
        if (!g_pending[i].state.compare_exchange_strong(expected, 1)) continue;
        std::memcpy(g_pending[i].path, temp.c_str(), temp.size() + 1);
        g_pending[i].state.store(2);
        return i;
    }
    return -1;  // more than kPendingSlots files at once: still removed by the destructor
}

void unregisterPending(int slot) {
    if (slot < 0) return;
    g_pending[slot].state.store(1);
    g_pending[slot].path[0] = '\0';
    g_pending[slot].state.store(0);
}

std::atomic<unsigned> g_tempCounter{0};

}  // namespace

std::string resolveOutputPath(const std::string& path) {
    if (path.empty()) throw Error("no output file name given (an empty path)");
    std::string p = path;
    for (int hops = 0;; ++hops) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0) {
            const int err = errno;
            if (err != ENOENT) throw Error("cannot write '" + path + "': " + std::strerror(err));
            // Nothing there yet: the file is created, in a directory that must exist.
            const std::string dir = directoryOf(p);
            struct stat ds {};
            if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
                throw Error("cannot write '" + path + "': directory '" + dir + "' does not exist");
            return p;
        }
        if (S_ISREG(st.st_mode)) return p;
        if (!S_ISLNK(st.st_mode)) {
            const std::string where = p == path ? "" : " (the target of the symlink, '" + p + "')";
            throw Error("refusing to write '" + path + "'" + where + ": it is " + kindOf(st.st_mode) +
                        ", not a regular file; give a file name");
        }
        if (hops >= 40) throw Error("cannot write '" + path + "': too many levels of symbolic links");
        std::string target(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 0) + 256, '\0');
        const ssize_t n = ::readlink(p.c_str(), target.data(), target.size());
        if (n < 0) throw Error("cannot write '" + path + "': cannot read the symlink '" + p + "': " + std::strerror(errno));
        target.resize(static_cast<std::size_t>(n));
        p = !target.empty() && target[0] == '/' ? target : (fs::path(directoryOf(p)) / target).string();
    }
}

AtomicOutputFile::AtomicOutputFile(const std::string& path) : path_(path), destination_(resolveOutputPath(path)) {
    const fs::path dest(destination_);
    const std::string dir = directoryOf(destination_);
    // Keep the mode of the file replaced; a new file gets 0666 less the umask from open(2).
    struct stat st {};
    const bool replacing = ::stat(destination_.c_str(), &st) == 0;
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
        std::string name = ".";  // appended piecewise: GCC 12's false -Wrestrict on "." + std::string
        name += dest.filename().string();
        name += ".tmp-";
        name += std::to_string(::getpid());
        name += '-';
        name += std::to_string(g_tempCounter.fetch_add(1));
        temp_ = (fs::path(dir) / name).string();
        // Registered before it exists: a signal handled on any thread between open() and
        // the registration would otherwise leave the file behind (removing a name that
        // is not there yet, or a stale one of a dead process with our pid, is harmless).
        slot_ = registerPending(temp_);
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ < 0) {
            const int err = errno;
            unregisterPending(slot_);
            slot_ = -1;
            if (err != EEXIST)
                throw Error("cannot write '" + path_ + "': cannot create a file in '" + dir + "': " + std::strerror(err));
        }
    }
    if (fd_ < 0) throw Error("cannot write '" + path_ + "': no free temporary file name in '" + dir + "'");
    if (replacing) ::fchmod(fd_, st.st_mode & 07777);
}

AtomicOutputFile::~AtomicOutputFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
    unregisterPending(slot_);
}

void AtomicOutputFile::write(const std::string& bytes) {
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

void AtomicOutputFile::commit() {
    if (committed_) return;
    if (::fsync(fd_) != 0) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
    // The destination may have become something else since the constructor looked.
    struct stat st {};
    if (::lstat(destination_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw Error("refusing to write '" + path_ + "': it is now " + kindOf(st.st_mode) + ", not a regular file");
    if (std::rename(temp_.c_str(), destination_.c_str()) != 0)
        throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
    committed_ = true;
}

void removePendingOutputFiles() noexcept {
    for (auto& slot : g_pending)
        if (slot.state.load() == 2) ::unlink(slot.path);
}

void checkOutputPath(const std::string& path) { AtomicOutputFile probe(path); }

void writeFileAtomically(const std::string& path, const std::string& contents) {
    AtomicOutputFile out(path);
    out.write(contents);
    out.commit();
}

}  // namespace draftscope
