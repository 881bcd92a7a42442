#pragma once
// Training checkpoints written by torch.save (a zip archive holding a pickle and tensor
// records), read with libtorch's zip reader and draftscope's own strict unpickler
// (torch_pickle.h): only tensors, dicts, lists, tuples, strings, bytes, numbers, booleans
// and None are accepted; any other Python class is refused.

#include <ATen/ATen.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace draftscope {

/// The model state dict found inside a training checkpoint.
struct TrainingCheckpoint {
    std::string path;
    std::map<std::string, at::Tensor> tensors;  ///< names with wrapper prefixes stripped, CPU, stored dtype
    std::string nestedUnder;                    ///< e.g. "model" or "model.module"; empty = top level
    std::string strippedPrefix;                 ///< e.g. "module._orig_mod."; empty = none
    std::vector<std::string> otherEntries;      ///< top-level keys beside the state dict (optimizer, step, ...)
};

/// Reads `path` (torch.save zip format). The state dict is the first dict whose values are
/// all tensors, found at the top level or under the keys `model`, `state_dict`, `module`,
/// `draft_model`, `model_state_dict`, searched recursively in that order. Prefixes that
/// every key carries, `module.` and `_orig_mod.` (DDP, torch.compile), are stripped, in
/// any order and number. Throws Error naming the file when it is not a torch.save zip
/// archive (including the legacy pre-1.6 format), when the pickle holds a class other than
/// tensors and containers (such objects are not loaded: a checkpoint is untrusted input),
/// when no state dict is found (listing the top-level keys), or when a state-dict entry
/// is not a floating-point or integer tensor.
TrainingCheckpoint readTrainingCheckpoint(const std::string& path);

/// A temporary checkpoint directory (config.json + model.safetensors) made from a training
/// checkpoint, so the regular loaders read it; removed with this object.
class StagedCheckpointDir {
public:
    /// Writes `checkpoint`'s tensors (stored dtypes) and a copy of `configPath` into a new
    /// directory under the system temp dir. Throws Error if the config is unreadable or a
    /// file cannot be written (naming the path).
    StagedCheckpointDir(const TrainingCheckpoint& checkpoint, const std::string& configPath);
    ~StagedCheckpointDir();
    StagedCheckpointDir(const StagedCheckpointDir&) = delete;
    StagedCheckpointDir& operator=(const StagedCheckpointDir&) = delete;
    const std::string& path() const { return dir_; }

private:
    std::string dir_;
};

/// True if `path` names a regular file that looks like a torch.save checkpoint (zip magic).
bool isTrainingCheckpointFile(const std::string& path);

/// The training step a torch.save checkpoint records: the first top-level integer entry
/// among "global_step", "step", "iteration", "iter", "train_step" (a trainer's
/// `torch.save({"model": ..., "step": n}, path)`), or nullopt if it has none. Only the
/// pickle is read, no tensor. Throws Error as readTrainingCheckpoint for a file that is not
/// a torch.save archive or holds a refused Python class.
std::optional<std::int64_t> trainingCheckpointStep(const std::string& path);

}  // namespace draftscope
