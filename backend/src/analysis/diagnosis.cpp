#include "draftscope/diagnosis.h"

#include "draftscope/analysis.h"
#include "analysis/convention_probes.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/masks.h"
#include "draftscope/model_config.h"
#include "draftscope/safetensors.h"
#include "draftscope/settings_validation.h"
#include "draftscope/tokenizer.h"

#include <algorithm>
#include <map>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

namespace draftscope {

namespace {
namespace fs = std::filesystem;

// Thresholds (docs/DIAGNOSE.md explains how they were chosen; the convention probes'
// margin is kConventionMargin in diagnosis.h).
constexpr double kLowTau = 1.3;            // chain tau below this: acceptance collapse
constexpr std::size_t kRepetitionWindow = 4;  // first drafted slots checked for a 3-token run
constexpr double kRepetitionMin = 0.5;        // blocks with such a run, at least
constexpr double kRepetitionExcess = 0.4;     // ... and this much more often than the text itself

std::string fmt(double v, int digits = 2) { return fixedDigits(v, digits); }
std::string idList(const std::vector<std::int64_t>& ids) { return idListText(ids); }

void add(DrafterDiagnosis& d, std::string id, Severity sev, std::string message,
         std::vector<std::pair<std::string, double>> evidence = {}) {
    d.findings.push_back({std::move(id), sev, std::move(message), std::move(evidence)});
}

/// The drafter config, if it can be read without loading the weights.
std::optional<DrafterConfig> readConfig(const std::string& path) {
    std::error_code ec;
    const std::string dir = fs::is_directory(path, ec) ? path : fs::path(path).parent_path().string();
    try {
        return loadDrafterConfig(dir);
    } catch (const Error&) {
        return std::nullopt;
    }
}

/// A config whose sliding layers lose their window: layer_types names sliding_attention and
/// sliding_window is set, but use_sliding_window is not true and dflash_config gives no
/// swa_window_size. HF Qwen3Config then sets sliding_window to None, so the official
/// drafter code would run those layers without a window; draftscope follows DFLASH.md
/// section 9, where a sliding layer without a window is a load error. Read from the raw
/// config.json, since the config does not load.
void droppedWindowCheck(DrafterDiagnosis& d, const std::string& path) {
    std::error_code ec;
    const auto dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
    const auto file = dir / "config.json";
    if (!fs::is_regular_file(file, ec)) return;
    const auto j = nlohmann::json::parse(readFileToString(file.string()), nullptr, false);
    if (!j.is_object() || !j.contains("layer_types") || !j["layer_types"].is_array()) return;
    const auto& types = j["layer_types"];
    const auto sliding = std::count(types.begin(), types.end(), nlohmann::json("sliding_attention"));
    const bool windowGiven = j.contains("sliding_window") && j["sliding_window"].is_number_integer();
    const bool useSliding = j.contains("use_sliding_window") && j["use_sliding_window"] == true;
    const bool swaSize = j.contains("dflash_config") && j["dflash_config"].is_object() &&
                         j["dflash_config"].contains("swa_window_size") && !j["dflash_config"]["swa_window_size"].is_null();
    if (sliding == 0 || !windowGiven || useSliding || swaSize) return;
    const auto W = j["sliding_window"].get<std::int64_t>();
    add(d, "sliding-window-dropped", Severity::Error,
        std::to_string(sliding) + " layer(s) are sliding_attention with sliding_window " + std::to_string(W) +
            ", but use_sliding_window is " + (j.contains("use_sliding_window") ? j["use_sliding_window"].dump() : "missing") +
            ": HF Qwen3Config then drops the window and the official drafter code runs those layers with no window "
            "(full context). draftscope follows docs/ENGINE.md (\"Drafter attention layouts\") and refuses the config instead of guessing; if the "
            "drafter was trained with the window, set use_sliding_window true (or dflash_config.swa_window_size)",
        {{"sliding_window", double(W)}, {"sliding_layers", double(sliding)}});
}

/// fc.weight's input width from the checkpoint header, if it is a plain safetensors directory.
std::optional<std::int64_t> fcInputWidth(const std::string& path) {
    std::error_code ec;
    const auto file = fs::path(path) / "model.safetensors";
    if (!fs::is_regular_file(file, ec)) return std::nullopt;
    try {
        const auto st = SafetensorsFile::open(file.string());
        const auto* fc = st->find("fc.weight");
        if (!fc || fc->shape.size() != 2) return std::nullopt;
        return fc->shape[1];
    } catch (const Error&) {
        return std::nullopt;
    }
}

void staticChecks(DrafterDiagnosis& d, const DrafterConfig& c, const ModelSummary& target, const Engine& engine,
                  std::optional<std::int64_t> fcWidth) {
    const auto L = target.numLayers, H = target.hiddenSize, V = target.vocabSize;
    const auto K = static_cast<std::int64_t>(c.targetLayerIds.size());
    // Tapped layers against the target's depth.
    std::int64_t maxId = -1;
    for (auto id : c.targetLayerIds) maxId = std::max(maxId, id);
    if (maxId >= L)
        add(d, "tapped-layer-out-of-range", Severity::Error,
            "target_layer_ids " + idList(c.targetLayerIds) + " names layer " + std::to_string(maxId) +
                ", but the target has only " + std::to_string(L) + " layers (0.." + std::to_string(L - 1) +
                "): the drafter was trained for a deeper target or the ids are off by one",
            {{"max_tapped_id", double(maxId)}, {"target_layers", double(L)}});
    else if (maxId == L - 1)
        add(d, "tapped-last-layer", Severity::Warning,
            "target_layer_ids " + idList(c.targetLayerIds) + " taps the target's last layer (" + std::to_string(L - 1) +
                "); DFlash's reference layers stop before it. A last-layer tap often means ids were taken as HF "
                "hidden_states indices (k+1) instead of layer ids",
            {{"max_tapped_id", double(maxId)}, {"target_layers", double(L)}});
    if (!std::is_sorted(c.targetLayerIds.begin(), c.targetLayerIds.end()) ||
        std::set<std::int64_t>(c.targetLayerIds.begin(), c.targetLayerIds.end()).size() != c.targetLayerIds.size())
        add(d, "tapped-layers-unordered", Severity::Warning,
            "target_layer_ids " + idList(c.targetLayerIds) + " are not strictly increasing; features are concatenated "
            "in this order, so training and inference must agree on it");
    if (c.numTargetLayers > 0 && c.numTargetLayers != L)
        add(d, "num-target-layers-mismatch", Severity::Warning,
            "the drafter's num_target_layers is " + std::to_string(c.numTargetLayers) + " but the target has " +
                std::to_string(L) + " layers: it was trained against a different target",
            {{"num_target_layers", double(c.numTargetLayers)}, {"target_layers", double(L)}});
    if (c.isCausal && c.dflashCausal && *c.isCausal != *c.dflashCausal)
        add(d, "causal-keys-disagree", Severity::Warning,
            std::string("is_causal is ") + (*c.isCausal ? "true" : "false") + " but dflash_config.causal is " +
                (*c.dflashCausal ? "true" : "false") + "; draftscope, like the official drafter code, uses is_causal (" +
                describeLayout(c.layers) + "), while a reader of dflash_config (vLLM's ModelOpt path) would not");
    if (c.targetLayerIdsDerived)
        add(d, "tapped-layers-derived", Severity::Info,
            "the config names no target_layer_ids; the DFlash fallback gives " + idList(c.targetLayerIds));
    // fc width against the number of tapped layers.
    if (fcWidth && *fcWidth != K * H)
        add(d, "fc-width", Severity::Error,
            "fc.weight takes " + std::to_string(*fcWidth) + " input features, but " + std::to_string(K) +
                " tapped layers x hidden size " + std::to_string(H) + " = " + std::to_string(K * H) +
                (H > 0 && *fcWidth % H == 0 ? ": the checkpoint was trained with " + std::to_string(*fcWidth / H) +
                                                  " tapped layers"
                                            : ""),
            {{"fc_input_width", double(*fcWidth)}, {"tapped_layers", double(K)}, {"hidden_size", double(H)}});
    // Mask token.
    const auto m = c.maskTokenId;
    if (m < 0 || m >= V) {
        add(d, "mask-token-out-of-vocab", Severity::Error,
            "mask_token_id " + std::to_string(m) + " is outside the target's vocabulary 0.." + std::to_string(V - 1),
            {{"mask_token_id", double(m)}, {"vocab_size", double(V)}});
    } else {
        std::vector<std::pair<std::string, std::int64_t>> specials;
        if (const auto* tok = engine.tokenizer()) {
            if (auto e = tok->eosTokenId()) specials.emplace_back("eos", *e);
            if (auto p = tok->padTokenId()) specials.emplace_back("pad", *p);
        }
        for (auto e : c.body.eosTokenIds) specials.emplace_back("eos", e);
        for (const auto& [name, id] : specials)
            if (id == m) {
                add(d, "mask-token-is-special", Severity::Warning,
                    "mask_token_id " + std::to_string(m) + " is also the " + name + " token: the drafter cannot tell a "
                    "masked slot from a real " + name + (name == "eos" ? ", and drafted eos tokens end generation early"
                                                                        : " in its input"),
                    {{"mask_token_id", double(m)}});
                break;
            }
    }
}

double mean(const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

bool hasRun3(const std::int64_t* b, std::size_t n) {
    for (std::size_t i = 2; i < n; ++i)
        if (b[i] == b[i - 1] && b[i] == b[i - 2]) return true;
    return false;
}

/// Fractions of teacher-forced blocks (pooled over prompts) whose first kRepetitionWindow
/// drafted slots hold one token 3 times in a row, and the same over the target's own text.
std::pair<double, double> repetition(const std::vector<TeacherForcedDrafts>& probes) {
    std::size_t blocks = 0, rep = 0, refRep = 0;
    for (const auto& p : probes)
        for (std::size_t i = 0; i < p.anchors.size(); ++i) {
            const auto a = static_cast<std::size_t>(p.anchors[i]);
            const auto& d = p.drafts[i];
            const auto D = static_cast<std::size_t>(p.blockSize - 1);
            ++blocks;
            rep += hasRun3(d.data(), std::min(d.size(), kRepetitionWindow));
            refRep += hasRun3(p.sequence.data() + a + 1, std::min(D, kRepetitionWindow));
        }
    if (blocks == 0) return {0.0, 0.0};
    return {static_cast<double>(rep) / static_cast<double>(blocks), static_cast<double>(refRep) / static_cast<double>(blocks)};
}

/// A per-anchor score (perAnchorAcceptance, perAnchorExpectedAcceptance) pooled over
/// prompts, in prompt order.
std::vector<double> pooled(const std::vector<TeacherForcedDrafts>& probes, int labelShift,
                           std::vector<double> (*perAnchor)(const TeacherForcedDrafts&, int)) {
    std::vector<double> all;
    for (const auto& p : probes) {
        const auto v = perAnchor(p, labelShift);
        all.insert(all.end(), v.begin(), v.end());
    }
    return all;
}

std::vector<double> pooledAcceptance(const std::vector<TeacherForcedDrafts>& probes, int labelShift) {
    return pooled(probes, labelShift, &perAnchorAcceptance);
}

std::vector<double> pooledExpectedAcceptance(const std::vector<TeacherForcedDrafts>& probes, int labelShift) {
    return pooled(probes, labelShift, &perAnchorExpectedAcceptance);
}

/// Sliding-window layers whose window is shorter than the longest context a prompt reached
/// (prompt + generated tokens): there the window actually hides context (info).
void windowCheck(DrafterDiagnosis& d, std::int64_t longestContext) {
    std::optional<std::int64_t> window;
    std::string layers;
    for (std::size_t i = 0; i < d.summary.layout.size(); ++i) {
        const auto& w = d.summary.layout[i].window;
        if (!w || *w >= longestContext) continue;
        window = window ? std::min(*window, *w) : *w;
        layers += (layers.empty() ? "" : ", ") + std::to_string(i);
    }
    if (!window) return;
    add(d, "window-shorter-than-context", Severity::Info,
        "drafter layer(s) " + layers + " attend over a sliding window of " + std::to_string(*window) +
            " positions, and the longest context here reached " + std::to_string(longestContext) +
            " tokens: those layers do not see the start of the context (as trained; the cache keeps every key)",
        {{"window", double(*window)}, {"longest_context", double(longestContext)}});
}

/// Repetition and acceptance checks of the "acceptance" family.
void patternChecks(DrafterDiagnosis& d) {
    if (d.samePositionMatch.empty()) {  // no probe ran (see "probe-skipped")
        if (d.tau < kLowTau)
            add(d, "low-acceptance", Severity::Warning, "tau " + fmt(d.tau) + ": drafts are almost never accepted",
                {{"tau", d.tau}});
        return;
    }
    if (d.draftRepetition >= kRepetitionMin && d.draftRepetition > d.referenceRepetition + kRepetitionExcess)
        add(d, "draft-repetition", Severity::Warning,
            fmt(100 * d.draftRepetition, 0) + "% of draft blocks repeat one token 3 times in a row in their first " +
                std::to_string(kRepetitionWindow) + " slots, against " +
                fmt(100 * d.referenceRepetition, 0) + "% of the target's own text: repetition collapse",
            {{"draft_repetition", d.draftRepetition}, {"reference_repetition", d.referenceRepetition}});
    if (d.tau < kLowTau) {
        bool explained = false;
        for (const auto& f : d.findings) explained = explained || f.severity == Severity::Error;
        add(d, "low-acceptance", Severity::Warning,
            "tau " + fmt(d.tau) + ": drafts are almost never accepted" +
                std::string(explained ? " (see the errors above)" : "; no known signature matched"),
            {{"tau", d.tau}});
    } else {
        add(d, "acceptance", Severity::Info, "tau " + fmt(d.tau) + " over the prompts (probe " + fmt(d.probeTau) + ")",
            {{"tau", d.tau}, {"probe_tau", d.probeTau}});
    }
}

}  // namespace

std::vector<DiagnosePrompt> defaultDiagnosePrompts() {
    auto text = [](std::string id, std::string t) {
        DiagnosePrompt p;
        p.id = std::move(id);
        p.spec.kind = PromptSpec::Kind::Text;
        p.spec.text = std::move(t);
        return p;
    };
    return {text("fibonacci", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
            text("main", "import os\nimport sys\n\n\ndef main(argv):\n"),
            text("stack-push", "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n"),
            text("linear-search", "def find(items, target):\n    for i in range(len(items)):\n        if items[i] =="),
            text("fizzbuzz", "def fizzbuzz(n):\n    for i in range(1, n + 1):\n"),
            text("read-lines", "def read_lines(path):\n    with open(path) as f:\n"),
            text("binary-search", "def binary_search(items, target):\n    lo, hi = 0, len(items) - 1\n"),
            text("word-count", "from collections import Counter\n\n\ndef word_count(text):\n"),
            text("point", "class Point:\n    def __init__(self, x, y):\n"),
            text("prose", "The quick brown fox jumps over the lazy dog. Then the fox")};
}

const std::vector<std::string>& diagnoseProbeFamilies() {
    static const std::vector<std::string> families = {"static",       "acceptance",      "context-leak", "label-shift",
                                                      "block-causal", "position-offset", "tap-offset",   "window"};
    return families;
}

std::vector<std::string> parseProbeFamilies(const std::string& list) {
    const auto& all = diagnoseProbeFamilies();
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= list.size()) {
        auto end = list.find(',', pos);
        if (end == std::string::npos) end = list.size();
        const auto piece = list.substr(pos, end - pos);
        pos = end + 1;
        const auto first = piece.find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        const auto name = piece.substr(first, piece.find_last_not_of(" \t") - first + 1);
        if (name == "all") return all;
        if (std::find(all.begin(), all.end(), name) == all.end()) {
            std::string valid;
            for (const auto& f : all) valid += (valid.empty() ? "" : ", ") + f;
            throw Error("unknown probe family '" + name + "' in --probes '" + list + "'; valid: " + valid + ", all");
        }
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    if (out.empty()) throw Error("--probes '" + list + "' names no probe family");
    return out;
}

namespace {

/// Wall-clock seconds since `start`.
double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Per-anchor acceptance of drafter `index` under `convention` over the sequences of the
/// declared probe `plain` (whose drafts serve a convention that changes the scoring only).
/// Adds the drafter calls to `steps`.
std::vector<double> probeAcceptance(Engine& engine, int index, const ProbeConvention& convention,
                                    const std::vector<TeacherForcedDrafts>& plain, LoopRevision loop,
                                    const std::atomic<bool>* cancel, std::int64_t& steps,
                                    std::vector<double>* slotMatch = nullptr, std::vector<double>* expected = nullptr) {
    std::vector<TeacherForcedDrafts> runs;
    if (convention.changesDrafterCall())
        for (const auto& p : plain) {
            runs.push_back(engine.teacherForcedDrafts(p.sequence, p.promptLength, index, convention, loop, cancel));
            steps += static_cast<std::int64_t>(runs.back().anchors.size());
        }
    const auto& drafts = convention.changesDrafterCall() ? runs : plain;
    if (slotMatch) *slotMatch = slotMatchRates(drafts, convention.labelShift);
    if (expected) *expected = pooledExpectedAcceptance(drafts, convention.labelShift);
    return pooledAcceptance(drafts, convention.labelShift);
}

/// The best alternative of one family that beat the declared convention.
struct Candidate {
    ConventionProbe probe;
    ConventionAlternative alternative;
    std::vector<double> expected;  ///< expected acceptance per anchor, pooled over prompts
};

/// Runs every alternative of the convention family `family` over the sequences of `plain`
/// (the declared probe), records them in d.conventionProbes and d.costs, and returns the
/// alternative with the highest lower bound (expected acceptance) among those that beat it
/// (conventionBeatsDeclared), if any.
std::optional<Candidate> conventionFamily(Engine& engine, DrafterDiagnosis& d, const std::string& family, int index,
                                          const std::optional<DrafterConfig>& config,
                                          const std::vector<TeacherForcedDrafts>& plain, const std::vector<double>& declared,
                                          std::int64_t longestSequence, LoopRevision loop,
                                          const std::atomic<bool>* cancel) {
    const auto start = std::chrono::steady_clock::now();
    ProbeCost cost{family, 0, 0};
    std::optional<Candidate> best;
    const auto declaredExpected = pooledExpectedAcceptance(plain, 0);
    for (const auto& alt : conventionAlternatives(family, d.summary, config, engine.targetSummary().numLayers,
                                                  longestSequence)) {
        ConventionProbe probe;
        probe.family = family;
        probe.alternative = describeConvention(alt.convention, d.summary.layout);
        probe.convention = alt.convention;
        probe.declaredTau = mean(declared);
        std::vector<double> expected;
        auto acceptance = probeAcceptance(engine, index, alt.convention, plain, loop, cancel, cost.probeSteps,
                                          &probe.slotMatch, &expected);
        probe.tau = mean(acceptance);
        probe.expectedDeclaredTau = mean(declaredExpected);
        probe.expectedTau = mean(expected);
        probe.expectedDifference = pairedBootstrap(declaredExpected, expected, kConventionResamples,
                                                   kConventionConfidence, kConventionSeed);
        probe.difference = pairedBootstrap(declared, acceptance, kConventionResamples, kConventionConfidence,
                                           kConventionSeed);
        probe.finding = conventionBeatsDeclared(probe.expectedDifference);
        if (probe.finding && (!best || probe.expectedDifference.lower > best->probe.expectedDifference.lower))
            best = Candidate{probe, alt, std::move(expected)};
        d.conventionProbes.push_back(std::move(probe));
    }
    if (family == "context-leak")
        for (const auto& p : d.conventionProbes)
            if (p.family == family) d.probeTauAnchorFeature = p.tau;
    cost.seconds = secondsSince(start);
    d.costs.push_back(cost);
    return best;
}

/// `b`'s overrides on top of `a`'s (b wins where both override).
ProbeConvention compose(const ProbeConvention& a, const ProbeConvention& b) {
    ProbeConvention c = a;
    c.blockAttention.resize(std::max(a.blockAttention.size(), b.blockAttention.size()));
    for (std::size_t i = 0; i < b.blockAttention.size(); ++i)
        if (b.blockAttention[i] != ProbeConvention::BlockAttention::Declared) c.blockAttention[i] = b.blockAttention[i];
    c.window.resize(std::max(a.window.size(), b.window.size()));
    for (std::size_t i = 0; i < b.window.size(); ++i)
        if (b.window[i].kind != ProbeConvention::Window::Kind::Declared) c.window[i] = b.window[i];
    if (b.positionOffset != 0) c.positionOffset = b.positionOffset;
    if (b.tapOffset != 0) c.tapOffset = b.tapOffset;
    c.anchorFeatureInContext = a.anchorFeatureInContext || b.anchorFeatureInContext;
    if (b.labelShift != 0) c.labelShift = b.labelShift;
    return c;
}

/// The order in which findings are tested: highest lower bound first, except that a
/// candidate whose convention contains another's (conventionContains) comes after it, so the
/// simpler explanation is raised first and the larger one only if it adds a gain of its own
/// (a causal window on a drafter trained with a causal block and no window is the causal block).
void orderCandidates(std::vector<Candidate>& candidates, const std::vector<LayerAttention>& declared) {
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& x, const Candidate& y) {
        return x.probe.expectedDifference.lower > y.probe.expectedDifference.lower;
    });
    for (std::size_t i = 0; i < candidates.size(); ++i)
        for (std::size_t j = i + 1; j < candidates.size(); ++j)
            if (conventionContains(candidates[i].alternative.convention, candidates[j].alternative.convention, declared)) {
                std::rotate(candidates.begin() + static_cast<std::ptrdiff_t>(i),
                            candidates.begin() + static_cast<std::ptrdiff_t>(j),
                            candidates.begin() + static_cast<std::ptrdiff_t>(j + 1));
                j = i;  // re-check from the moved candidate
            }
}

/// Raises the findings of the families' winners, in orderCandidates' order: the first is
/// raised; each further one only if adding its convention to those already raised still
/// beats them (conventionBeatsDeclared, paired bootstrap of the expected acceptance against
/// them): a winner that only compensates for another mismatch (dropping the window of a
/// layer declared bidirectional when the real bug is its causality) is explained by it and
/// not raised.
void raiseConventionFindings(Engine& engine, DrafterDiagnosis& d, int index, std::vector<Candidate> candidates,
                             const std::vector<TeacherForcedDrafts>& plain, LoopRevision loop,
                             const std::atomic<bool>* cancel) {
    orderCandidates(candidates, d.summary.layout);
    std::optional<ProbeConvention> accepted;
    std::vector<double> acceptedAcceptance;
    std::int64_t steps = 0;
    const auto start = std::chrono::steady_clock::now();
    for (auto& c : candidates) {
        std::vector<std::pair<std::string, double>> extra;
        if (accepted) {
            const auto combined = compose(*accepted, c.alternative.convention);
            std::vector<double> withIt;
            probeAcceptance(engine, index, combined, plain, loop, cancel, steps, nullptr, &withIt);
            const auto gain = pairedBootstrap(acceptedAcceptance, withIt, kConventionResamples, kConventionConfidence,
                                              kConventionSeed);
            if (!conventionBeatsDeclared(gain)) {
                for (auto& p : d.conventionProbes)
                    if (p.family == c.probe.family && p.alternative == c.probe.alternative) p.finding = false;
                continue;
            }
            extra = {{"gain_over_other_findings_lower", gain.lower}};
            accepted = combined;
            acceptedAcceptance = withIt;
        } else {
            accepted = c.alternative.convention;
            acceptedAcceptance = c.expected;
        }
        if (c.probe.family == "label-shift")
            extra.insert(extra.begin(),
                         {{"first_slot_next_position_match", d.nextPositionMatch.empty() ? 0.0 : d.nextPositionMatch[0]},
                          {"first_slot_same_position_match", d.samePositionMatch.empty() ? 0.0 : d.samePositionMatch[0]}});
        d.findings.push_back(conventionFinding(c.probe, c.alternative, d.summary.layout, std::move(extra)));
    }
    // Only the winners of a family are findings; the other alternatives above the margin lost to them.
    for (auto& p : d.conventionProbes) {
        if (!p.finding) continue;
        bool raised = false;
        for (const auto& c : candidates)
            raised = raised || (p.family == c.probe.family && p.alternative == c.probe.alternative);
        p.finding = raised && std::any_of(d.findings.begin(), d.findings.end(), [&](const Finding& f) {
            return f.id == p.family || f.id == "convention-" + p.family;
        });
    }
    if (steps > 0) d.costs.push_back({"combined", steps, secondsSince(start)});
}

/// The summary fields conventionAlternatives reads, from a config alone (before loading).
ModelSummary layoutSummary(const DrafterConfig& c) {
    ModelSummary s;
    s.layout = c.layers;
    s.layerTypes = c.body.layerTypes;
    s.targetLayerIds = c.targetLayerIds;
    s.blockSize = c.blockSize;
    s.draftsFromAnchor = c.sampleFromAnchor;
    s.speculatorsFormat = c.format == DrafterFormat::Speculators;
    s.numLayers = c.body.numLayers;
    return s;
}

/// One drafter's cost in drafter calls, as diagnoseDrafters counts its progress: `prompt`
/// per prompt run (the chain run's calls and the declared probe's anchors) and `family`
/// per convention family.
struct DrafterCost {
    std::int64_t prompt = 0;
    std::vector<std::pair<std::string, std::int64_t>> family;
    std::int64_t total(std::size_t prompts) const {
        std::int64_t t = prompt * static_cast<std::int64_t>(prompts);
        for (const auto& [f, n] : family) t += n;
        return t;
    }
};

DrafterCost drafterCost(const ModelSummary& summary, const std::optional<DrafterConfig>& config, std::int64_t targetLayers,
                        const DiagnoseSettings& settings, const std::vector<std::string>& families,
                        const std::vector<std::int64_t>& promptLengths) {
    DrafterCost c;
    const auto width = summary.blockSize + (summary.draftsFromAnchor ? 1 : 0);
    const auto anchors = std::max<std::int64_t>(0, settings.maxNewTokens - width + 1);
    const bool acceptance = std::find(families.begin(), families.end(), "acceptance") != families.end();
    c.prompt = (acceptance ? settings.maxNewTokens : 0) + anchors;
    std::int64_t longest = 0;
    for (auto n : promptLengths) longest = std::max(longest, n + settings.maxNewTokens);
    const auto prompts = static_cast<std::int64_t>(promptLengths.size());
    for (const auto& f : families) {
        if (!isConventionFamily(f)) continue;
        std::int64_t calls = 0;
        try {
            for (const auto& alt : conventionAlternatives(f, summary, config, targetLayers, longest))
                if (alt.convention.changesDrafterCall()) calls += anchors * prompts;
        } catch (const Error&) {
        }
        c.family.emplace_back(f, calls);
    }
    return c;
}

std::vector<std::string> familiesOf(const DiagnoseSettings& settings) {
    std::vector<std::string> families;
    for (const auto& f : settings.probes) {
        const auto one = parseProbeFamilies(f);  // validates the name
        families.insert(families.end(), one.begin(), one.end());
    }
    if (families.empty()) families = diagnoseProbeFamilies();
    return families;
}

}  // namespace

DiagnoseCostEstimate estimateDiagnoseCost(const std::vector<std::optional<DrafterConfig>>& drafters,
                                          std::int64_t targetLayers, const DiagnoseSettings& settings,
                                          const std::vector<std::int64_t>& promptLengths) {
    const auto families = familiesOf(settings);
    DiagnoseCostEstimate e;
    std::map<std::string, std::int64_t> perFamily;
    for (const auto& d : drafters) {
        if (!d) continue;
        const auto c = drafterCost(layoutSummary(*d), d, targetLayers, settings, families, promptLengths);
        perFamily["acceptance"] += c.prompt * static_cast<std::int64_t>(promptLengths.size());
        for (const auto& [f, n] : c.family) perFamily[f] += n;
        e.drafterCalls += c.total(promptLengths.size());
    }
    for (const auto& f : diagnoseProbeFamilies())
        if (perFamily.count(f)) e.perFamily.emplace_back(f, perFamily[f]);
    return e;
}

void validate(const DiagnoseSettings& settings) {
    if (settings.maxNewTokens < kDiagnoseMinNewTokens || settings.maxNewTokens > kDiagnoseMaxNewTokens)
        throw InvalidSetting("max-new",
                             "an integer from " + std::to_string(kDiagnoseMinNewTokens) + " to " +
                                 std::to_string(kDiagnoseMaxNewTokens) + " (tokens generated per prompt)",
                             std::to_string(settings.maxNewTokens));
    validate(settings.sampling);
    for (const auto& f : settings.probes) parseProbeFamilies(f);
}

DiagnosisReport diagnoseDrafters(Engine& engine, const std::vector<std::string>& drafterPaths,
                                 const std::vector<DiagnosePrompt>& prompts, const DiagnoseSettings& settings,
                                 const ProgressFn& progress, const std::atomic<bool>* cancel) {
    if (!engine.hasTarget()) throw Error("diagnose: load a target first");
    if (prompts.empty()) throw Error("diagnose: no prompts");
    if (drafterPaths.empty()) throw Error("diagnose: no drafters");
    validate(settings);
    const auto families = familiesOf(settings);
    const auto runs = [&](const std::string& f) { return std::find(families.begin(), families.end(), f) != families.end(); };
    const bool acceptance = runs("acceptance");
    const bool anyConvention = std::any_of(families.begin(), families.end(), isConventionFamily);
    if (!acceptance && settings.sampling.temperature != 0.0)
        throw Error("diagnose: --temperature needs the acceptance probes (the sampled runs give the sequences "
                    "the other probes follow); add acceptance to --probes");
    DiagnosisReport report;
    report.target = engine.targetSummary();
    report.settings = settings;
    report.settings.probes.clear();
    for (const auto& f : diagnoseProbeFamilies())  // in run order
        if (runs(f)) report.settings.probes.push_back(f);
    for (const auto& p : prompts) report.promptIds.push_back(p.id);
    // Progress in estimated drafter calls (estimateDiagnoseCost): each drafter's share is
    // known from its config before it loads.
    std::vector<std::int64_t> promptLengths;
    for (const auto& p : prompts) {
        try {
            promptLengths.push_back(static_cast<std::int64_t>(engine.encodePrompt(p.spec).size()));
        } catch (const Error&) {
            promptLengths.push_back(0);  // its own run reports the error
        }
    }
    std::vector<std::optional<DrafterConfig>> configs;
    std::vector<DrafterCost> costs;
    std::int64_t total = 0;
    for (const auto& path : drafterPaths) {
        configs.push_back(readConfig(path));
        costs.push_back(configs.back() ? drafterCost(layoutSummary(*configs.back()), configs.back(), report.target.numLayers,
                                                     settings, families, promptLengths)
                                       : DrafterCost{});
        total += std::max<std::int64_t>(1, costs.back().total(prompts.size()));
    }
    std::int64_t done = 0, before = 0;
    if (progress) progress(0, total);

    for (std::size_t di = 0; di < drafterPaths.size(); ++di) {
        const auto& path = drafterPaths[di];
        const auto& share = costs[di];
        DrafterDiagnosis d;
        d.path = path;
        const auto& config = configs[di];
        if (runs("static")) {
            const auto start = std::chrono::steady_clock::now();
            if (config) staticChecks(d, *config, report.target, engine, fcInputWidth(path));
            else droppedWindowCheck(d, path);
            d.costs.push_back({"static", 0, secondsSince(start)});
        }
        int index = -1;
        try {
            d.summary = engine.loadDrafter(path);
            index = engine.drafterCount() - 1;
            d.loaded = true;
        } catch (const Cancelled&) {
            throw;
        } catch (const Error& e) {
            add(d, "load-failed", Severity::Error, std::string("the drafter does not load: ") + e.what());
        }
        if (d.loaded && (acceptance || anyConvention)) {
            const auto start = std::chrono::steady_clock::now();
            ProbeCost cost{"acceptance", 0, 0};
            std::vector<TeacherForcedDrafts> plain;
            std::int64_t longestContext = 0;
            RunSettings rs = settings.sampling;
            rs.maxNewTokens = settings.maxNewTokens;
            rs.ignoreEos = true;
            rs.drafter = index;
            for (const auto& p : prompts) {
                if (cancel && cancel->load()) throw Cancelled();
                std::vector<std::int64_t> sequence;
                std::int64_t P = 0;
                if (acceptance) {
                    PromptAnalysisRequest request;
                    request.prompt = p.spec;
                    request.settings = rs;
                    const auto run = analysePrompt(engine, request, {}, cancel).run;
                    d.promptTaus.push_back(run.tau);
                    cost.probeSteps += static_cast<std::int64_t>(run.steps.size());
                    sequence = run.outputIds;
                    P = static_cast<std::int64_t>(run.promptIds.size());
                } else {  // the target's greedy continuation alone
                    P = static_cast<std::int64_t>(engine.encodePrompt(p.spec).size());
                    sequence = engine.greedy(p.spec, settings.maxNewTokens, /*ignoreEos=*/true, cancel);
                }
                longestContext = std::max(longestContext, static_cast<std::int64_t>(sequence.size()));
                // A full block's positions: block_size, + 1 when the anchor's row drafts (DSpark).
                const auto width = d.summary.blockSize + (d.summary.draftsFromAnchor ? 1 : 0);
                if (static_cast<std::int64_t>(sequence.size()) - width >= P) {
                    plain.push_back(engine.teacherForcedDrafts(sequence, P, index, ProbeConvention{}, rs.loop, cancel));
                    cost.probeSteps += static_cast<std::int64_t>(plain.back().anchors.size());
                }
                done += share.prompt;
                if (progress) progress(std::min(done, total), total);
            }
            d.tau = mean(d.promptTaus);
            if (acceptance) windowCheck(d, longestContext);
            if (plain.empty())
                add(d, "probe-skipped", Severity::Info,
                    "the teacher-forced probe needs at least " +
                        std::to_string(d.summary.blockSize + (d.summary.draftsFromAnchor ? 1 : 0)) +
                        " generated tokens per prompt; with --max-new " + std::to_string(settings.maxNewTokens) +
                        " the convention, context-leak, label-shift and repetition checks did not run",
                    {{"max_new_tokens", double(settings.maxNewTokens)}, {"block_size", double(d.summary.blockSize)}});
            const auto declared = pooledAcceptance(plain, 0);
            d.probeTau = mean(declared);
            if (!plain.empty()) {
                d.samePositionMatch = slotMatchRates(plain, 0);
                d.nextPositionMatch = slotMatchRates(plain, 1);
                std::tie(d.draftRepetition, d.referenceRepetition) = repetition(plain);
            }
            cost.seconds = secondsSince(start);
            if (acceptance) d.costs.push_back(cost);
            if (!plain.empty()) {
                std::vector<Candidate> candidates;
                for (const auto& f : families)
                    if (isConventionFamily(f)) {
                        if (auto c = conventionFamily(engine, d, f, index, config, plain, declared, longestContext,
                                                      rs.loop, cancel))
                            candidates.push_back(std::move(*c));
                        for (const auto& [name, n] : share.family)
                            if (name == f) done += n;
                        if (progress) progress(std::min(done, total), total);
                    }
                raiseConventionFindings(engine, d, index, std::move(candidates), plain, rs.loop, cancel);
            }
            if (acceptance) patternChecks(d);
        }
        // Calls that did not run (a drafter that failed to load, no probe sequence) count as done.
        before += std::max<std::int64_t>(1, share.total(prompts.size()));
        if (done != before) {
            done = before;
            if (progress) progress(done, total);
        }
        report.drafters.push_back(std::move(d));
    }
    std::stable_sort(report.drafters.begin(), report.drafters.end(), [](const auto& x, const auto& y) {
        if (x.loaded != y.loaded) return x.loaded;
        return x.tau > y.tau;
    });
    for (std::size_t i = 0; i < report.drafters.size(); ++i) report.drafters[i].rank = static_cast<int>(i + 1);
    return report;
}

}  // namespace draftscope
