#pragma once
// SHA-256 (FIPS 180-4) of byte strings and files, for model and prompt-set identities in
// results files. Torch-free.

#include <string>
#include <string_view>

namespace draftscope {

/// Lower-case hex SHA-256 of `bytes` (64 characters).
std::string sha256Hex(std::string_view bytes);
/// Lower-case hex SHA-256 of the file at `path`. Throws Error naming the path if unreadable.
std::string sha256File(const std::string& path);

}  // namespace draftscope
