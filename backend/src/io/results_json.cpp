#include "draftscope/results_json.h"

#include "draftscope/errors.h"

#include <limits>

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
        {"rejection_p", s.rejectionP},
        {"rejection_q", s.rejectionQ},
        {"rejection_tested", s.rejectionTested},
        {"rejection_accept_prob", s.rejectionAcceptProb},
        {"drafter_argmax", s.drafterArgmax},
        {"selector_prob", s.selectorProb},
        {"confidence", s.confidence},
    };
}

void writeSamplingJson(nlohmann::json& j, const RunSettings& s) {
    j["loop"] = loopRevisionName(s.loop);
    j["temperature"] = s.temperature;
    j["top_p"] = s.topP;
    j["top_k"] = s.topK;
    j["seed"] = s.seed;
    j["record_top_k"] = s.recordTopK;
}

namespace {
nlohmann::json peaksJson(const std::vector<DevicePeak>& peaks) {
    auto a = nlohmann::json::array();
    for (const auto& p : peaks) a.push_back({{"device", p.device}, {"bytes", p.bytes}});
    return a;
}
}  // namespace

nlohmann::json toJson(const RunResult& r) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : r.steps) steps.push_back(toJson(s));
    nlohmann::json settingsJson = {{"max_new_tokens", r.settings.maxNewTokens},
                                   {"ignore_eos", r.settings.ignoreEos},
                                   {"drafter", r.settings.drafter},
                                   {"device", r.device},
                                   {"dtype", r.dtype}};
    writeSamplingJson(settingsJson, r.settings);
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
        {"settings", settingsJson},
        {"timing_ms",
         {{"prefill", r.timing.prefillMs}, {"decode", r.timing.decodeMs}, {"total", r.timing.totalMs}}},
        {"peak_device_bytes", r.timing.peakDeviceBytes},
        {"peak_device_bytes_per_device", peaksJson(r.timing.peakPerDevice)},
        {"placement", r.placement},
        {"cuda_graphs", r.timing.cudaGraphs},
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
    if (!m.devices.empty()) {
        j["devices"] = m.devices;
        j["placement"] = m.placement;
    }
    if (m.blockSize) {
        j["family"] = m.family;
        j["family_detail"] = m.familyDetail;
        j["block_size"] = m.blockSize;
        j["drafts_from_anchor"] = m.draftsFromAnchor;
        j["mask_token_id"] = m.maskTokenId;
        j["target_layer_ids"] = m.targetLayerIds;
        j["target_layer_ids_derived"] = m.targetLayerIdsDerived;
        auto layout = nlohmann::json::array();
        for (const auto& l : m.layout)
            layout.push_back({{"causal", l.causal}, {"window", l.window ? nlohmann::json(*l.window) : nlohmann::json()}});
        j["attention_layout"] = layout;
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
            nlohmann::json conventions = nlohmann::json::array();
            for (const auto& c : d.conventionProbes)
                conventions.push_back({{"family", c.family},
                                       {"alternative", c.alternative},
                                       {"declared_tau", c.declaredTau},
                                       {"tau", c.tau},
                                       {"difference", c.difference.mean},
                                       {"difference_lower", c.difference.lower},
                                       {"difference_upper", c.difference.upper},
                                       {"anchors", c.difference.pairs},
                                       {"slot_match", c.slotMatch},
                                       {"expected_declared_tau", c.expectedDeclaredTau},
                                       {"expected_tau", c.expectedTau},
                                       {"expected_difference", c.expectedDifference.mean},
                                       {"expected_difference_lower", c.expectedDifference.lower},
                                       {"expected_difference_upper", c.expectedDifference.upper},
                                       {"finding", c.finding}});
            j["convention_probes"] = conventions;
        }
        nlohmann::json costs = nlohmann::json::array();
        for (const auto& c : d.costs)
            costs.push_back({{"family", c.family}, {"probe_steps", c.probeSteps}, {"seconds", c.seconds}});
        j["costs"] = costs;
        drafters.push_back(j);
    }
    nlohmann::json settings = {{"max_new_tokens", r.settings.maxNewTokens}, {"ignore_eos", true}};
    writeSamplingJson(settings, r.settings.sampling);
    settings["probes"] = r.settings.probes;
    settings["convention_margin"] = kConventionMargin;
    settings["convention_confidence"] = kConventionConfidence;
    settings["bootstrap_resamples"] = kConventionResamples;
    return {{"target", toJson(r.target)},
            {"prompts", r.promptIds},
            {"settings", settings},
            {"drafters", drafters}};
}

}  // namespace draftscope

