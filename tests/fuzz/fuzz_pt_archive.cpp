// Fuzz target: a whole torch.save file (zip archive) through torchpickle::Archive, then every
// tensor it describes loaded from its storage record. libtorch's zip reader (miniz) is not
// instrumented: coverage guides only through draftscope's code; a crash inside libtorch is
// reported but is libtorch's (docs/RELIABILITY.md "Fuzzing").

#include "draftscope/errors.h"
#include "fuzz_support.h"
#include "io/torch_pickle.h"

namespace {

using draftscope::torchpickle::Archive;
using draftscope::torchpickle::Value;

void loadTensors(Archive& ar, const Value& v, int depth) {
    if (depth > 10000) return;
    if (v.isTensor()) (void)ar.tensor(v);
    if (!v.c) return;
    for (const auto& item : v.c->items) loadTensors(ar, item, depth + 1);
    for (const auto& entry : v.c->entries) loadTensors(ar, entry.second, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const draftscope::fuzz::ScratchDir dir;
    const std::string path = dir.write("checkpoint.pt", data, size);
    try {
        Archive ar(path);
        loadTensors(ar, ar.root(), 0);
    } catch (const draftscope::Error&) {
    }
    return 0;
}
