// Fuzz target: the data.pkl record of a torch.save checkpoint through draftscope's own
// unpickler (Archive::fromPickle: no zip archive, so mutations reach the pickle machine
// instead of failing the zip's CRC checks), then the whole value tree walked.

#include "draftscope/errors.h"
#include "fuzz_support.h"
#include "io/torch_pickle.h"

namespace {

using draftscope::torchpickle::Archive;
using draftscope::torchpickle::Value;

void walk(const Archive& ar, const Value& v, int depth) {
    if (depth > 10000) return;
    (void)draftscope::torchpickle::kindName(v.kind);
    if (v.isTensor()) {
        const auto& t = ar.tensorInfo(v);
        if (t.size.size() != t.stride.size()) __builtin_trap();
    }
    if (!v.c) return;
    for (const auto& item : v.c->items) walk(ar, item, depth + 1);
    for (const auto& [key, value] : v.c->entries) {
        walk(ar, key, depth + 1);
        walk(ar, value, depth + 1);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto ar = Archive::fromPickle(draftscope::fuzz::asString(data, size), "fuzz.pt");
        walk(*ar, ar->root(), 0);
    } catch (const draftscope::Error&) {
    }
    return 0;
}