// ---- JSON of the remaining types and the inverses ----

namespace draftscope {

nlohmann::json toJson(const HiddenStateStats& h) {
    nlohmann::json series = nlohmann::json::array();
    for (const auto& s : h.series) {
        series.push_back({{"name", s.name},
                          {"layer_id", s.layerId},
                          {"layer_type", s.layerType},
                          {"rms", s.rms},
                          {"mean", s.mean},
                          {"std", s.std},
                          {"max_abs", s.maxAbs},
                          {"histogram_edges", s.histogramEdges},
                          {"histogram_counts", s.histogramCounts},
                          {"non_finite_count", s.nonFiniteCount},
                          {"outlier_positions", s.outlierPositions}});
        if (s.numExperts > 0) {
            series.back()["num_experts"] = s.numExperts;
            series.back()["expert_choices"] = s.expertChoices;
        }
    }
    return {{"ids", h.ids}, {"prompt_length", h.promptLength}, {"series", series}};
}

nlohmann::json toJson(const EvalSettings& s) {
    nlohmann::json j = {{"max_new_tokens", s.run.maxNewTokens},
            {"ignore_eos", s.run.ignoreEos},
            {"ddtree_budgets", s.ddtreeBudgets},
            {"turns", s.allTurns ? "all" : "first"},
            {"chat_wrap_raw", s.chatWrapRaw},
            {"thinking", s.thinking},
            {"limit", s.limit},
            {"histogram_bins", s.histogramBins},
            {"device", s.device},
            {"dtype", s.dtype}};
    writeSamplingJson(j, s.run);
    return j;
}

nlohmann::json toJson(const PromptSpec& p) {
    return {{"kind", p.kind == PromptSpec::Kind::Ids ? "ids" : "text"},
            {"text", p.text},
            {"ids", p.ids},
            {"chat", p.chat},
            {"thinking", p.thinking}};
}

namespace {

using nlohmann::json;

/// Typed field access with errors that name the path.
struct Reader {
    const json& j;
    std::string where;

    Reader(const json& value, std::string path) : j(value), where(std::move(path)) {
        if (!j.is_object()) throw Error(where + ": expected an object, found " + j.type_name());
    }
    [[noreturn]] void bad(const std::string& key, const std::string& expected, const json& v) const {
        throw Error(where + "." + key + ": expected " + expected + ", found " + v.type_name());
    }
    const json& at(const std::string& key) const {
        const auto it = j.find(key);
        if (it == j.end()) throw Error(where + ": missing field '" + key + "'");
        return *it;
    }
    bool has(const std::string& key) const { return j.contains(key); }
    static bool isInt(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }
    static double toReal(const json& v) {
        return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
    }
    static bool isReal(const json& v) { return v.is_number() || v.is_null(); }

