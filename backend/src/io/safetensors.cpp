#include "draftscope/safetensors.h"

#include "draftscope/errors.h"
#include "draftscope/file_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace draftscope {

namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;  // the format's own limit

struct DTypeRow {
    DType type;
    const char* name;
    std::size_t size;
};
constexpr DTypeRow kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::BF16, "BF16", 2},
    {DType::F16, "F16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
    {DType::I16, "I16", 2}, {DType::I8, "I8", 1},   {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
};

float bf16ToFloat(std::uint16_t v) {
    std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float f16ToFloat(std::uint16_t h) {
    const std::uint32_t sign = (h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t mant = h & 0x3ffu;
    std::uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                --exp;
            }
            mant &= 0x3ffu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw Error("invalid safetensors file '" + path + "': " + what);
}

}  // namespace

std::size_t dtypeSize(DType t) {
    for (const auto& r : kDTypes)
        if (r.type == t) return r.size;
    return 0;
}

const char* dtypeName(DType t) {
    for (const auto& r : kDTypes)
        if (r.type == t) return r.name;
    return "?";
}

bool isFloatingPoint(DType t) {
    return t == DType::F64 || t == DType::F32 || t == DType::BF16 || t == DType::F16;
}

std::int64_t TensorInfo::numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

std::string shapeString(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw Error("file not found: '" + path + "'");
    if (std::filesystem::is_directory(path, ec))
        throw Error("expected a .safetensors file but found a directory: '" + path + "'");
    if (!std::filesystem::is_regular_file(path, ec))
        throw Error("'" + path + "' is not a regular file (a FIFO, device or socket); give a .safetensors file");

    std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->path_ = path;

    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        throw Error("cannot stat '" + path + "': " + std::strerror(errno));
    }
    f->fileSize_ = static_cast<std::uint64_t>(st.st_size);
    if (f->fileSize_ < 8) {
        ::close(fd);
        fail(path, "file is " + std::to_string(f->fileSize_) +
                       " bytes, too short for the 8-byte header length (truncated?)");
    }
    void* map = ::mmap(nullptr, f->fileSize_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) throw Error("cannot memory-map '" + path + "': " + std::strerror(errno));
    f->mapping_ = static_cast<const std::byte*>(map);

    std::uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i)
        headerLen = (headerLen << 8) | static_cast<std::uint8_t>(f->mapping_[i]);
    if (headerLen == 0 || headerLen > kMaxHeaderBytes)
        fail(path, "header length " + std::to_string(headerLen) +
                       " is not plausible (expected 1.." + std::to_string(kMaxHeaderBytes) + ")");
    if (8 + headerLen > f->fileSize_)
        fail(path, "header length " + std::to_string(headerLen) + " runs past the end of the " +
                       std::to_string(f->fileSize_) + "-byte file (truncated?)");
    f->dataOffset_ = 8 + headerLen;
    const std::uint64_t dataSize = f->fileSize_ - f->dataOffset_;

    const char* headerBegin = reinterpret_cast<const char*>(f->mapping_ + 8);
    nlohmann::json header;
    try {
        checkJsonDepth(headerBegin, headerBegin + headerLen, path + " (header)", 64);
        header = nlohmann::json::parse(headerBegin, headerBegin + headerLen);
    } catch (const nlohmann::json::exception& e) {
        fail(path, "header is not valid JSON (" + escapeNonPrintable(e.what()) + ")");
    }
    if (!header.is_object()) fail(path, "header is not a JSON object");

    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const auto& v = it.value();
        if (name == "__metadata__") {
            if (!v.is_object()) fail(path, "__metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m)
                if (m.value().is_string()) f->metadata_[m.key()] = m.value().get<std::string>();
            continue;
        }
        const std::string where = "tensor '" + name + "'";
        if (!v.is_object()) fail(path, where + " entry is not an object");
        if (!v.contains("dtype") || !v["dtype"].is_string())
            fail(path, where + " has no string field 'dtype'");
        if (!v.contains("shape") || !v["shape"].is_array())
            fail(path, where + " has no array field 'shape'");
        if (!v.contains("data_offsets") || !v["data_offsets"].is_array() ||
            v["data_offsets"].size() != 2)
            fail(path, where + " has no field 'data_offsets' of two integers");

        TensorInfo t;
        t.name = name;
        const auto dtype = v["dtype"].get<std::string>();
        bool known = false;
        for (const auto& r : kDTypes)
            if (dtype == r.name) {
                t.dtype = r.type;
                known = true;
            }
        if (!known) fail(path, where + " has unsupported dtype '" + dtype + "'");

        std::uint64_t numel = 1;
        for (const auto& d : v["shape"]) {
            if (!d.is_number_unsigned()) fail(path, where + " has a shape entry that is not a non-negative integer");
            const auto dim = d.get<std::uint64_t>();
            if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
                (dim != 0 && numel > std::numeric_limits<std::uint64_t>::max() / dim))
                fail(path, where + " has a shape whose element count overflows");
            numel *= dim;
            t.shape.push_back(static_cast<std::int64_t>(dim));
        }
        const auto& off = v["data_offsets"];
        if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            fail(path, where + " has data_offsets that are not non-negative integers");
        t.begin = off[0].get<std::uint64_t>();
        t.end = off[1].get<std::uint64_t>();
        if (t.begin > t.end)
            fail(path, where + " has data_offsets [" + std::to_string(t.begin) + ", " +
                           std::to_string(t.end) + "] with begin after end");
        if (t.end > dataSize)
            fail(path, where + " has data_offsets [" + std::to_string(t.begin) + ", " +
                           std::to_string(t.end) + "] outside the " + std::to_string(dataSize) +
                           "-byte data section (file truncated?)");
        const std::uint64_t elem = dtypeSize(t.dtype);
        if (numel > std::numeric_limits<std::uint64_t>::max() / elem)
            fail(path, where + " has a byte size that overflows");
        if (t.end - t.begin != numel * elem)
            fail(path, where + " occupies " + std::to_string(t.end - t.begin) +
                           " bytes but dtype " + dtype + " and shape " + shapeString(t.shape) +
                           " need " + std::to_string(numel * elem));
        f->tensors_.push_back(std::move(t));
    }

    std::sort(f->tensors_.begin(), f->tensors_.end(),
              [](const TensorInfo& a, const TensorInfo& b) {
                  return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
              });
    // Sorted by begin: a non-empty tensor overlaps an earlier one iff it starts before the
    // furthest end seen so far among the non-empty tensors.
    const TensorInfo* furthest = nullptr;
    for (const auto& t : f->tensors_) {
        if (t.byteSize() == 0) continue;
        if (furthest && t.begin < furthest->end)
            fail(path, "tensors '" + furthest->name + "' [" + std::to_string(furthest->begin) + ", " +
                           std::to_string(furthest->end) + ") and '" + t.name + "' [" +
                           std::to_string(t.begin) + ", " + std::to_string(t.end) + ") overlap");
        if (!furthest || t.end > furthest->end) furthest = &t;
    }
    for (std::size_t i = 0; i < f->tensors_.size(); ++i) f->index_[f->tensors_[i].name] = i;
    return f;
}

