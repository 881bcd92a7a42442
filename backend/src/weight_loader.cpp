#include "weight_loader.h"

#include "draftscope/errors.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>

namespace draftscope {

namespace fs = std::filesystem;

namespace {

at::ScalarType toAten(DType t) {
    switch (t) {
        case DType::F64: return at::kDouble;
        case DType::F32: return at::kFloat;
        case DType::BF16: return at::kBFloat16;
        case DType::F16: return at::kHalf;
        case DType::I64: return at::kLong;
        case DType::I32: return at::kInt;
        case DType::I16: return at::kShort;
        case DType::I8: return at::kChar;
        case DType::U8: return at::kByte;
        case DType::BOOL: return at::kBool;
    }
    return at::kFloat;
}

std::string joinFirst(const std::vector<std::string>& items, std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < items.size() && i < n; ++i) s += "\n  - " + items[i];
    if (items.size() > n) s += "\n  ... and " + std::to_string(items.size() - n) + " more";
    return s;
}

}  // namespace

WeightLoader::WeightLoader(const std::string& dir) : dir_(dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw Error("model directory not found: '" + dir + "'");
    const fs::path single = fs::path(dir) / "model.safetensors";
    const fs::path index = fs::path(dir) / "model.safetensors.index.json";
    auto addFile = [&](const std::string& path) {
        auto f = SafetensorsFile::open(path);
        files_.push_back(f);
        return f;
    };
    if (fs::exists(single, ec)) {
        auto f = addFile(single.string());
        for (const auto& t : f->tensors()) where_[t.name] = {f, &t};
    } else if (fs::exists(index, ec)) {
        nlohmann::json j;
        try {
            const std::string text = readFileToString(index.string());
            checkJsonDepth(text.data(), text.data() + text.size(), index.string());
            j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception& e) {
            throw Error("'" + index.string() + "' is not valid JSON: " + e.what());
        }
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
            throw Error("'" + index.string() + "': required object 'weight_map' is missing");
        std::map<std::string, std::shared_ptr<const SafetensorsFile>> shards;
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it.value().is_string())
                throw Error("'" + index.string() + "': weight_map entry '" + it.key() + "' is not a file name");
            const std::string shard = it.value().get<std::string>();
            // The index is untrusted: a shard must be a plain file name inside `dir`.
            if (shard.empty() || fs::path(shard).filename().string() != shard || shard == "." || shard == "..")
                throw Error("'" + index.string() + "': weight_map entry '" + it.key() +
                            "' names shard '" + shard + "', which is not a plain file name in the checkpoint directory");
            auto& f = shards[shard];
            if (!f) {
                const fs::path p = fs::path(dir) / shard;
                if (!fs::exists(p, ec))
                    throw Error("shard '" + shard + "' listed in '" + index.string() + "' does not exist");
                f = addFile(p.string());
            }
            const TensorInfo* info = f->find(it.key());
            if (!info)
                throw Error("'" + index.string() + "' maps tensor '" + it.key() + "' to shard '" +
                            shard + "', but that shard has no such tensor");
            where_[it.key()] = {f, info};
        }
    } else {
        std::vector<fs::path> candidates;
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.path().extension() == ".safetensors") candidates.push_back(e.path());
        if (candidates.size() != 1)
            throw Error("no model.safetensors or model.safetensors.index.json in '" + dir + "'" +
                        (candidates.empty() ? std::string() : " (and several other .safetensors files, so which to load is ambiguous)"));
        auto f = addFile(candidates.front().string());
        for (const auto& t : f->tensors()) where_[t.name] = {f, &t};
    }
}

std::vector<std::string> WeightLoader::names() const {
    std::vector<std::string> out;
    for (const auto& [n, _] : where_) out.push_back(n);
    return out;
}

std::vector<std::int64_t> WeightLoader::shape(const std::string& name) const {
    return where_.at(name).info->shape;
}

DType WeightLoader::dtype(const std::string& name) const { return where_.at(name).info->dtype; }

WeightReport WeightLoader::check(const std::vector<TensorSpec>& specs,
                                 const std::vector<std::string>& ignoredPrefixes) const {
    WeightReport r;
    std::map<std::string, bool> needed;
    for (const auto& s : specs) {
        needed[s.name] = true;
        auto it = where_.find(s.name);
        if (it == where_.end()) {
            r.missing.push_back(s.name + " (expected shape " + shapeString(s.shape) + ")");
            continue;
        }
        const auto& info = *it->second.info;
        if (!isFloatingPoint(info.dtype))
            r.mismatched.push_back(s.name + ": dtype " + dtypeName(info.dtype) +
                                   ", expected a floating-point dtype (F32, BF16, F16)");
        else if (info.shape != s.shape)
            r.mismatched.push_back(s.name + ": shape " + shapeString(info.shape) + ", expected " +
                                   shapeString(s.shape));
    }
    for (const auto& [name, _] : where_) {
        if (needed.count(name)) continue;
        bool ignore = false;
        for (const auto& p : ignoredPrefixes)
            if (name.rfind(p, 0) == 0) ignore = true;
        (ignore ? r.ignored : r.unexpected).push_back(name);
    }
    if (!r.missing.empty() || !r.mismatched.empty()) {
        std::string msg = "checkpoint '" + dir_ + "' does not match the architecture in its config.json:";
        if (!r.missing.empty())
            msg += "\n" + std::to_string(r.missing.size()) + " missing tensor(s):" + joinFirst(r.missing, 8);
        if (!r.mismatched.empty())
            msg += "\n" + std::to_string(r.mismatched.size()) + " tensor(s) with the wrong shape or dtype:" +
                   joinFirst(r.mismatched, 8);
        if (!r.unexpected.empty())
            msg += "\n" + std::to_string(r.unexpected.size()) + " unexpected tensor(s):" + joinFirst(r.unexpected, 4);
        throw Error(msg);
    }
    return r;
}

at::Tensor WeightLoader::load(const std::string& name, at::ScalarType dtype,
                              const at::Device& device) const {
    auto it = where_.find(name);
    if (it == where_.end()) throw Error("tensor '" + name + "' not found in checkpoint '" + dir_ + "'");
    const auto& info = *it->second.info;
    if (!isFloatingPoint(info.dtype))
        throw Error("tensor '" + name + "' in '" + it->second.file->path() + "' has dtype " +
                    dtypeName(info.dtype) + ", expected a floating-point dtype");
    // The mapping gives no alignment guarantee, so copy into an owned, aligned tensor first.
    at::Tensor host = at::empty(info.shape, at::TensorOptions().dtype(toAten(info.dtype)));
    if (info.byteSize()) std::memcpy(host.data_ptr(), it->second.file->data(info), info.byteSize());
    if (device.is_cuda()) host = host.pin_memory();
    return host.to(device, dtype, /*non_blocking=*/false, /*copy=*/false);
}

std::uint64_t WeightLoader::totalBytes() const {
    std::uint64_t n = 0;
    for (const auto& f : files_)
        for (const auto& t : f->tensors()) n += t.byteSize();
    return n;
}

}  // namespace draftscope
