#pragma once
// Plain C++ results of the engine (no torch types), shared by the CLI, the GUI and the
// results files. Conventions (DFLASH.md section 4): a verify step drafts B-1 tokens after
// the anchor; `acceptedCount` (acc) is the number of leading drafted tokens equal to the
// target's; the step commits the anchor plus acc drafted tokens and ends with the bonus
// token (the target's token after them), so its acceptance length is acc + 1 (bonus
// counted as the committed anchor of the next step is NOT included twice).

#include "draftscope/errors.h"
#include "draftscope/probe_convention.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace draftscope {

/// Progress report of long work: units done so far and the total (tokens for a run).
using ProgressFn = std::function<void(std::int64_t done, std::int64_t total)>;

/// How the prompt is given.
struct PromptSpec {
    enum class Kind { Text, Ids };
    Kind kind = Kind::Text;
    std::string text;                ///< raw text (Kind::Text)
    std::vector<std::int64_t> ids;   ///< token ids (Kind::Ids)
    bool chat = false;               ///< wrap text as one user turn of the ChatML template
    bool thinking = true;            ///< with chat: false appends Qwen3's empty <think> block
};

/// Revision of the official DFlash reference a run reproduces (DFLASH.md sections 4 and 10;
/// docs/ENGINE.md "Verification loop" and "Drafter call"): its verification loop and its
/// drafter rotary numerics, one choice.
enum class LoopRevision {
    Current,    ///< newest official code: dflash_generate with a clipped last block, stop tokens
                ///< inside the loop, lossless rejection sampling at temperature > 0; the drafter's
                ///< rotary inv_freq stays float32 (variant_goldens.json). The default.
    April2026,  ///< the April 2026 reference: full blocks, output truncated afterwards; at
                ///< temperature > 0 argmax drafts, exact match against a sampled target; the
                ///< drafter's inv_freq rounded through its checkpoint dtype (goldens.json)
};

/// CLI / results-file spelling of a loop revision: "current" or "2026-04".
inline std::string loopRevisionName(LoopRevision r) { return r == LoopRevision::Current ? "current" : "2026-04"; }

/// Why a drafter of `family` (ModelSummary::family, drafterFamilyName) cannot run loop
/// revision `loop` (drafting from the anchor's row or not: DrafterConfig::sampleFromAnchor), or
/// "" if it can: DFlash2, DSpark and the anchor layout exist only in the current loop (they came
/// after the 2026-04 reference). The one statement of that rule: the loop throws it,
/// evaluations check it before their first prompt.
inline std::string loopRefusal(const std::string& family, LoopRevision loop, bool anchorDrafts = false) {
    if (anchorDrafts && loop == LoopRevision::April2026)
        return "a drafter that drafts from the anchor's row (sample_from_anchor) runs only in the current loop: "
               "the 2026-04 loop drafts rows 1..B-1; use --loop current";
    if (family == "DFlash2" && loop == LoopRevision::April2026)
        return "a DFlash2 drafter (candidate selector) runs only in the current loop: the 2026-04 loop predates "
               "DFlash2 and has no proposal step; use --loop current";
    if (family == "DSpark" && loop == LoopRevision::April2026)
        return "a DSpark drafter (Markov walk) runs only in the current loop: the 2026-04 loop predates DSpark "
               "and has no proposal step; use --loop current";
    return {};
}

/// Why a drafter of `family` (drafterFamilyName), drafting from the anchor's row or not
/// (DrafterConfig::sampleFromAnchor), cannot run the DDTree loop, or "" if it can. The one
/// statement of that rule: runDDTree throws it, evaluations check it before their first prompt.
inline std::string treeRefusal(const std::string& family, bool anchorDrafts) {
    if (family == "DSpark")
        return "DDTree with a DSpark drafter is not implemented: its Markov bias makes each slot's distribution "
               "depend on the token drafted before it, so a tree needs the walk along every branch, which no "
               "reference defines; use the chain loop (no DDTree budgets)";
    if (anchorDrafts)
        return "DDTree with a drafter that drafts from the anchor's row (sample_from_anchor) is not implemented: "
               "the official DDTree code builds its tree from rows 1..B-1; use the chain loop";
    return {};
}