SafetensorsFile::~SafetensorsFile() {
    if (mapping_) ::munmap(const_cast<std::byte*>(mapping_), fileSize_);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafetensorsFile::at(const std::string& name) const {
    if (const auto* t = find(name)) return *t;
    throw Error("tensor '" + name + "' not found in '" + path_ + "'");
}

const std::byte* SafetensorsFile::data(const TensorInfo& t) const {
    return mapping_ + dataOffset_ + t.begin;
}

std::vector<float> SafetensorsFile::readFloat32(const std::string& name) const {
    const auto& t = at(name);
    const std::byte* p = data(t);
    const auto n = static_cast<std::size_t>(t.numel());
    std::vector<float> out(n);
    switch (t.dtype) {
        case DType::F32: std::memcpy(out.data(), p, n * 4); break;
        case DType::F64:
            for (std::size_t i = 0; i < n; ++i) {
                double d;
                std::memcpy(&d, p + 8 * i, 8);
                out[i] = static_cast<float>(d);
            }
            break;
        case DType::BF16:
        case DType::F16:
            for (std::size_t i = 0; i < n; ++i) {
                std::uint16_t h;
                std::memcpy(&h, p + 2 * i, 2);
                out[i] = t.dtype == DType::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
            }
            break;
        default:
            throw Error("tensor '" + name + "' in '" + path_ + "' has dtype " +
                        dtypeName(t.dtype) + ", expected a floating-point dtype");
    }
    return out;
}

std::vector<std::int64_t> SafetensorsFile::readInt64(const std::string& name) const {
    const auto& t = at(name);
    const std::byte* p = data(t);
    const auto n = static_cast<std::size_t>(t.numel());
    std::vector<std::int64_t> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        switch (t.dtype) {
            case DType::I64: std::memcpy(&out[i], p + 8 * i, 8); break;
            case DType::I32: { std::int32_t v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
            case DType::I16: { std::int16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = v; break; }
            case DType::I8: out[i] = static_cast<std::int8_t>(p[i]); break;
            case DType::U8:
            case DType::BOOL: out[i] = static_cast<std::uint8_t>(p[i]); break;
            default:
                throw Error("tensor '" + name + "' in '" + path_ + "' has dtype " +
                            dtypeName(t.dtype) + ", expected an integer dtype");
        }
    }
    return out;
}

void SafetensorsWriter::add(const std::string& name, DType dtype,
                            const std::vector<std::int64_t>& shape, const void* data,
                            std::size_t bytes) {
    for (const auto& e : entries_)
        if (e.name == name) throw Error("duplicate tensor name '" + name + "' in safetensors output");
    std::int64_t numel = 1;
    for (auto d : shape) numel *= d;
    if (static_cast<std::size_t>(numel) * dtypeSize(dtype) != bytes)
        throw Error("tensor '" + name + "' with shape " + shapeString(shape) + " and dtype " +
                    dtypeName(dtype) + " needs " +
                    std::to_string(static_cast<std::size_t>(numel) * dtypeSize(dtype)) +
                    " bytes, got " + std::to_string(bytes));
    Entry e{name, dtype, shape, std::vector<std::byte>(bytes)};
    if (bytes) std::memcpy(e.bytes.data(), data, bytes);
    entries_.push_back(std::move(e));
}

void SafetensorsWriter::addFloat32(const std::string& name, const std::vector<std::int64_t>& shape,
                                   const std::vector<float>& values) {
    add(name, DType::F32, shape, values.data(), values.size() * sizeof(float));
}

void SafetensorsWriter::addInt64(const std::string& name, const std::vector<std::int64_t>& shape,
                                 const std::vector<std::int64_t>& values) {
    add(name, DType::I64, shape, values.data(), values.size() * sizeof(std::int64_t));
}

void SafetensorsWriter::setMetadata(const std::string& key, const std::string& value) {
    metadata_[key] = value;
}

void SafetensorsWriter::write(const std::string& path) const {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata_.empty()) header["__metadata__"] = metadata_;
    std::uint64_t offset = 0;
    for (const auto& e : entries_) {
        header[e.name] = {{"dtype", dtypeName(e.dtype)},
                          {"shape", e.shape},
                          {"data_offsets", {offset, offset + e.bytes.size()}}};
        offset += e.bytes.size();
    }
    std::string h = header.dump();
    while ((8 + h.size()) % 8 != 0) h += ' ';  // align the data section to 8 bytes
    std::string out;
    out.reserve(8 + h.size() + offset);
    const std::uint64_t n = h.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out += h;
    for (const auto& e : entries_)
        out.append(reinterpret_cast<const char*>(e.bytes.data()), e.bytes.size());
    writeFileAtomically(path, out);
}

}  // namespace draftscope
