#pragma once
// The engine facade: the only backend interface the CLI and the GUI use. Torch-free
// header (pimpl); all results are plain structs from run_types.h.

#include "draftscope/attention_layout.h"
#include "draftscope/ddtree.h"
#include "draftscope/run_types.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace draftscope {

class Tokenizer;

/// Where and in which precision models run (docs/ENGINE.md, "Placement across devices").
struct LoadOptions {
    /// "cpu", "cuda" or "cuda:N"; a comma-separated list ("cuda:0,cuda:1") splits the target's
    /// layers across those devices (one placement group each; "cpu,cpu" makes two groups on
    /// the CPU with the same boundary copies); "auto" = every visible GPU (else the CPU).
    std::string device = "cpu";
    std::string dtype = "float32";  ///< "float32" or "bfloat16"
    int threads = 0;                ///< CPU intra-op threads, 0 = all cores
    /// Usable bytes per device of `device` (parseMemoryLimits); empty = a GPU's free memory,
    /// the CPU unlimited.
    std::vector<std::uint64_t> deviceMemory;
    /// Forced boundaries: device g+1 starts after decoder layer splitAfterLayers[g]
    /// (0-based; one fewer than devices). Empty = planned from the sizes.
    std::vector<std::int64_t> splitAfterLayers;
    /// Device of the drafters and the tapped features (one of `device`'s entries; the first
    /// match); empty = the device with the most room left after the target.
    std::string drafterDevice;
    /// Context (tokens) whose KV cache the memory plan reserves on each layer's device.
    std::int64_t maxContext = 4096;
    /// DFlash verify steps as captured CUDA graphs (docs/ENGINE.md, "CUDA graphs"): "auto"
    /// (where the device and the target allow; RunTiming::cudaGraphs says why not), "on"
    /// (refused at load where impossible) or "off".
    std::string cudaGraphs = "auto";
    /// MXFP4-packed experts (gpt-oss; docs/ENGINE.md, "gpt-oss targets"): "packed" keeps them
    /// packed on the device and dequantises each chosen expert per forward (4.25 bits per
    /// weight: what fits gpt-oss-20b on a 24 GB card); "unpacked" dequantises them to the
    /// compute dtype at load (fast, 3.8x the memory); "auto" unpacks where the placement plan
    /// fits with them unpacked, else keeps them packed (the CPU has no limit in the plan, so
    /// there it always unpacks). Ignored for other checkpoints.
    std::string mxfp4Experts = "auto";
};

/// What was loaded, for logs, the inspector and result files.
struct ModelSummary {
    std::string directory;
    std::string architecture;
    std::int64_t numLayers = 0, hiddenSize = 0, vocabSize = 0;
    std::int64_t numHeads = 0, numKvHeads = 0, headDim = 0;
    std::int64_t parameters = 0;
    std::vector<std::string> layerTypes;
    std::vector<std::string> unexpectedTensors;  ///< in the checkpoint, not used
    std::vector<std::string> ignoredTensors;     ///< e.g. model.visual.*, mtp.*
    std::vector<std::string> warnings;
    /// How quantised weights are held, e.g. "MXFP4 experts, dequantised to bfloat16 at load"
    /// (LoadOptions::mxfp4Experts); empty for unquantised checkpoints. Targets only.
    std::string quantization;
    std::string source;  ///< how the weights were read when not a plain checkpoint directory
    /// The config.json the model was read with (a .pt's may sit elsewhere); not stored in
    /// results files.
    std::string configFile;
    // Drafters only:
    /// The drafter family (drafterFamilyName: "DFlash", "DFlash2") and what sets it apart, e.g.
    /// "conv kernel 2, groups of 16 around attention and MLP; candidate selector rank 16, top-8".
    std::string family;
    std::string familyDetail;
    std::int64_t blockSize = 0;
    /// DrafterConfig::sampleFromAnchor: block_size tokens drafted per block, block_size + 1 verified.
    bool draftsFromAnchor = false;
    /// The checkpoint is in the speculators format: its config names the taps
    /// `aux_hidden_state_layer_ids` (= targetLayerIds + 1). Not stored in results files.
    bool speculatorsFormat = false;
    std::int64_t maskTokenId = -1;
    std::vector<std::int64_t> targetLayerIds;
    bool targetLayerIdsDerived = false;
    /// Per-layer attention layout (DrafterConfig::layers, DFLASH.md section 9); describe
    /// it with describeLayout() (draftscope/masks.h).
    std::vector<LayerAttention> layout;
    // Targets only (docs/ENGINE.md, "Placement across devices"):
    std::vector<std::string> devices;  ///< the placement groups, in order
    std::string placement;             ///< describePlacement(): devices per layer range
};