/// Why a drafter of `family`, drafting from the anchor's row or not, cannot run loop `loop`
/// with DDTree budgets (`withTrees`) or without: loopRefusal, then (withTrees) treeRefusal
/// with "--ddtree-budget: " before it; "" if it can. What `run` and `eval` check before any
/// work, so a refused run computes nothing first.
inline std::string runRefusal(const std::string& family, bool anchorDrafts, LoopRevision loop, bool withTrees) {
    if (auto why = loopRefusal(family, loop, anchorDrafts); !why.empty()) return why;
    if (auto why = treeRefusal(family, anchorDrafts); withTrees && !why.empty()) return "--ddtree-budget: " + why;
    return {};
}

/// Parses "current" or "2026-04"; throws Error naming the value and the accepted spellings.
inline LoopRevision parseLoopRevision(const std::string& name) {
    if (name == "current") return LoopRevision::Current;
    if (name == "2026-04") return LoopRevision::April2026;
    throw Error("loop: unknown loop revision '" + name + "' (expected 'current' or '2026-04')");
}

/// Settings of one DFlash run.
struct RunSettings {
    std::int64_t maxNewTokens = 128;
    bool ignoreEos = false;          ///< true: no stop tokens (the goldens' setting)
    LoopRevision loop = LoopRevision::Current;  ///< reference revision: verification loop + drafter rotary numerics
    double temperature = 0.0;        ///< 0 = greedy; > 0 samples (rule depends on `loop`)
    double topP = 1.0;               ///< sampling: nucleus filter, in (0, 1]; 1 = off
    int topK = 0;                    ///< sampling: keep the k most probable tokens; 0 = off
    std::uint64_t seed = 0;          ///< seed of the CPU sampler
    int recordTopK = 5;              ///< size of the recorded draft top-k per position (display only)
    int drafter = 0;                 ///< index of the loaded drafter to use
};

/// One verify step of the DFlash loop. Block position j (0..B-1) is absolute position
/// start + j; position 0 holds the anchor, positions 1..B-1 the drafted tokens. The current
/// loop clips the last block to the tokens still to produce (verify = min(B, P + max_new -
/// start)): the per-position vectors below then hold verify - 1 entries instead of B - 1, and
/// when the step's produced count is cut (clipped block, stop token), acceptedCount is the
/// produced count - 1 and bonusToken the last committed token, so acceptanceLength() is
/// always the step's acceptance length.
struct VerifyStep {
    std::int64_t start = 0;                  ///< absolute position of the anchor
    std::int64_t anchor = 0;
    std::vector<std::int64_t> drafted;       ///< [B-1] drafted tokens at positions 1..B-1
    std::vector<std::int64_t> targetTokens;  ///< [B] target's token for positions 1..B (row i predicts start+i+1)
    int acceptedCount = 0;                   ///< acc: leading drafted tokens equal to the target's (0..B-1)
    std::int64_t bonusToken = 0;             ///< targetTokens[acc], next anchor
    std::vector<float> draftProb;            ///< [B-1] drafter's probability of its drafted token
    std::vector<float> targetProbOfDraft;    ///< [B-1] target's probability of the drafted token
    std::vector<float> targetProbOfTarget;   ///< [B-1] target's probability of its own token
    std::vector<int> targetRankInDraft;      ///< [B-1] rank of the target's token in the draft top-k, -1 if absent
    std::vector<std::vector<std::int64_t>> draftTopIds;  ///< [B-1][k] draft top-k ids per position
    std::vector<std::vector<float>> draftTopProbs;       ///< [B-1][k] their probabilities
    /// Rejection sampling only (current loop, temperature > 0), else empty; [B-1] each:
    /// p and q of each drafted token under the filtered, tempered target and drafter
    /// distributions, the test's outcome (1 accepted, 0 rejected, -1 not tested), and
    /// sum_x min(p, q) at that position (its expected acceptance given the prefix).
    std::vector<float> rejectionP, rejectionQ;
    std::vector<int> rejectionTested;
    std::vector<float> rejectionAcceptProb;
    /// DFlash2 only (its candidate selector picks `drafted`), else empty; [B-1] each: the
    /// argmax of the drafter's logits at each position (what a DFlash drafter would have
    /// drafted there), and the selector's probability of its drafted token among its top-k
    /// candidates (softmax of the scores at the run's temperature, 1 at T = 0; the q that
    /// rejection sampling tests against).
    /// DSpark (its Markov walk drafts `drafted`) fills the same two: the argmax of the
    /// drafter's logits before the Markov bias, and the walk's probability of its drafted token.
    std::vector<std::int64_t> drafterArgmax;
    std::vector<float> selectorProb;
    /// DSpark with a confidence head only, else empty; [D]: the head's predicted acceptance
    /// probability of each drafted token (sigmoid of its logit; the calibration view's x).
    std::vector<float> confidence;
    int acceptanceLength() const { return acceptedCount + 1; }
};

