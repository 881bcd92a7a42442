#include "draftscope/results_json.h"

namespace draftscope {

nlohmann::json toJson(const VerifyStep& s) {
    return {
        {"start", s.start},
        {"anchor", s.anchor},
        {"drafted", s.drafted},
        {"target_tokens", s.targetTokens},
        {"accepted_count", s.acceptedCount},
        {"acceptance_length", s.acceptanceLength()},
        {"bonus_token", s.bonusToken},
        {"draft_prob", s.draftProb},
        {"target_prob_of_draft", s.targetProbOfDraft},
        {"target_prob_of_target", s.targetProbOfTarget},
        {"target_rank_in_draft_topk", s.targetRankInDraft},
        {"draft_topk_ids", s.draftTopIds},
        {"draft_topk_probs", s.draftTopProbs},
    };
}

nlohmann::json toJson(const RunResult& r) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : r.steps) steps.push_back(toJson(s));
    return {
        {"prompt_ids", r.promptIds},
        {"output_ids", r.outputIds},
        {"acceptance_lengths", r.acceptanceLengths},
        {"tau", r.tau},
        {"tau_definition", "mean over verify steps of accepted drafted tokens + 1 (bonus token included)"},
        {"block_size", r.blockSize},
        {"per_position_acceptance", r.perPositionAcceptance},
        {"per_position_acceptance_definition",
         "index j = 0..B-1: fraction of verify steps whose accepted prefix reaches block position j "
         "(accepted_count >= j); j = 0 is the anchor"},
        {"acceptance_histogram", r.acceptanceHistogram},
        {"acceptance_histogram_definition", "index n: number of steps with acceptance length n (bonus included)"},
        {"stopped_at_eos", r.stoppedAtEos},
        {"steps", steps},
        {"settings",
         {{"max_new_tokens", r.settings.maxNewTokens},
          {"ignore_eos", r.settings.ignoreEos},
          {"temperature", r.settings.temperature},
          {"seed", r.settings.seed},
          {"top_k", r.settings.topK},
          {"drafter", r.settings.drafter},
          {"device", r.device},
          {"dtype", r.dtype}}},
        {"timing_ms",
         {{"prefill", r.timing.prefillMs}, {"decode", r.timing.decodeMs}, {"total", r.timing.totalMs}}},
        {"peak_device_bytes", r.timing.peakDeviceBytes},
    };
}

nlohmann::json toJson(const TreeRunResult& r) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : r.steps)
        steps.push_back({{"start", s.start},
                         {"tokens", s.tokens},
                         {"depths", s.depths},
                         {"parents", s.parents},
                         {"drafter_probs", s.drafterProbs},
                         {"target_choice", s.targetChoice},
                         {"accepted_path", s.acceptedPath},
                         {"acceptance_length", s.acceptanceLength()},
                         {"bonus_token", s.bonusToken}});
    return {{"budget", r.budget},
            {"prompt_ids", r.promptIds},
            {"output_ids", r.outputIds},
            {"acceptance_lengths", r.acceptanceLengths},
            {"tau", r.tau},
            {"tau_definition", "mean over steps of the accepted path length, root (anchor) included"},
            {"stopped_at_eos", r.stoppedAtEos},
            {"steps", steps},
            {"timing_ms", {{"prefill", r.timing.prefillMs}, {"decode", r.timing.decodeMs}, {"total", r.timing.totalMs}}}};
}

nlohmann::json toJson(const ModelSummary& m) {
    nlohmann::json j = {
        {"directory", m.directory},
        {"architecture", m.architecture},
        {"num_layers", m.numLayers},
        {"hidden_size", m.hiddenSize},
        {"vocab_size", m.vocabSize},
        {"num_heads", m.numHeads},
        {"num_kv_heads", m.numKvHeads},
        {"head_dim", m.headDim},
        {"parameters", m.parameters},
        {"layer_types", m.layerTypes},
        {"unexpected_tensors", m.unexpectedTensors},
        {"ignored_tensors", m.ignoredTensors},
        {"warnings", m.warnings},
    };
    if (!m.source.empty()) j["source"] = m.source;
    if (m.blockSize) {
        j["block_size"] = m.blockSize;
        j["mask_token_id"] = m.maskTokenId;
        j["target_layer_ids"] = m.targetLayerIds;
        j["target_layer_ids_derived"] = m.targetLayerIdsDerived;
    }
    return j;
}

nlohmann::json toJson(const Finding& f) {
    nlohmann::json evidence = nlohmann::json::object();
    for (const auto& [name, value] : f.evidence) evidence[name] = value;
    return {{"id", f.id}, {"severity", severityName(f.severity)}, {"message", f.message}, {"evidence", evidence}};
}

nlohmann::json toJson(const DiagnosisReport& r) {
    nlohmann::json drafters = nlohmann::json::array();
    for (const auto& d : r.drafters) {
        nlohmann::json findings = nlohmann::json::array();
        for (const auto& f : d.findings) findings.push_back(toJson(f));
        nlohmann::json j = {{"rank", d.rank}, {"path", d.path}, {"loaded", d.loaded}, {"findings", findings}};
        if (d.loaded) {
            j["model"] = toJson(d.summary);
            j["tau"] = d.tau;
            j["prompt_taus"] = d.promptTaus;
            j["probe"] = {{"tau", d.probeTau},
                          {"tau_with_anchor_feature", d.probeTauAnchorFeature},
                          {"same_position_match", d.samePositionMatch},
                          {"next_position_match", d.nextPositionMatch},
                          {"draft_repetition", d.draftRepetition},
                          {"reference_repetition", d.referenceRepetition}};
        }
        drafters.push_back(j);
    }
    return {{"target", toJson(r.target)},
            {"prompts", r.promptIds},
            {"settings", {{"max_new_tokens", r.settings.maxNewTokens}, {"ignore_eos", true}}},
            {"drafters", drafters}};
}

}  // namespace draftscope
