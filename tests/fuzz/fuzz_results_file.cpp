// Fuzz target: a results file (docs/RESULTS_FORMAT.md) through readResultsFile. The input is
// the safetensors header JSON, one NUL byte, then the data section: the harness writes the
// 8-byte header length itself, so mutations of the JSON document (which holds the results
// in __metadata__) reach the results reader instead of failing the length check. A results
// file is <len><header><data>; tools/fuzz-seeds.sh converts real files to this form.

#include "draftscope/errors.h"
#include "draftscope/results_file.h"
#include "fuzz_support.h"

#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const draftscope::fuzz::ScratchDir dir;
    const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
    const std::size_t headerLen = nul ? static_cast<std::size_t>(nul - data) : size;
    std::string file(8, '\0');
    for (int i = 0; i < 8; ++i) file[static_cast<std::size_t>(i)] = static_cast<char>((std::uint64_t{headerLen} >> (8 * i)) & 0xff);
    file.append(reinterpret_cast<const char*>(data), headerLen);
    if (nul) file.append(reinterpret_cast<const char*>(nul + 1), size - headerLen - 1);
    const std::string path = dir.write("results.dsresults", file.data(), file.size());
    try {
        const auto r = draftscope::readResultsFile(path);
        for (const auto& p : r.prompts)
            for (const auto& d : p.drafters)
                for (const auto id : d.run.outputIds) (void)r.pieceOf(id);
    } catch (const draftscope::Error&) {
    }
    return 0;
}
