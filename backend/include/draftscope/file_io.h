#pragma once
// Small file helpers every part of draftscope uses to read its inputs (configs, tokenizers,
// prompt files, goldens) and to write its outputs (results, summaries, exports). Torch-free,
// Qt-free.

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

/// Writes `contents` to `path` via a temporary file in the same directory and rename(2),
/// so readers never see a partial file. Throws Error naming `path` on failure.
void writeFileAtomically(const std::string& path, const std::string& contents);

}  // namespace draftscope