    std::int64_t integer(const std::string& key) const {
        const auto& v = at(key);
        if (!isInt(v)) bad(key, "an integer", v);
        return v.get<std::int64_t>();
    }
    std::uint64_t unsignedInteger(const std::string& key) const {
        const auto& v = at(key);
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
            bad(key, "a non-negative integer", v);
        return v.get<std::uint64_t>();
    }
    double real(const std::string& key) const {
        const auto& v = at(key);
        if (!isReal(v)) bad(key, "a number", v);
        return toReal(v);
    }
    bool boolean(const std::string& key) const {
        const auto& v = at(key);
        if (!v.is_boolean()) bad(key, "true or false", v);
        return v.get<bool>();
    }
    std::string string(const std::string& key) const {
        const auto& v = at(key);
        if (!v.is_string()) bad(key, "a string", v);
        return v.get<std::string>();
    }
    const json& array(const std::string& key) const {
        const auto& v = at(key);
        if (!v.is_array()) bad(key, "an array", v);
        return v;
    }
    template <class T>
    static std::vector<T> intsOf(const json& a, const std::string& path) {
        if (!a.is_array()) throw Error(path + ": expected an array of integers, found " + a.type_name());
        std::vector<T> out;
        out.reserve(a.size());
        for (const auto& v : a) {
            if (!isInt(v)) throw Error(path + ": expected an array of integers, found an element of type " + v.type_name());
            out.push_back(static_cast<T>(v.get<std::int64_t>()));
        }
        return out;
    }
    template <class T>
    static std::vector<T> realsOf(const json& a, const std::string& path) {
        if (!a.is_array()) throw Error(path + ": expected an array of numbers, found " + a.type_name());
        std::vector<T> out;
        out.reserve(a.size());
        for (const auto& v : a) {
            if (!isReal(v)) throw Error(path + ": expected an array of numbers, found an element of type " + v.type_name());
            out.push_back(static_cast<T>(toReal(v)));
        }
        return out;
    }
    template <class T>
    std::vector<T> ints(const std::string& key) const { return intsOf<T>(at(key), where + "." + key); }
    template <class T>
    std::vector<T> reals(const std::string& key) const { return realsOf<T>(at(key), where + "." + key); }
    std::vector<std::string> strings(const std::string& key) const {
        std::vector<std::string> out;
        for (const auto& v : array(key)) {
            if (!v.is_string()) bad(key, "an array of strings with an element", v);
            out.push_back(v.get<std::string>());
        }
        return out;
    }
    template <class T>
    std::vector<std::vector<T>> intRows(const std::string& key) const {
        std::vector<std::vector<T>> out;
        const auto& a = array(key);
        for (std::size_t i = 0; i < a.size(); ++i) out.push_back(intsOf<T>(a[i], item(key, i)));
        return out;
    }
    template <class T>
    std::vector<std::vector<T>> realRows(const std::string& key) const {
        std::vector<std::vector<T>> out;
        const auto& a = array(key);
        for (std::size_t i = 0; i < a.size(); ++i) out.push_back(realsOf<T>(a[i], item(key, i)));
        return out;
    }
    Reader object(const std::string& key) const { return Reader(at(key), where + "." + key); }
    std::string item(const std::string& key, std::size_t i) const { return where + "." + key + "[" + std::to_string(i) + "]"; }
};

RunTiming timingFromJson(const Reader& r) {
    RunTiming t;
    const auto tm = r.object("timing_ms");
    t.prefillMs = tm.real("prefill");
    t.decodeMs = tm.real("decode");
    t.totalMs = tm.real("total");
    if (r.has("peak_device_bytes")) t.peakDeviceBytes = r.integer("peak_device_bytes");
    if (r.has("cuda_graphs")) t.cudaGraphs = r.string("cuda_graphs");  // absent before CUDA graphs
    if (r.has("peak_device_bytes_per_device")) {  // absent before placement across devices
        const auto& a = r.array("peak_device_bytes_per_device");
        for (std::size_t i = 0; i < a.size(); ++i) {
            const Reader p(a[i], r.item("peak_device_bytes_per_device", i));
            t.peakPerDevice.push_back({p.string("device"), p.integer("bytes")});
        }
    }
    return t;
}

}  // namespace

void readSamplingJson(const nlohmann::json& j, RunSettings& s, const std::string& where) {
    const Reader r(j, where);
    s.temperature = r.real("temperature");
    s.seed = r.unsignedInteger("seed");
    if (!r.has("loop")) {  // written before the loop revision: the April loop, no filters
        s.loop = LoopRevision::April2026;
        s.topP = 1.0;
        s.topK = 0;
        s.recordTopK = static_cast<int>(r.integer("top_k"));
        return;
    }
    try {
        s.loop = parseLoopRevision(r.string("loop"));
    } catch (const Error& e) {
        throw Error(where + "." + e.what());
    }
    s.topP = r.real("top_p");
    s.topK = static_cast<int>(r.integer("top_k"));
    s.recordTopK = static_cast<int>(r.integer("record_top_k"));
}

RunResult runResultFromJson(const json& j, const std::string& where) {
    const Reader r(j, where);
    RunResult run;
    run.promptIds = r.ints<std::int64_t>("prompt_ids");
    run.outputIds = r.ints<std::int64_t>("output_ids");
    run.acceptanceLengths = r.ints<int>("acceptance_lengths");
    run.tau = r.real("tau");
    run.blockSize = r.integer("block_size");
    run.perPositionAcceptance = r.reals<double>("per_position_acceptance");
    run.acceptanceHistogram = r.ints<std::int64_t>("acceptance_histogram");
    run.stoppedAtEos = r.boolean("stopped_at_eos");
    const auto& steps = r.array("steps");
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const Reader s(steps[i], r.item("steps", i));
        VerifyStep v;
        v.start = s.integer("start");
        v.anchor = s.integer("anchor");
        v.drafted = s.ints<std::int64_t>("drafted");
        v.targetTokens = s.ints<std::int64_t>("target_tokens");
        v.acceptedCount = static_cast<int>(s.integer("accepted_count"));
        v.bonusToken = s.integer("bonus_token");
        v.draftProb = s.reals<float>("draft_prob");
        v.targetProbOfDraft = s.reals<float>("target_prob_of_draft");
        v.targetProbOfTarget = s.reals<float>("target_prob_of_target");
        v.targetRankInDraft = s.ints<int>("target_rank_in_draft_topk");
        v.draftTopIds = s.intRows<std::int64_t>("draft_topk_ids");
        v.draftTopProbs = s.realRows<float>("draft_topk_probs");
        if (s.has("rejection_p")) {  // absent in files written before the current loop
            v.rejectionP = s.reals<float>("rejection_p");
            v.rejectionQ = s.reals<float>("rejection_q");
            v.rejectionTested = s.ints<int>("rejection_tested");
            v.rejectionAcceptProb = s.reals<float>("rejection_accept_prob");
        }
        if (s.has("drafter_argmax")) {  // absent in files written before DFlash2 drafters
            v.drafterArgmax = s.ints<std::int64_t>("drafter_argmax");
            v.selectorProb = s.reals<float>("selector_prob");
        }
        if (s.has("confidence")) v.confidence = s.reals<float>("confidence");  // absent before DSpark
        run.steps.push_back(std::move(v));
    }
    const auto st = r.object("settings");
    run.settings.maxNewTokens = st.integer("max_new_tokens");
    run.settings.ignoreEos = st.boolean("ignore_eos");
    readSamplingJson(j.at("settings"), run.settings, where + ".settings");
    run.settings.drafter = static_cast<int>(st.integer("drafter"));
    run.device = st.string("device");
    run.dtype = st.string("dtype");
    run.timing = timingFromJson(r);
    if (r.has("placement")) run.placement = r.string("placement");
    return run;
}

