#include "checkpoints/weight_loader.h"

#include "checkpoints/shard_index.h"
#include "core/torch_compat.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

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

/// Reads `n` bytes at `offset` of `fd` into `dst` with up to `threads` concurrent pread()s.
void parallelRead(int fd, char* dst, std::size_t n, std::uint64_t offset, unsigned threads,
                  const std::string& path) {
    constexpr std::size_t kMinPart = 8u << 20;
    const std::size_t parts = std::max<std::size_t>(1, std::min<std::size_t>(threads, n / kMinPart));
    const std::size_t step = (n + parts - 1) / parts;
    std::vector<int> errors(parts, 0);
    auto work = [&](std::size_t p) {
        std::size_t pos = p * step;
        const std::size_t end = std::min(n, pos + step);
        while (pos < end) {
            const ssize_t got = ::pread(fd, dst + pos, end - pos, static_cast<off_t>(offset + pos));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                errors[p] = got < 0 ? errno : EIO;
                return;
            }
            pos += static_cast<std::size_t>(got);
        }
    };
    if (parts == 1) {
        work(0);
    } else {
        std::vector<std::thread> pool;
        for (std::size_t p = 0; p < parts; ++p) pool.emplace_back(work, p);
        for (auto& t : pool) t.join();
    }
    for (int e : errors)
        if (e) throw Error("cannot read '" + path + "': " + std::strerror(e));
}

}  // namespace

/// The CUDA upload path's state: a ring of pinned staging buffers that pread() fills and
/// asynchronous host-to-device copies drain, and one read-only descriptor per file. A
/// buffer is refilled only after a stream synchronisation has retired its last copy.
struct WeightLoader::Staging {
    static constexpr std::size_t kChunk = 64u << 20;
    static constexpr int kBuffers = 4;
    at::Device device{at::kCPU};
    std::vector<at::Tensor> buffers;  // pinned uint8 [kChunk]
    std::vector<bool> inFlight;
    int current = 0;
    std::size_t used = 0;
    unsigned threads = 1;
    std::map<const SafetensorsFile*, int> fds;

    explicit Staging(const at::Device& d) : device(d) {
        for (int i = 0; i < kBuffers; ++i)
            buffers.push_back(at::empty({static_cast<std::int64_t>(kChunk)},
                                        at::TensorOptions().dtype(at::kByte).pinned_memory(true)));
        inFlight.assign(kBuffers, false);
        threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    }
    ~Staging() {
        for (const auto& [_, fd] : fds) ::close(fd);
    }
    bool busy() const { return std::find(inFlight.begin(), inFlight.end(), true) != inFlight.end(); }
    void drain() {
        if (busy()) compat::synchronize(device);
        inFlight.assign(kBuffers, false);
    }
    void next() {
        current = (current + 1) % kBuffers;
        used = 0;
        if (inFlight[current]) drain();
    }
    int fd(const SafetensorsFile& f) {
        auto it = fds.find(&f);
        if (it != fds.end()) return it->second;
        const int d = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
        if (d < 0) throw Error("cannot open '" + f.path() + "': " + std::strerror(errno));
#ifdef POSIX_FADV_SEQUENTIAL
        ::posix_fadvise(d, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
        fds[&f] = d;
        return d;
    }
};

WeightLoader::~WeightLoader() {
    try {
        finishUploads();
    } catch (...) {
    }
}

void WeightLoader::finishUploads() const {
    if (staging_) staging_->drain();
}

at::Tensor WeightLoader::uploadToCuda(const Location& loc, const at::Device& device) const {
    const auto& info = *loc.info;
    const auto bytes = info.byteSize();
    const auto type = toAten(info.dtype);
    if (bytes == 0) return at::empty(info.shape, at::TensorOptions().dtype(type).device(device));
    if (!staging_ || staging_->device != device) {
        finishUploads();
        staging_ = std::make_unique<Staging>(device);
    }
    auto& st = *staging_;
    const int fd = st.fd(*loc.file);
    auto dst = at::empty({static_cast<std::int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte).device(device));
    const std::uint64_t fileOffset = loc.file->dataOffset() + info.begin;
    std::uint64_t done = 0;
    while (done < bytes) {
        if (st.used == Staging::kChunk) st.next();
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, Staging::kChunk - st.used));
        auto& buf = st.buffers[static_cast<std::size_t>(st.current)];
        parallelRead(fd, static_cast<char*>(buf.data_ptr()) + st.used, n, fileOffset + done, st.threads, loc.file->path());
        dst.narrow(0, static_cast<std::int64_t>(done), static_cast<std::int64_t>(n))
            .copy_(buf.narrow(0, static_cast<std::int64_t>(st.used), static_cast<std::int64_t>(n)), /*non_blocking=*/true);
        st.inFlight[static_cast<std::size_t>(st.current)] = true;
        st.used += n;
        done += n;
    }
    return dst.view(type).view(info.shape);
}

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
        std::map<std::string, std::shared_ptr<const SafetensorsFile>> shards;
        for (const auto& [name, shard] : parseShardIndex(readFileToString(index.string()), index.string())) {
            auto& f = shards[shard];
            if (!f) {
                const fs::path p = fs::path(dir) / shard;
                if (!fs::exists(p, ec))
                    throw Error("shard '" + shard + "' listed in '" + index.string() + "' does not exist");
                f = addFile(p.string());
            }
            const TensorInfo* info = f->find(name);
            if (!info)
                throw Error("'" + index.string() + "' maps tensor '" + name + "' to shard '" +
                            shard + "', but that shard has no such tensor");
            where_[name] = {f, info};
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
        if (s.packed ? info.dtype != DType::U8 : isFloatingPoint(info.dtype) == s.integer)
            r.mismatched.push_back(s.name + ": dtype " + dtypeName(info.dtype) + ", expected " +
                                   (s.packed    ? "U8 (packed MXFP4)"
                                    : s.integer ? "an integer or bool dtype (I64, I32, BOOL, ...)"
                                              : "a floating-point dtype (F32, BF16, F16)"));
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
        // Each "\n" appended on its own: "\n" + ... makes GCC 12 -O3 report a false -Wrestrict
        // (GCC bug 105329).
        if (!r.missing.empty()) {
            msg += "\n";
            msg += std::to_string(r.missing.size()) + " missing tensor(s):" + joinFirst(r.missing, 8);
        }
        if (!r.mismatched.empty()) {
            msg += "\n";
            msg += std::to_string(r.mismatched.size()) + " tensor(s) with the wrong shape or dtype:" +
                   joinFirst(r.mismatched, 8);
        }
        if (!r.unexpected.empty()) {
            msg += "\n";
            msg += std::to_string(r.unexpected.size()) + " unexpected tensor(s):" + joinFirst(r.unexpected, 4);
        }
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
    if (device.is_cuda()) return uploadToCuda(it->second, device).to(dtype);
    // The mapping gives no alignment guarantee, so copy into an owned, aligned tensor first.
    at::Tensor host = at::empty(info.shape, at::TensorOptions().dtype(toAten(info.dtype)));
    if (info.byteSize()) std::memcpy(host.data_ptr(), it->second.file->data(info), info.byteSize());
    return host.to(device, dtype, /*non_blocking=*/false, /*copy=*/false);
}

