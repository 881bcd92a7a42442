#pragma once
// When a run stops: the one place for the stop-token rule and RunSettings::ignoreEos. The
// Engine collects a target's stop ids once (targetStopTokenIds) and gives every run a
// StopTokens; the DFlash loop, the DDTree loop and greedy decoding only ask it
// (docs/ENGINE.md, "Stop tokens"). Torch-free, Qt-free.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace draftscope {

/// The stop ids of the target in `targetDir`, in this order: `configEosIds` (config.json's
/// eos_token_id, as loadTargetConfig read it, kept as given), then the eos_token_id (an
/// integer or a list) of `targetDir`/generation_config.json when that file exists, then
/// `tokenizerEosId` (tokenizer_config.json's eos token); ids already listed are not added
/// again. Throws Error naming generation_config.json if it is unreadable or not valid JSON.
std::vector<std::int64_t> targetStopTokenIds(const std::string& targetDir, const std::vector<std::int64_t>& configEosIds,
                                             std::optional<std::int64_t> tokenizerEosId);

/// The stop rule of one run: generation ends at the first generated token that is a stop id,
/// and that token is kept. With RunSettings::ignoreEos nothing stops a run (the goldens'
/// setting); it then runs to max new tokens.
class StopTokens {
public:
    /// No stop ids.
    StopTokens() = default;
    /// `targetStopIds` (Engine::stopTokenIds()), or none when `ignoreEos`.
    StopTokens(const std::vector<std::int64_t>& targetStopIds, bool ignoreEos);

    /// False when no token can stop the run (ignoreEos, or a target without eos ids).
    bool any() const { return !ids_.empty(); }
    /// True if `token` ends the run.
    bool isStop(std::int64_t token) const;
    /// Index of the first stop token in `ids` at or after index `from`; nullopt if none.
    std::optional<std::size_t> firstStop(const std::vector<std::int64_t>& ids, std::size_t from) const;
    /// Cuts `ids` right after the first stop token at or after index `from` (the stop token
    /// is kept). Returns true if one was found; `ids` is unchanged otherwise.
    bool cutAfterFirstStop(std::vector<std::int64_t>& ids, std::size_t from) const;
    /// The stop ids in use (empty with ignoreEos).
    const std::vector<std::int64_t>& ids() const { return ids_; }

private:
    std::vector<std::int64_t> ids_;
};

}  // namespace draftscope