TreeRunResult treeRunResultFromJson(const json& j, const std::string& where) {
    const Reader r(j, where);
    TreeRunResult t;
    t.budget = static_cast<int>(r.integer("budget"));
    t.promptIds = r.ints<std::int64_t>("prompt_ids");
    t.outputIds = r.ints<std::int64_t>("output_ids");
    t.acceptanceLengths = r.ints<int>("acceptance_lengths");
    t.tau = r.real("tau");
    t.stoppedAtEos = r.boolean("stopped_at_eos");
    const auto& steps = r.array("steps");
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const Reader s(steps[i], r.item("steps", i));
        TreeStep ts;
        ts.start = s.integer("start");
        ts.tokens = s.ints<std::int64_t>("tokens");
        ts.depths = s.ints<int>("depths");
        ts.parents = s.ints<int>("parents");
        ts.drafterProbs = s.reals<float>("drafter_probs");
        ts.targetChoice = s.ints<std::int64_t>("target_choice");
        ts.acceptedPath = s.ints<int>("accepted_path");
        ts.bonusToken = s.integer("bonus_token");
        t.steps.push_back(std::move(ts));
    }
    t.timing = timingFromJson(r);
    return t;
}

ModelSummary modelSummaryFromJson(const json& j, const std::string& where) {
    const Reader r(j, where);
    ModelSummary m;
    m.directory = r.string("directory");
    m.architecture = r.string("architecture");
    m.numLayers = r.integer("num_layers");
    m.hiddenSize = r.integer("hidden_size");
    m.vocabSize = r.integer("vocab_size");
    m.numHeads = r.integer("num_heads");
    m.numKvHeads = r.integer("num_kv_heads");
    m.headDim = r.integer("head_dim");
    m.parameters = r.integer("parameters");
    m.layerTypes = r.strings("layer_types");
    m.unexpectedTensors = r.strings("unexpected_tensors");
    m.ignoredTensors = r.strings("ignored_tensors");
    m.warnings = r.strings("warnings");
    if (r.has("devices")) {  // targets loaded since placement across devices
        m.devices = r.strings("devices");
        m.placement = r.string("placement");
    }
    if (r.has("block_size")) {
        // Files written before drafter families hold DFlash drafters.
        m.family = r.has("family") ? r.string("family") : "DFlash";
        m.familyDetail = r.has("family_detail") ? r.string("family_detail") : "";
        m.blockSize = r.integer("block_size");
        m.draftsFromAnchor = r.has("drafts_from_anchor") && r.boolean("drafts_from_anchor");  // absent before DSpark
        m.maskTokenId = r.integer("mask_token_id");
        m.targetLayerIds = r.ints<std::int64_t>("target_layer_ids");
        m.targetLayerIdsDerived = r.boolean("target_layer_ids_derived");
        if (r.has("attention_layout")) {  // absent in files written before drafter layouts: left empty
            const auto& layout = r.array("attention_layout");
            for (std::size_t i = 0; i < layout.size(); ++i) {
                const Reader l(layout[i], r.item("attention_layout", i));
                LayerAttention a;
                a.causal = l.boolean("causal");
                if (!l.at("window").is_null()) a.window = l.integer("window");
                m.layout.push_back(a);
            }
        }
    }
    return m;
}

