#pragma once
// Small file helpers every part of draftscope uses to read its inputs (configs, tokenizers,
// prompt files, goldens) and to write its outputs (results, summaries, exports). Torch-free,
// Qt-free.
//
// Output files (docs/RELIABILITY.md "Output files"): every output is written to a temporary
// file beside its destination and renamed over it, so readers never see a partial file and
// an error or Ctrl-C leaves none behind. A symlink at the output path is written through
// (its final target is replaced, the link stays; a dangling link creates its target); a
// directory, FIFO, device or socket there is refused, never replaced.

#include <string>

namespace draftscope {

/// Throws Error naming `what` if the JSON text nests objects/arrays deeper than `maxDepth`.
/// Called before parsing any untrusted JSON: a deeply nested file would otherwise exhaust
/// the stack of the recursive JSON library. Brackets inside strings are ignored.
void checkJsonDepth(const char* begin, const char* end, const std::string& what, int maxDepth = 256);

/// Reads a small binary or text file (at most 256 MiB: configs, tokenizers, prompt files)
/// fully. Throws Error naming the path if it is missing, a directory, not a regular file (a
/// FIFO or device would block), too large or unreadable.
std::string readFileToString(const std::string& path);

/// The file an output path designates under the output-file policy: `path` itself, or, when
/// it is a symlink (or a chain of them), the file the last link points to, which may not
/// exist yet. Throws Error naming `path` if that is a directory, FIFO, device or socket, if
/// its directory does not exist, or for a symlink loop.
std::string resolveOutputPath(const std::string& path);

/// Checks that `path` can be written, without changing anything there: resolveOutputPath's
/// checks, then a temporary file created and removed in the destination's directory. Called
/// before long work so that a bad output path fails first. Throws Error naming `path` and
/// the reason (e.g. "cannot write 'out/r.json': cannot create a file in 'out': Permission
/// denied").
void checkOutputPath(const std::string& path);

/// Writes `contents` to `path` through an AtomicOutputFile: readers never see a partial file
/// and nothing partial remains on failure. Throws Error naming `path` on failure.
void writeFileAtomically(const std::string& path, const std::string& contents);

/// One output file being written: a temporary file created (O_EXCL, mode 0666 less the
/// umask, or the mode of the file it replaces) in the destination's directory, filled by
/// write() or by a writer that opens tempPath() by name (Qt's image and PDF writers), then
/// renamed over the destination by commit() after an fsync. Until commit() the temporary
/// file is removed by the destructor and, on SIGINT/SIGTERM, by removePendingOutputFiles().
class AtomicOutputFile {
public:
    /// Resolves `path` (resolveOutputPath) and creates the temporary file. Throws Error
    /// naming `path` if either fails.
    explicit AtomicOutputFile(const std::string& path);
    ~AtomicOutputFile();
    AtomicOutputFile(const AtomicOutputFile&) = delete;
    AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

    /// The path given to the constructor.
    const std::string& path() const { return path_; }
    /// The file commit() replaces: path(), or a symlink's final target.
    const std::string& destination() const { return destination_; }
    /// The temporary file: "<destination's dir>/.<name>.tmp-<pid>-<n>".
    const std::string& tempPath() const { return temp_; }
    /// Appends `bytes` to the temporary file. Throws Error naming path() (e.g. disk full).
    void write(const std::string& bytes);
    /// Flushes the temporary file to disk and renames it over destination(). Throws Error
    /// naming path() on failure (the temporary file is then removed).
    void commit();

private:
    std::string path_, destination_, temp_;
    int fd_ = -1;
    int slot_ = -1;  // index in the table removePendingOutputFiles() reads, -1 if none
    bool committed_ = false;
};

/// Removes the temporary file of every AtomicOutputFile not yet committed or destroyed.
/// Async-signal-safe: the CLI's and the GUI's SIGINT/SIGTERM handlers call it before the
/// process ends, so an interrupted write leaves no partial file.
void removePendingOutputFiles() noexcept;

}  // namespace draftscope
