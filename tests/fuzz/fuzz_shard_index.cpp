// Fuzz target: the text of a sharded checkpoint's model.safetensors.index.json through
// parseShardIndex (the torch-free part of WeightLoader; opening the shards is
// fuzz_safetensors' job). Every shard it returns must be a plain file name.

#include "checkpoints/shard_index.h"
#include "draftscope/errors.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto map = draftscope::parseShardIndex(draftscope::fuzz::asString(data, size),
                                                     "model.safetensors.index.json");
        for (const auto& [tensor, shard] : map)
            if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
                __builtin_trap();  // the untrusted index escaped the checkpoint directory
    } catch (const draftscope::Error&) {
    }
    return 0;
}