HiddenStateStats hiddenStateStatsFromJson(const json& j, const std::string& where) {
    const Reader r(j, where);
    HiddenStateStats h;
    h.ids = r.ints<std::int64_t>("ids");
    // Files written before generated positions were covered hold prompt positions only.
    h.promptLength = r.has("prompt_length") ? r.integer("prompt_length") : std::int64_t(h.ids.size());
    if (h.promptLength < 0 || h.promptLength > std::int64_t(h.ids.size()))
        throw Error(where + ".prompt_length: expected 0.." + std::to_string(h.ids.size()) + ", found " +
                    std::to_string(h.promptLength));
    const auto& series = r.array("series");
    for (std::size_t i = 0; i < series.size(); ++i) {
        const Reader s(series[i], r.item("series", i));
        HiddenSeriesStats x;
        x.name = s.string("name");
        x.layerId = s.integer("layer_id");
        x.layerType = s.string("layer_type");
        x.rms = s.reals<float>("rms");
        x.mean = s.reals<float>("mean");
        x.std = s.reals<float>("std");
        x.maxAbs = s.reals<float>("max_abs");
        x.histogramEdges = s.reals<double>("histogram_edges");
        x.histogramCounts = s.ints<std::int64_t>("histogram_counts");
        x.nonFiniteCount = s.integer("non_finite_count");
        x.outlierPositions = s.ints<std::int64_t>("outlier_positions");
        if (s.has("num_experts")) {  // MoE targets only
            x.numExperts = s.integer("num_experts");
            x.expertChoices = s.ints<std::int64_t>("expert_choices");
            const auto T = static_cast<std::int64_t>(h.ids.size());
            const auto n = static_cast<std::int64_t>(x.expertChoices.size());
            if (x.numExperts < 1 || x.numExperts > (std::int64_t(1) << 20))
                throw Error(s.where + ".num_experts: expected 1..1048576, found " + std::to_string(x.numExperts));
            if (T == 0 || n % T != 0 || n == 0)
                throw Error(s.where + ".expert_choices: expected a multiple of the " + std::to_string(T) +
                            " positions (positions x experts per token), found " + std::to_string(n) + " values");
            for (std::size_t k = 0; k < x.expertChoices.size(); ++k)
                if (x.expertChoices[k] < 0 || x.expertChoices[k] >= x.numExperts)
                    throw Error(s.where + ".expert_choices[" + std::to_string(k) + "]: expected an expert 0.." +
                                std::to_string(x.numExperts - 1) + ", found " + std::to_string(x.expertChoices[k]));
        }
        h.series.push_back(std::move(x));
    }
    return h;
}

PromptSpec promptSpecFromJson(const json& j, const std::string& where) {
    const Reader r(j, where);
    PromptSpec p;
    const auto kind = r.string("kind");
    if (kind != "text" && kind != "ids") throw Error(where + ".kind: expected \"text\" or \"ids\", found \"" + kind + "\"");
    p.kind = kind == "ids" ? PromptSpec::Kind::Ids : PromptSpec::Kind::Text;
    p.text = r.string("text");
    p.ids = r.ints<std::int64_t>("ids");
    p.chat = r.boolean("chat");
    p.thinking = r.boolean("thinking");
    return p;
}

}  // namespace draftscope
