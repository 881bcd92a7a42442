// Fuzz target: a whole .safetensors file (8-byte header length, JSON header, data section)
// through SafetensorsFile::open, then every tensor read back. Any exception other than
// draftscope::Error, and any sanitizer report, is a finding.

#include "draftscope/errors.h"
#include "draftscope/safetensors.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const draftscope::fuzz::ScratchDir dir;
    const std::string path = dir.write("model.safetensors", data, size);
    try {
        const auto file = draftscope::SafetensorsFile::open(path);
        for (const auto& t : file->tensors()) {
            if (file->find(t.name) != &file->at(t.name)) __builtin_trap();
            if (draftscope::isFloatingPoint(t.dtype)) (void)file->readFloat32(t.name);
            else (void)file->readInt64(t.name);
            (void)draftscope::shapeString(t.shape);
        }
    } catch (const draftscope::Error&) {
    }
    return 0;
}
