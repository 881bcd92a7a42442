// Fuzz target: the data.pkl record of a torch.save checkpoint through draftscope's own
// unpickler (Archive::fromPickle: no zip archive, so mutations reach the pickle machine
// instead of failing the zip's CRC checks), then the whole value tree walked.

#include "draftscope/errors.h"
#include "fuzz_support.h"
#include "io/torch_pickle.h"

#include <unordered_set>

namespace {

using draftscope::torchpickle::Archive;
using draftscope::torchpickle::Value;

/// Visits each container once: DUP and the memo share containers, so a walk of the tree
/// they unfold into would take time exponential in the pickle's length (a 92-byte pickle
/// of DUPs and TUPLE3s ran for over 10 minutes in the long run; the unpickler itself is
/// linear, and draftscope's readers look only a few levels deep).
void walk(const Archive& ar, const Value& v, int depth, std::unordered_set<const void*>& seen) {
    if (depth > 10000) return;
    (void)draftscope::torchpickle::kindName(v.kind);
    if (v.isTensor()) {
        const auto& t = ar.tensorInfo(v);
        if (t.size.size() != t.stride.size()) __builtin_trap();
    }
    if (!v.c || !seen.insert(v.c).second) return;
    for (const auto& item : v.c->items) walk(ar, item, depth + 1, seen);
    for (const auto& [key, value] : v.c->entries) {
        walk(ar, key, depth + 1, seen);
        walk(ar, value, depth + 1, seen);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto ar = Archive::fromPickle(draftscope::fuzz::asString(data, size), "fuzz.pt");
        std::unordered_set<const void*> seen;
        walk(*ar, ar->root(), 0, seen);
    } catch (const draftscope::Error&) {
    }
    return 0;
}
