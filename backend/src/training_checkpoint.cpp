#include "training_checkpoint.h"

#include "draftscope/errors.h"
#include "draftscope/safetensors.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

namespace draftscope {

namespace {

namespace fs = std::filesystem;

const char* const kNestingKeys[] = {"model", "state_dict", "module", "draft_model", "model_state_dict"};
const char* const kWrapperPrefixes[] = {"module.", "_orig_mod."};

std::string firstLine(const std::string& s) {
    const auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
}

std::string describe(const c10::IValue& v) {
    if (v.isTensor()) return "tensor";
    if (v.isGenericDict()) return "dict";
    if (v.isList()) return "list";
    if (v.isTuple()) return "tuple";
    if (v.isString()) return "string";
    if (v.isInt()) return "int";
    if (v.isDouble()) return "float";
    if (v.isBool()) return "bool";
    if (v.isNone()) return "None";
    return v.tagKind();
}

bool isStateDict(const c10::IValue& v) {
    if (!v.isGenericDict()) return false;
    const auto d = v.toGenericDict();
    if (d.empty()) return false;
    for (const auto& kv : d)
        if (!kv.key().isString() || !kv.value().isTensor()) return false;
    return true;
}

/// Depth-first search for the state dict; `where` receives the key path.
std::optional<c10::IValue> findStateDict(const c10::IValue& v, std::string& where, int depth) {
    if (isStateDict(v)) return v;
    if (!v.isGenericDict() || depth > 4) return std::nullopt;
    const auto d = v.toGenericDict();
    for (const char* key : kNestingKeys) {
        const auto it = d.find(c10::IValue(std::string(key)));
        if (it == d.end()) continue;
        std::string sub;
        if (auto found = findStateDict(it->value(), sub, depth + 1)) {
            where = sub.empty() ? key : std::string(key) + "." + sub;
            return found;
        }
    }
    return std::nullopt;
}

}  // namespace

bool isTrainingCheckpointFile(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return false;
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

TrainingCheckpoint readTrainingCheckpoint(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw Error("training checkpoint not found (or not a regular file): '" + path + "'");
    const auto size = fs::file_size(path, ec);
    if (ec) throw Error("cannot read '" + path + "': " + ec.message());
    {
        std::ifstream in(path, std::ios::binary);
        char magic[4] = {};
        in.read(magic, 4);
        if (in.gcount() == 4 && static_cast<unsigned char>(magic[0]) == 0x80)
            throw Error("'" + path + "' is a legacy (pre-1.6, non-zip) torch.save file, which draftscope does not read: "
                        "re-save it with torch.save(torch.load(path, weights_only=True), path) or as safetensors");
        if (!isTrainingCheckpointFile(path))
            throw Error("'" + path + "' is not a torch.save checkpoint (no zip archive signature); expected a .pt file "
                        "written by torch.save, or a directory with model.safetensors");
    }
    std::vector<char> bytes(static_cast<std::size_t>(size));
    {
        std::ifstream in(path, std::ios::binary);
        in.read(bytes.data(), static_cast<std::streamsize>(size));
        if (static_cast<std::uintmax_t>(in.gcount()) != size) throw Error("cannot read all of '" + path + "'");
    }
    c10::IValue root;
    try {
        root = torch::jit::pickle_load(bytes);
    } catch (const c10::Error& e) {
        const std::string msg = firstLine(e.what_without_backtrace());
        if (msg.find("nknown") != std::string::npos || msg.find("type") != std::string::npos)
            throw Error("'" + path + "' holds Python objects other than tensors and containers, which draftscope "
                        "refuses to load from an untrusted checkpoint (" + msg + "); save only the state dict, e.g. "
                        "torch.save({'model': model.state_dict()}, path)");
        throw Error("cannot read '" + path + "' as a torch.save checkpoint: " + msg);
    } catch (const std::exception& e) {
        throw Error("cannot read '" + path + "' as a torch.save checkpoint: " + firstLine(e.what()));
    }
    bytes.clear();
    bytes.shrink_to_fit();

    TrainingCheckpoint ck;
    ck.path = path;
    if (root.isGenericDict())
        for (const auto& kv : root.toGenericDict())
            if (kv.key().isString()) ck.otherEntries.push_back(kv.key().toStringRef());
    const auto sd = findStateDict(root, ck.nestedUnder, 0);
    if (!sd) {
        std::string keys;
        for (const auto& k : ck.otherEntries) keys += (keys.empty() ? "" : ", ") + k;
        throw Error("no state dict (a dict of tensors) found in '" + path + "': looked at the top level and under " +
                    "'model', 'state_dict', 'module', 'draft_model', 'model_state_dict'; the top level is a " +
                    describe(root) + (keys.empty() ? std::string() : " with keys " + keys));
    }
    if (!ck.nestedUnder.empty()) {
        const auto top = ck.nestedUnder.substr(0, ck.nestedUnder.find('.'));
        ck.otherEntries.erase(std::remove(ck.otherEntries.begin(), ck.otherEntries.end(), top), ck.otherEntries.end());
    } else {
        ck.otherEntries.clear();
    }

    std::vector<std::pair<std::string, at::Tensor>> entries;
    for (const auto& kv : sd->toGenericDict()) {
        const auto t = kv.value().toTensor();
        if (!(at::isFloatingType(t.scalar_type()) || at::isIntegralType(t.scalar_type(), /*includeBool=*/true)))
            throw Error("state-dict entry '" + kv.key().toStringRef() + "' in '" + path + "' has unsupported dtype " +
                        std::string(c10::toString(t.scalar_type())));
        entries.emplace_back(kv.key().toStringRef(), t);
    }
    // Strip wrapper prefixes that every key carries (DDP's module., torch.compile's _orig_mod.).
    for (bool stripped = true; stripped;) {
        stripped = false;
        for (const char* prefix : kWrapperPrefixes) {
            const std::string p(prefix);
            bool all = true;
            for (const auto& e : entries) all = all && e.first.rfind(p, 0) == 0 && e.first.size() > p.size();
            if (!all) continue;
            for (auto& e : entries) e.first = e.first.substr(p.size());
            ck.strippedPrefix += p;
            stripped = true;
        }
    }
    for (auto& e : entries) {
        if (!ck.tensors.emplace(e.first, e.second.contiguous()).second)
            throw Error("state-dict key '" + e.first + "' appears twice in '" + path + "' after stripping '" +
                        ck.strippedPrefix + "'");
    }
    return ck;
}

namespace {
DType safetensorsDType(at::ScalarType t, const std::string& name) {
    switch (t) {
        case at::kFloat: return DType::F32;
        case at::kBFloat16: return DType::BF16;
        case at::kHalf: return DType::F16;
        case at::kDouble: return DType::F64;
        case at::kLong: return DType::I64;
        case at::kInt: return DType::I32;
        case at::kShort: return DType::I16;
        case at::kChar: return DType::I8;
        case at::kByte: return DType::U8;
        case at::kBool: return DType::BOOL;
        default: throw Error("tensor '" + name + "' has dtype " + std::string(c10::toString(t)) + ", which safetensors cannot hold");
    }
}
}  // namespace

StagedCheckpointDir::StagedCheckpointDir(const TrainingCheckpoint& checkpoint, const std::string& configPath) {
    const std::string config = readFileToString(configPath);
    std::string pattern = (fs::temp_directory_path() / "draftscope-ckpt-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw Error("cannot create a temporary directory under " + fs::temp_directory_path().string());
    dir_ = pattern;
    try {
        writeFileAtomically(dir_ + "/config.json", config);
        SafetensorsWriter w;
        for (const auto& [name, t] : checkpoint.tensors) {
            const auto c = t.contiguous();
            w.add(name, safetensorsDType(c.scalar_type(), name), c.sizes().vec(), c.data_ptr(),
                  static_cast<std::size_t>(c.numel()) * c.element_size());
        }
        w.write(dir_ + "/model.safetensors");
    } catch (...) {
        std::error_code ec;
        fs::remove_all(dir_, ec);
        throw;
    }
}

StagedCheckpointDir::~StagedCheckpointDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

}  // namespace draftscope
