#pragma once
// The weight map of a sharded checkpoint (`model.safetensors.index.json`, as written by HF
// save_pretrained): which shard file holds which tensor. Torch-free, so it is fuzzed
// (tests/fuzz) and tested on its own; WeightLoader opens the shards it names.

#include <string>
#include <utility>
#include <vector>

namespace draftscope {

/// Parses the text of a `model.safetensors.index.json` (`indexPath` names it in errors) and
/// returns its `weight_map` as (tensor name, shard file name) pairs in file order. The index
/// is untrusted: every shard must be a plain file name inside the checkpoint directory (no
/// path separator, not "." or ".."). Other top-level keys (`metadata`) are ignored. Throws
/// Error naming the file for invalid JSON, JSON nested deeper than 256 levels, a missing or
/// non-object `weight_map`, an entry that is not a string, or a shard that is not a plain
/// file name (the message names the tensor and the shard).
std::vector<std::pair<std::string, std::string>> parseShardIndex(const std::string& text,
                                                                  const std::string& indexPath);

}  // namespace draftscope
