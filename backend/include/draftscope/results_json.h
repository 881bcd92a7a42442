#pragma once
// JSON form of the engine's results (used by `draftscope-cli --json` and results files),
// and the inverse for reading results files back. Field names are stable: output_ids,
// acceptance_lengths, tau, steps[...].

#include "draftscope/diagnosis.h"
#include "draftscope/engine.h"
#include "draftscope/results_file.h"
#include "draftscope/run_types.h"

#include <nlohmann/json.hpp>

namespace draftscope {

/// One verify step: start, anchor, drafted, target_tokens, accepted_count, bonus_token,
/// acceptance_length, draft_prob, target_prob_of_draft, target_prob_of_target,
/// target_rank_in_draft_topk, draft_topk_ids, draft_topk_probs, rejection_p, rejection_q,
/// rejection_tested, rejection_accept_prob (empty unless rejection sampling ran).
nlohmann::json toJson(const VerifyStep& step);
/// A run: prompt_ids, output_ids, acceptance_lengths, tau, block_size,
/// per_position_acceptance (with its definition), acceptance_histogram, steps, settings, timing.
nlohmann::json toJson(const RunResult& run);
/// A DDTree run: budget, output_ids, acceptance_lengths, tau, steps (tokens, depths,
/// parents, drafter_probs, target_choice, accepted_path, bonus_token).
nlohmann::json toJson(const TreeRunResult& run);
/// A loaded model's summary.
nlohmann::json toJson(const ModelSummary& model);
/// One diagnosis finding: id, severity ("info" | "warning" | "error"), message, evidence {name: number}.
nlohmann::json toJson(const Finding& finding);
/// `draftscope-cli diagnose --json`: target, prompts, settings, drafters[] in rank order
/// with rank, path, loaded, model, tau, prompt_taus, probe {...}, findings[].
nlohmann::json toJson(const DiagnosisReport& report);
/// Hidden-state statistics: ids, series[] (name, layer_id, layer_type, rms, mean, std,
/// max_abs, histogram_edges, histogram_counts, non_finite_count, outlier_positions).
nlohmann::json toJson(const HiddenStateStats& stats);
/// A prompt: kind ("text" or "ids"), text, ids, chat, thinking.
nlohmann::json toJson(const PromptSpec& prompt);
/// An evaluation's settings as results files hold them (docs/RESULTS_FORMAT.md): max_new_tokens,
/// ignore_eos, the sampling keys (writeSamplingJson), ddtree_budgets, turns, chat_wrap_raw,
/// thinking, limit, histogram_bins, device, dtype.
nlohmann::json toJson(const EvalSettings& settings);

// Inverses of the toJson functions above: read what toJson wrote. `where` names the value
// in errors (e.g. "prompts[3].drafters[0].run"). Throw Error naming `where` and the field
// for a missing field or a wrong type ("... .steps[2].drafted: expected an array of
// integers, found string"). A JSON null where a float is expected reads as NaN (JSON has no
// NaN). Derived fields (acceptance_length, definitions) are ignored.
/// The loop and sampling settings of `s` as keys of the object `j`: loop ("current" |
/// "2026-04"), temperature, top_p, top_k (sampling filter, 0 = off), seed, record_top_k.
void writeSamplingJson(nlohmann::json& j, const RunSettings& s);
/// Reads what writeSamplingJson wrote into `s`. An object without "loop" was written before
/// the loop revisions existed: it reads as the April loop without top-p/top-k filters, its
/// "top_k" being the recorded draft top-k (docs/RESULTS_FORMAT.md).
void readSamplingJson(const nlohmann::json& j, RunSettings& s, const std::string& where);
RunResult runResultFromJson(const nlohmann::json& j, const std::string& where);
TreeRunResult treeRunResultFromJson(const nlohmann::json& j, const std::string& where);
ModelSummary modelSummaryFromJson(const nlohmann::json& j, const std::string& where);
HiddenStateStats hiddenStateStatsFromJson(const nlohmann::json& j, const std::string& where);
PromptSpec promptSpecFromJson(const nlohmann::json& j, const std::string& where);
/// An evaluation's settings as toJson(EvalSettings) wrote them (results files, run indexes).
EvalSettings evalSettingsFromJson(const nlohmann::json& j, const std::string& where);

}  // namespace draftscope