/// Peak bytes held by tensors on one device of a run's placement (CUDA caching-allocator
/// statistics, weights included); -1 on the CPU.
struct DevicePeak {
    std::string device;  ///< as LoadOptions::device names it ("cuda:1")
    std::int64_t bytes = -1;
};

/// Wall-clock timing of a run, milliseconds (host clock; each phase ends at a point where
/// the host waits for the device anyway).
struct RunTiming {
    double prefillMs = 0;  ///< target prefill + first anchor
    double decodeMs = 0;   ///< all draft + verify steps
    double totalMs = 0;
    /// Peak bytes held by tensors on the device during the run, weights included (CUDA
    /// caching-allocator statistics); -1 on the CPU. With several devices: the largest of
    /// peakPerDevice.
    std::int64_t peakDeviceBytes = -1;
    /// The peak of each distinct device of the target's placement, in placement order.
    std::vector<DevicePeak> peakPerDevice;
    /// How the verify steps ran (LoadOptions::cudaGraphs): "on: 31 of 32 verify steps
    /// replayed (capture 52.1 ms)", "off (the device is the CPU)"; empty where not recorded.
    std::string cudaGraphs;
};

/// Everything one DFlash run produced.
struct RunResult {
    std::vector<std::int64_t> promptIds;
    std::vector<std::int64_t> outputIds;          ///< prompt + generated (truncated as the reference)
    std::vector<int> acceptanceLengths;           ///< per step, acc + 1
    double tau = 0;                               ///< mean acceptance length (bonus included)
    std::int64_t blockSize = 0;
    /// perPositionAcceptance[j], j = 0..B-1: fraction of steps whose accepted prefix reaches
    /// block position j (acc >= j). j = 0 is 1 by definition (the anchor is always committed).
    std::vector<double> perPositionAcceptance;
    /// acceptanceHistogram[n], n = 0..B: number of steps with acceptance length n (n=0 unused).
    std::vector<std::int64_t> acceptanceHistogram;
    std::vector<VerifyStep> steps;
    bool stoppedAtEos = false;
    RunSettings settings;
    RunTiming timing;
    std::string device, dtype;
    /// Devices per layer range (ModelSummary::placement of the target), empty if unknown.
    std::string placement;
};

/// Output of one target forward over a prompt (HF conventions).
struct ForwardResult {
    std::vector<std::int64_t> ids;
    std::int64_t numLayers = 0, hiddenSize = 0, vocabSize = 0;
    std::vector<float> hiddenStates;  ///< [L+1, T, H]: 0 = embeddings, L = after the final norm
    std::vector<float> logits;        ///< [T, V]
    /// MoE targets only (0 / empty otherwise): the router's choices of every decoder layer,
    /// [L, T, expertsPerToken] expert indices by descending weight (the order of HF's
    /// `torch.topk`), -1 for a layer with a dense MLP (Qwen3-MoE's `mlp_only_layers`).
    std::int64_t numExperts = 0, expertsPerToken = 0;
    std::vector<std::int64_t> expertChoices;
};

