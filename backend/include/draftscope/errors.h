#pragma once
// Error type thrown by every backend entry point on bad input or failed work.

#include <stdexcept>
#include <string>

namespace draftscope {

/// Thrown for bad input (missing file, corrupt checkpoint, shape mismatch, bad prompt ...)
/// and for cancelled work. what() is a complete, user-facing sentence that names the
/// place (file, tensor, config field) and, where it applies, the expected and found values.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// Thrown when a run is cancelled through its cancel flag; not a failure of the input.
class Cancelled : public Error {
public:
    Cancelled() : Error("cancelled by the user") {}
};

}  // namespace draftscope