/// Whether models can load on device "cuda": the libtorch build has CUDA and a device is
/// visible (the same test LoadOptions::device "cuda" passes at load).
bool cudaAvailable();

/// libtorch's intra-op CPU thread count on the calling thread (per thread under OpenMP; an
/// Engine applies its LoadOptions::threads to the thread that calls it).
int intraOpThreads();

/// Owns one target and any number of drafters. Not thread-safe: the app's controller
/// owns it on one worker thread. Every method throws draftscope::Error on bad input.
class Engine {
public:
    Engine();
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    /// Loads a target from an HF checkpoint directory (config.json + safetensors, optional
    /// tokenizer.json). Replaces the current target and unloads all drafters. Throws
    /// InvalidSetting for bad `options` (validate(LoadOptions)) before anything loads.
    ModelSummary loadTarget(const std::string& dir, const LoadOptions& options = {});
    /// Loads a DFlash drafter for the current target and appends it; its index is
    /// drafterCount() - 1. `path` is a checkpoint directory (config.json + safetensors) or
    /// a torch.save training checkpoint (.pt; see training_checkpoint.h for the nestings and
    /// prefixes understood and what is refused) whose config is `configPath`, or else the
    /// config.json beside it. Throws Error if no target is loaded, the config or weights
    /// are missing or invalid, or the drafter does not fit the target.
    ModelSummary loadDrafter(const std::string& path, const std::string& configPath = {});
    int drafterCount() const;
    /// Unloads every drafter from index `count` on, keeping the first `count` (a caller that
    /// appended drafters, e.g. diagnoseDrafters(), restores the loaded set). Throws Error for
    /// a negative `count`; a count at or above drafterCount() changes nothing.
    void truncateDrafters(int count);
    bool hasTarget() const;
    const ModelSummary& targetSummary() const;
    const ModelSummary& drafterSummary(int index) const;

    /// The target's tokenizer, or nullptr if its directory has no tokenizer.json.
    const Tokenizer* tokenizer() const;
    /// Token ids of a prompt (text through the tokenizer, optionally as a ChatML user turn).
    /// Throws Error for an empty prompt, ids outside the vocabulary, or text without a tokenizer.
    std::vector<std::int64_t> encodePrompt(const PromptSpec& prompt) const;
    /// Stop tokens used unless RunSettings::ignoreEos: config eos_token_id(s),
    /// generation_config.json eos_token_id(s) and the tokenizer's eos token.
    const std::vector<std::int64_t>& stopTokenIds() const;

