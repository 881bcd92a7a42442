#pragma once
// JSON form of the engine's results (used by `draftscope-cli --json` and result files).
// Field names are stable: output_ids, acceptance_lengths, tau, steps[...].

#include "draftscope/diagnosis.h"
#include "draftscope/engine.h"
#include "draftscope/run_types.h"

#include <nlohmann/json.hpp>

namespace draftscope {

/// One verify step: start, anchor, drafted, target_tokens, accepted_count, bonus_token,
/// acceptance_length, draft_prob, target_prob_of_draft, target_prob_of_target,
/// target_rank_in_draft_topk, draft_topk_ids, draft_topk_probs.
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

}  // namespace draftscope
