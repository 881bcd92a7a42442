#include "draftscope/diagnosis.h"

#include "draftscope/analysis.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/masks.h"
#include "draftscope/model_config.h"
#include "draftscope/safetensors.h"
#include "draftscope/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>

namespace draftscope {

namespace {
namespace fs = std::filesystem;

// Thresholds (docs/DIAGNOSE.md explains how they were chosen).
constexpr double kShiftRatio = 1.5;        // first slot: next-position match over same-position match
constexpr double kShiftMinRate = 0.10;     // ... with at least this next-position match rate
constexpr double kLeakGain = 0.3;          // probe tau with the anchor feature minus without
constexpr double kLeakRatio = 1.25;        // ... and their ratio,
constexpr double kLeakMaxTau = 1.5;        // ... for a drafter that is poor without the feature
constexpr double kLowTau = 1.3;            // chain tau below this: acceptance collapse
constexpr std::size_t kRepetitionWindow = 4;  // first drafted slots checked for a 3-token run
constexpr double kRepetitionMin = 0.5;        // blocks with such a run, at least
constexpr double kRepetitionExcess = 0.4;     // ... and this much more often than the text itself

std::string fmt(double v, int digits = 2) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string idList(const std::vector<std::int64_t>& ids) {
    std::string s = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

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
            "(full context). draftscope follows DFLASH.md section 9 and refuses the config instead of guessing; if the "
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

struct ProbeStats {
    double tau = 0;
    std::vector<double> same, next;
    double repetition = 0, referenceRepetition = 0;
};

/// Aggregates teacher-forced drafts over prompts.
ProbeStats probeStats(const std::vector<TeacherForcedDrafts>& probes) {
    ProbeStats s;
    std::size_t blocks = 0, rep = 0, refRep = 0;
    std::vector<double> sameHits, nextHits, sameN, nextN;
    double tauSum = 0;
    for (const auto& p : probes) {
        const auto D = static_cast<std::size_t>(p.blockSize - 1);
        sameHits.resize(D, 0);
        nextHits.resize(D, 0);
        sameN.resize(D, 0);
        nextN.resize(D, 0);
        for (std::size_t i = 0; i < p.anchors.size(); ++i) {
            const auto a = static_cast<std::size_t>(p.anchors[i]);
            const auto& d = p.drafts[i];
            int lead = 0;
            bool leading = true;
            for (std::size_t j = 0; j < D && j < d.size(); ++j) {
                const auto pos = a + 1 + j;
                const bool same = d[j] == p.sequence[pos];
                sameHits[j] += same;
                sameN[j] += 1;
                if (pos + 1 < p.sequence.size()) {
                    nextHits[j] += d[j] == p.sequence[pos + 1];
                    nextN[j] += 1;
                }
                if (leading && same) ++lead;
                else leading = false;
            }
            tauSum += 1 + lead;
            ++blocks;
            rep += hasRun3(d.data(), std::min(d.size(), kRepetitionWindow));
            refRep += hasRun3(p.sequence.data() + a + 1, std::min(D, kRepetitionWindow));
        }
    }
    if (blocks == 0) return s;
    s.tau = tauSum / static_cast<double>(blocks);
    for (std::size_t j = 0; j < sameHits.size(); ++j) {
        s.same.push_back(sameN[j] > 0 ? sameHits[j] / sameN[j] : 0.0);
        s.next.push_back(nextN[j] > 0 ? nextHits[j] / nextN[j] : 0.0);
    }
    s.repetition = static_cast<double>(rep) / static_cast<double>(blocks);
    s.referenceRepetition = static_cast<double>(refRep) / static_cast<double>(blocks);
    return s;
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

void patternChecks(DrafterDiagnosis& d) {
    if (d.samePositionMatch.empty()) {  // no probe ran (see "probe-skipped")
        if (d.tau < kLowTau)
            add(d, "low-acceptance", Severity::Warning, "tau " + fmt(d.tau) + ": drafts are almost never accepted",
                {{"tau", d.tau}});
        return;
    }
    // Label shift shows most clearly in the first drafted slot, where a correct drafter is
    // most often right; later slots converge to the same low rates either way.
    const double same = d.samePositionMatch.empty() ? 0.0 : d.samePositionMatch[0];
    const double next = d.nextPositionMatch.empty() ? 0.0 : d.nextPositionMatch[0];
    if (next >= kShiftMinRate && next > kShiftRatio * same)
        add(d, "label-shift", Severity::Error,
            "the first drafted token matches the target's token one position later more often than its own position (" +
                fmt(100 * next, 0) + "% vs " + fmt(100 * same, 0) +
                "%): the drafter was trained with labels shifted by one (it predicts position j+1 at slot j)",
            {{"first_slot_next_position_match", next},
             {"first_slot_same_position_match", same},
             {"mean_next_position_match", mean(d.nextPositionMatch)},
             {"mean_same_position_match", mean(d.samePositionMatch)}});
    const double gain = d.probeTauAnchorFeature - d.probeTau;
    if (d.probeTau > 0 && d.probeTau < kLeakMaxTau && gain > kLeakGain && d.probeTauAnchorFeature > kLeakRatio * d.probeTau)
        add(d, "context-leak", Severity::Error,
            "the drafter accepts " + fmt(d.probeTauAnchorFeature) + " tokens per block when the anchor's own target "
                "feature is added to its context and only " + fmt(d.probeTau) +
                " without it: it was trained with a context that includes the anchor (kv <= anchor instead of kv < "
                "anchor), a feature that does not exist at inference",
            {{"probe_tau_with_anchor_feature", d.probeTauAnchorFeature}, {"probe_tau", d.probeTau}, {"gain", gain}});
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

const char* severityName(Severity s) {
    switch (s) {
        case Severity::Info: return "info";
        case Severity::Warning: return "warning";
        case Severity::Error: return "error";
    }
    return "?";
}

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

DiagnosisReport diagnoseDrafters(Engine& engine, const std::vector<std::string>& drafterPaths,
                                 const std::vector<DiagnosePrompt>& prompts, const DiagnoseSettings& settings,
                                 const ProgressFn& progress, const std::atomic<bool>* cancel) {
    if (!engine.hasTarget()) throw Error("diagnose: load a target first");
    if (prompts.empty()) throw Error("diagnose: no prompts");
    if (drafterPaths.empty()) throw Error("diagnose: no drafters");
    validateSampling(settings.sampling);
    DiagnosisReport report;
    report.target = engine.targetSummary();
    report.settings = settings;
    for (const auto& p : prompts) report.promptIds.push_back(p.id);
    const std::int64_t total = static_cast<std::int64_t>(drafterPaths.size() * prompts.size());
    std::int64_t done = 0;

    for (const auto& path : drafterPaths) {
        DrafterDiagnosis d;
        d.path = path;
        const auto config = readConfig(path);
        if (config) staticChecks(d, *config, report.target, engine, fcInputWidth(path));
        else droppedWindowCheck(d, path);
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
        if (d.loaded) {
            std::vector<TeacherForcedDrafts> plain, withAnchor;
            std::int64_t longestContext = 0;
            RunSettings rs = settings.sampling;
            rs.maxNewTokens = settings.maxNewTokens;
            rs.ignoreEos = true;
            rs.drafter = index;
            for (const auto& p : prompts) {
                if (cancel && cancel->load()) throw Cancelled();
                PromptAnalysisRequest request;
                request.prompt = p.spec;
                request.settings = rs;
                const auto run = analysePrompt(engine, request, {}, cancel).run;
                d.promptTaus.push_back(run.tau);
                longestContext = std::max(longestContext, static_cast<std::int64_t>(run.outputIds.size()));
                const auto P = static_cast<std::int64_t>(run.promptIds.size());
                if (static_cast<std::int64_t>(run.outputIds.size()) - d.summary.blockSize >= P) {
                    plain.push_back(engine.teacherForcedDrafts(run.outputIds, P, index, false, rs.loop, cancel));
                    withAnchor.push_back(engine.teacherForcedDrafts(run.outputIds, P, index, true, rs.loop, cancel));
                }
                if (progress) progress(++done, total);
            }
            d.tau = mean(d.promptTaus);
            windowCheck(d, longestContext);
            if (plain.empty())
                add(d, "probe-skipped", Severity::Info,
                    "the teacher-forced probe needs at least " + std::to_string(d.summary.blockSize) +
                        " generated tokens per prompt; with --max-new " + std::to_string(settings.maxNewTokens) +
                        " the label-shift, context-leak and repetition checks did not run",
                    {{"max_new_tokens", double(settings.maxNewTokens)}, {"block_size", double(d.summary.blockSize)}});
            const auto a = probeStats(plain), b = probeStats(withAnchor);
            d.probeTau = a.tau;
            d.probeTauAnchorFeature = b.tau;
            d.samePositionMatch = a.same;
            d.nextPositionMatch = a.next;
            d.draftRepetition = a.repetition;
            d.referenceRepetition = a.referenceRepetition;
            patternChecks(d);
        } else {
            done += static_cast<std::int64_t>(prompts.size());
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