/// One drafter call on a fresh cache after prefilling the target on the prompt: context =
/// all prompt features, block = [anchor, MASK x (B-1)], positions 0..T+B-1.
struct DraftBlockResult {
    std::vector<std::int64_t> promptIds;
    std::int64_t anchor = 0;
    std::int64_t blockSize = 0, hiddenSize = 0, vocabSize = 0;
    std::vector<float> draftHidden;  ///< [B, H] after the drafter's final norm
    /// [D, V]: D draft slots (B-1, or B for a drafter that drafts from the anchor's row); row j
    /// predicts block position j + 1; without DSpark's Markov bias.
    std::vector<float> draftLogits;
    /// DSpark only (empty otherwise): the greedy Markov walk over this block: its tokens [D],
    /// the slots' logits with the bias [D, V], the confidence head's probabilities [D].
    std::vector<std::int64_t> markovPath;
    std::vector<float> markovLogits;
    std::vector<float> confidence;
    /// DFlash2 only (empty otherwise): the candidate selector's walk over this block, at
    /// SelectorProbe::temperature (greedy by default) or along SelectorProbe::path.
    std::int64_t selectorTopK = 0;
    std::vector<std::int64_t> selectorPath;        ///< [B-1] the selector's token per position
    std::vector<std::int64_t> selectorCandidates;  ///< [B-1, k] top-k of the logits, descending
    std::vector<float> selectorScores;             ///< [B-1, k] unary + pairwise score per candidate
    std::vector<float> selectorQ;                  ///< [B-1, k] softmax(scores / T), at T > 0 only
};

/// How Engine::draftBlock walks a DFlash2 drafter's candidate selector: at `temperature`
/// (0: argmax; > 0: draws with a CPU generator seeded by `seed`), or along `path` ([B-1]
/// tokens, each among its position's candidates) if that is given.
struct SelectorProbe {
    double temperature = 0.0;
    std::uint64_t seed = 0;
    std::vector<std::int64_t> path;
};

/// One DDTree step: the tree built from the drafter's distributions, the target's choice at
/// every node (one tree-verify forward), and the accepted path (DFLASH.md section 5).
struct TreeStep {
    std::int64_t start = 0;                    ///< absolute position of the root (the anchor)
    std::vector<std::int64_t> tokens;          ///< [N+1] node tokens, node 0 = root = anchor
    std::vector<int> depths;                   ///< [N+1], root 0; node position = start + depth
    std::vector<int> parents;                  ///< [N+1], root -1
    std::vector<float> drafterProbs;           ///< [N+1] drafter's probability of each node's token (root 1)
    std::vector<std::int64_t> targetChoice;    ///< [N+1] target's token after each node
    std::vector<int> acceptedPath;             ///< node indices from the root along matching children
    std::int64_t bonusToken = 0;               ///< targetChoice at the last accepted node
    int acceptanceLength() const { return static_cast<int>(acceptedPath.size()); }  ///< root included
};

/// A DDTree run at one budget.
struct TreeRunResult {
    int budget = 0;
    std::vector<std::int64_t> promptIds;
    std::vector<std::int64_t> outputIds;
    std::vector<int> acceptanceLengths;  ///< per step: accepted path length, root included
    double tau = 0;                      ///< mean acceptance length
    std::vector<TreeStep> steps;
    bool stoppedAtEos = false;
    RunTiming timing;
};

