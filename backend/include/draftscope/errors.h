#pragma once
// Error type thrown by every backend entry point on bad input or failed work.

#include <stdexcept>
#include <string>
#include <string_view>

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

/// `bytes` (text read from a file, a library's message quoting it) made safe to show in a
/// message: valid UTF-8 and nothing that moves the cursor or rings. Printable ASCII and valid
/// UTF-8 sequences of printable characters are kept; tab, newline and carriage return become
/// \t, \n, \r; every other byte (C0/C1 controls, DEL, invisible format characters such as
/// bidi overrides and zero-width spaces, bytes of invalid UTF-8) becomes \xNN (lower-case
/// hex). Idempotent: escaping an escaped text changes nothing. Every message that quotes file
/// content (e.g. nlohmann::json's "last read: '...'") goes through it.
std::string escapeNonPrintable(std::string_view bytes);

/// escapeNonPrintable for a whole message about to be shown (a terminal, a log line): the
/// same, except that newlines stay newlines, so a message of several lines (a list of
/// missing tensors) reads as lines. Safe because quoted file content was escaped when the
/// message was made (newlines included).
std::string escapeForDisplay(std::string_view message);

}  // namespace draftscope
