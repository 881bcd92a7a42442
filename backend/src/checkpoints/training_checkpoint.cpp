#include "checkpoints/training_checkpoint.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/safetensors.h"

#include "io/torch_pickle.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace draftscope {

namespace {

namespace fs = std::filesystem;

const char* const kNestingKeys[] = {"model", "state_dict", "module", "draft_model", "model_state_dict"};
const char* const kWrapperPrefixes[] = {"module.", "_orig_mod."};

using torchpickle::Value;

std::string describe(const Value& v) { return torchpickle::kindName(v.kind); }

bool isStateDict(const Value& v) {
    if (!v.isDict() || v.c->entries.empty()) return false;
    for (const auto& [k, val] : v.c->entries)
        if (!k.isString() || !val.isTensor()) return false;
    return true;
}

/// Depth-first search for the state dict; `where` receives the key path.
const Value* findStateDict(const Value& v, std::string& where, int depth) {
    if (isStateDict(v)) return &v;
    if (!v.isDict() || depth > 4) return nullptr;
    for (const char* key : kNestingKeys) {
        const Value* sub = v.c->find(key);
        if (!sub) continue;
        std::string subWhere;
        if (const Value* found = findStateDict(*sub, subWhere, depth + 1)) {
            where = subWhere.empty() ? key : std::string(key) + "." + subWhere;
            return found;
        }
    }
    return nullptr;
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

std::optional<std::int64_t> trainingCheckpointStep(const std::string& path) {
    if (!isTrainingCheckpointFile(path))
        throw Error("'" + path + "' is not a torch.save checkpoint (no zip archive signature)");
    torchpickle::Archive archive(path);
    const Value& root = archive.root();
    if (!root.isDict()) return std::nullopt;
    for (const char* key : {"global_step", "step", "iteration", "iter", "train_step"})
        if (const Value* v = root.c->find(key); v && v->kind == Value::Kind::Int) return v->i;
    return std::nullopt;
}

TrainingCheckpoint readTrainingCheckpoint(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw Error("training checkpoint not found (or not a regular file): '" + path + "'");
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
    torchpickle::Archive archive(path);
    const Value& root = archive.root();

    TrainingCheckpoint ck;
    ck.path = path;
    if (root.isDict())
        for (const auto& [k, v] : root.c->entries)
            if (k.isString()) ck.otherEntries.push_back(k.s);
    const Value* sd = findStateDict(root, ck.nestedUnder, 0);
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

    std::vector<std::pair<std::string, const Value*>> entries;
    for (const auto& [k, v] : sd->c->entries) {
        const auto dtype = archive.tensorInfo(v).dtype;
        if (!(at::isFloatingType(dtype) || at::isIntegralType(dtype, /*includeBool=*/true)))
            throw Error("state-dict entry '" + k.s + "' in '" + path + "' has unsupported dtype " +
                        std::string(c10::toString(dtype)));
        entries.emplace_back(k.s, &v);
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
    std::error_code sizeError;
    const std::uint64_t fileBytes = std::filesystem::file_size(path, sizeError);
    std::uint64_t materialized = 0;
    for (auto& e : entries) {
        if (ck.tensors.count(e.first))
            throw Error("state-dict key '" + e.first + "' appears twice in '" + path + "' after stripping '" +
                        ck.strippedPrefix + "'");
        at::Tensor t = archive.tensor(*e.second);
        // Views of one storage each become their own copy: bound the total, or a small file
        // of many overlapping views could demand terabytes. Tied weights stay well inside.
        materialized += static_cast<std::uint64_t>(t.numel()) * t.element_size();
        if (materialized > 4 * fileBytes + (std::uint64_t{64} << 20))
            throw Error("the state dict of '" + path + "' expands to more than " +
                        std::to_string((4 * fileBytes + (std::uint64_t{64} << 20)) >> 20) + " MiB at entry '" + e.first +
                        "' (a file of " + std::to_string(fileBytes >> 20) +
                        " MiB): its tensors are overlapping views of the same data, refused");
        try {
            t = t.contiguous();
        } catch (const c10::Error&) {
            throw Error("cannot hold state-dict entry '" + e.first + "' of '" + path + "' in memory (" +
                        std::to_string(t.numel()) + " elements)");
        } catch (const std::bad_alloc&) {
            throw Error("cannot hold state-dict entry '" + e.first + "' of '" + path + "' in memory (" +
                        std::to_string(t.numel()) + " elements)");
        }
        ck.tensors.emplace(e.first, std::move(t));
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

namespace {
/// Removes the staged directory with plain POSIX calls: pip's libtorch.so carries its own
/// copy of std::filesystem::remove_all, which crashes when it binds to our call (seen with
/// torch 2.11). The directory holds only the files written here (and maybe a temp file).
void removeStagedDir(const std::string& dir) {
    if (DIR* d = ::opendir(dir.c_str())) {
        while (const dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name != "." && name != "..") ::unlink((dir + "/" + name).c_str());
        }
        ::closedir(d);
    }
    ::rmdir(dir.c_str());
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
        removeStagedDir(dir_);
        throw;
    }
}

StagedCheckpointDir::~StagedCheckpointDir() { removeStagedDir(dir_); }

}  // namespace draftscope