/// Teacher-forced drafts along a fixed token sequence (usually the target's greedy
/// continuation): at every anchor position a the drafter sees the target features of
/// positions [0, a) and the block [sequence[a], MASK...] at positions a..a+B-1, the
/// inference call, unless `convention` overrides it (ProbeConvention: the anchor's own
/// feature in the context, block positions, taps, per-layer attention). Nothing is
/// verified; drafts are compared with the sequence (probe_statistics.h).
struct TeacherForcedDrafts {
    std::vector<std::int64_t> sequence;
    std::int64_t promptLength = 0;
    /// W: the positions a block covers, the anchor and its D = W - 1 drafts (the drafter's B,
    /// or B + 1 when the anchor's row drafts: DSpark's sample_from_anchor).
    std::int64_t blockSize = 0;
    ProbeConvention convention;                    ///< what the drafter call ran under
    std::vector<std::int64_t> anchors;             ///< anchor positions, promptLength..len-W
    std::vector<std::vector<std::int64_t>> drafts; ///< [anchors][D]: draft for positions a+1..a+D
    /// [labelShift 0, 1][anchors][D]: the drafter's probability (softmax of its logits with
    /// DSpark's Markov bias, the sequence's tokens as predecessors, float32) of the sequence's
    /// token at a + 1 + j + labelShift; 0 past the sequence.
    std::vector<std::vector<float>> sequenceProbs[2];
};

/// The drafter's attention weights for one verify step, recomputed from the run's committed
/// tokens (the context at that step is every committed position before the anchor).
struct DrafterAttention {
    int step = -1;
    int drafter = -1;  ///< engine index of the drafter it was computed with
    std::int64_t numLayers = 0, numHeads = 0, numQueries = 0, numKeys = 0;
    std::vector<std::int64_t> queryPositions;  ///< [B] absolute positions of the block rows
    std::vector<std::int64_t> keyPositions;    ///< [K] context positions 0..start-1, then the block's
    std::vector<std::int64_t> keyTokens;       ///< [K] token at each key position (MASK for block rows > 0)
    std::vector<float> weights;                ///< [layers, heads, queries, keys], rows sum to 1
    float at(std::int64_t layer, std::int64_t head, std::int64_t q, std::int64_t k) const {
        return weights[static_cast<std::size_t>(((layer * numHeads + head) * numQueries + q) * numKeys + k)];
    }
};

/// Per-position statistics of one hidden-state series over a committed sequence.
struct HiddenSeriesStats {
    std::string name;          ///< e.g. "target layer 4 (hidden_states[5])" or "drafter context"
    std::int64_t layerId = -1; ///< tapped target layer id; -1 for the drafter's projected context
    std::string layerType;     ///< e.g. "full_attention"; "fc + hidden_norm" for the drafter
    std::vector<float> rms, mean, std, maxAbs;  ///< [T] over the hidden dimension
    std::vector<double> histogramEdges;         ///< [bins+1] over all values of the series
    std::vector<std::int64_t> histogramCounts;  ///< [bins], finite values only
    std::int64_t nonFiniteCount = 0;            ///< NaN/inf values in the series (a broken checkpoint)
    /// Positions whose RMS exceeds median + 5 * 1.4826 * MAD of the series' RMS (robust z > 5).
    std::vector<std::int64_t> outlierPositions;
    /// MoE targets only (0 / empty otherwise): the experts the router of the layer that
    /// wrote this series chose for each position, [T, k] by descending weight (HF's
    /// `torch.topk` order), out of `numExperts`.
    std::int64_t numExperts = 0;
    std::vector<std::int64_t> expertChoices;
    /// Tokens routed to each expert, [numExperts] (a token counts once per slot it chose).
    std::vector<std::int64_t> expertCounts() const {
        std::vector<std::int64_t> n(static_cast<std::size_t>(numExperts), 0);
        for (const auto e : expertChoices)
            if (e >= 0 && e < numExperts) ++n[static_cast<std::size_t>(e)];
        return n;
    }
};

/// Hidden-state statistics of a committed sequence (a prompt, or a run's prompt + generated
/// tokens): each tapped target layer, then the drafter's projected context (after fc +
/// hidden_norm). Positions 0..promptLength-1 are the prompt, promptLength..T-1 generated.
struct HiddenStateStats {
    std::vector<std::int64_t> ids;
    /// Prompt positions (== ids.size() when nothing generated is covered); -1: not recorded,
    /// every position counts as prompt.
    std::int64_t promptLength = -1;
    bool isGenerated(std::int64_t position) const { return promptLength >= 0 && position >= promptLength; }
    std::vector<HiddenSeriesStats> series;
};

}  // namespace draftscope