    /// Runs the DFlash loop of revision settings.loop (DFLASH.md sections 4 and 10; current
    /// by default, docs/ENGINE.md "Verification loop") with drafter settings.drafter, whose
    /// rotary numerics follow the same revision (LoopRevision).
    /// `progress` is called after every verify step; `cancel` is polled between steps and
    /// makes the call throw Cancelled. Throws InvalidSetting for invalid settings
    /// (validate(RunSettings), settings_validation.h).
    RunResult run(const PromptSpec& prompt, const RunSettings& settings,
                  const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);
    /// Runs the greedy DDTree loop (DFLASH.md section 5) with `budget` tree nodes per step,
    /// using settings.drafter, maxNewTokens and ignoreEos (temperature must be 0);
    /// settings.loop selects the drafter's rotary numerics only (the tree loop has one
    /// revision). On hybrid targets the Gated DeltaNet state follows each tree path
    /// (docs/ENGINE.md). Throws InvalidSetting for invalid settings (validate(RunSettings)),
    /// Error for temperature > 0 or a negative budget (budget 0 verifies the anchor alone).
    TreeRunResult runTree(const PromptSpec& prompt, const RunSettings& settings, int budget,
                          const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);
    /// The DDTree of one drafter call after prefilling the prompt (the call of draftBlock).
    DraftTree draftTree(const PromptSpec& prompt, int budget, LoopRevision revision, int drafter = 0);
    /// Plain greedy decoding of the target (no drafter): prompt + maxNewTokens ids, ending
    /// early at a stop token unless ignoreEos. The greedy DFlash output must equal this.
    std::vector<std::int64_t> greedy(const PromptSpec& prompt, std::int64_t maxNewTokens, bool ignoreEos,
                                     const std::atomic<bool>* cancel = nullptr);
    /// Teacher-forced drafts of drafter `drafterIndex` at every anchor a in
    /// [promptLength, sequence.size() - W] (W = the verify width: block_size, + 1 for a drafter
    /// drafting from the anchor's row; see TeacherForcedDrafts) under `convention`
    /// (ProbeConvention; its labelShift is scoring only and does not change the calls), with
    /// the rotary numerics of `revision`. One target forward over `sequence` (taps
    /// probeFeatureIndices()), then one drafter call per anchor on a growing draft cache
    /// (layout probeLayout(), block at a + positionOffset). Throws Error on ids outside the
    /// vocabulary, promptLength < 1, a sequence too short for one block, or a convention
    /// the drafter cannot run (a tap outside the target, an override for a missing layer);
    /// Cancelled if `cancel` becomes true.
    TeacherForcedDrafts teacherForcedDrafts(const std::vector<std::int64_t>& sequence, std::int64_t promptLength,
                                            int drafterIndex, const ProbeConvention& convention, LoopRevision revision,
                                            const std::atomic<bool>* cancel = nullptr);
    /// Target forward over the prompt: every hidden state (HF convention) and all logits.
    ForwardResult forward(const PromptSpec& prompt);
    /// Runs successive chunks of token ids through one target cache, as successive HF
    /// `model(chunk, past_key_values=cache)` calls: the first chunk is the prefill, each
    /// later chunk continues at the next positions (a 1-token chunk is a decode step, a
    /// longer one a verify block; on hybrid targets this selects HF's recurrent or chunked
    /// Gated DeltaNet path). Returns, per chunk, its ids, every hidden state [L+1, T, H]
    /// (HF convention) and all logits [T, V]. Throws Error if no target is loaded, a chunk
    /// is empty or holds ids outside the vocabulary, or the total exceeds
    /// max_position_embeddings.
    std::vector<ForwardResult> forwardSteps(const std::vector<std::vector<std::int64_t>>& chunks);
    /// One drafter call after prefilling the prompt (see DraftBlockResult), with the rotary
    /// numerics of reference revision `revision` (goldens.json: April2026; the variant
    /// goldens: Current). For a DFlash2 drafter also the candidate selector's walk over the
    /// block (greedy, or as `selector` asks; ignored for DFlash drafters).
    DraftBlockResult draftBlock(const PromptSpec& prompt, LoopRevision revision, int drafter = 0,
                                const SelectorProbe& selector = {});

    /// The drafter's attention weights at verify step `step` of `run` (which must come from
    /// this target and drafter): the target is prefilled on the committed tokens before the
    /// step's anchor and the drafter called once on a fresh cache, with the rotary numerics
    /// of the run's revision (run.settings.loop). Throws Error if the step is out of range
    /// or the run's tokens are outside the vocabulary.
    DrafterAttention drafterAttention(const RunResult& run, int step, int drafter = 0);
    /// Hidden-state statistics of a committed sequence, from one target forward over it:
    /// every tapped layer of `drafter` and the drafter's projected context (fc +
    /// hidden_norm). histogramBins bins per series. `sequence` is a prompt, or (as ids) a
    /// run's outputIds; its first `promptLength` positions are marked as prompt, the rest
    /// as generated (-1: all are prompt). Throws Error for histogramBins < 1 or a
    /// promptLength above the sequence length.
    HiddenStateStats hiddenStateStats(const PromptSpec& sequence, int drafter = 0, int histogramBins = 60,
                                      std::int64_t promptLength = -1);

private:
    struct Impl;
    std::unique_ptr<Impl> d_;
};

}  // namespace draftscope