at::Tensor WeightLoader::loadBytes(const std::string& name, const at::Device& device) const {
    auto it = where_.find(name);
    if (it == where_.end()) throw Error("tensor '" + name + "' not found in checkpoint '" + dir_ + "'");
    const auto& info = *it->second.info;
    if (info.dtype != DType::U8)
        throw Error("tensor '" + name + "' in '" + it->second.file->path() + "' has dtype " + dtypeName(info.dtype) +
                    ", expected U8 (packed MXFP4 blocks or scales)");
    if (device.is_cuda()) return uploadToCuda(it->second, device);
    at::Tensor host = at::empty(info.shape, at::TensorOptions().dtype(at::kByte));
    if (info.byteSize()) std::memcpy(host.data_ptr(), it->second.file->data(info), info.byteSize());
    return host.to(device);
}

std::int64_t WeightLoader::nonFiniteCount(const std::string& name) const {
    auto it = where_.find(name);
    if (it == where_.end()) throw Error("tensor '" + name + "' not found in checkpoint '" + dir_ + "'");
    const auto& info = *it->second.info;
    const auto* bytes = reinterpret_cast<const unsigned char*>(it->second.file->data(info));
    const auto n = static_cast<std::int64_t>(info.byteSize() / dtypeSize(info.dtype));
    // Little-endian IEEE formats: the exponent sits in the top bytes of each element.
    auto count = [&](std::size_t width, std::uint64_t mask) {
        std::int64_t bad = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            std::uint64_t v = 0;
            std::memcpy(&v, bytes + static_cast<std::size_t>(i) * width, width);
            bad += (v & mask) == mask;
        }
        return bad;
    };
    switch (info.dtype) {
        case DType::BF16: return count(2, 0x7F80);
        case DType::F16: return count(2, 0x7C00);
        case DType::F32: return count(4, 0x7F800000);
        case DType::F64: return count(8, 0x7FF0000000000000ULL);
        default: return 0;
    }
}

std::vector<std::int64_t> WeightLoader::loadIndices(const std::string& name) const {
    auto it = where_.find(name);
    if (it == where_.end()) throw Error("tensor '" + name + "' not found in checkpoint '" + dir_ + "'");
    if (isFloatingPoint(it->second.info->dtype))
        throw Error("tensor '" + name + "' in '" + it->second.file->path() + "' has dtype " +
                    dtypeName(it->second.info->dtype) + ", expected an integer or bool dtype");
    return it->second.file->readInt64(name);
}

std::uint64_t WeightLoader::totalBytes() const {
    std::uint64_t n = 0;
    for (const auto& f : files_)
        for (const auto& t : f->tensors()) n += t.byteSize();
    return n;
}

}  // namespace draftscope
