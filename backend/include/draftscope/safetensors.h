#pragma once
// Reader and writer for the safetensors format (https://github.com/huggingface/safetensors):
// 8-byte little-endian header length N, N bytes of JSON header, then the raw data section.
// Torch-free: widgets and tests use it to read goldens and exported tensors.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace draftscope {

/// Element types of the safetensors format that draftscope reads.
enum class DType { F64, F32, BF16, F16, I64, I32, I16, I8, U8, BOOL };

/// Bytes per element of `t`.
std::size_t dtypeSize(DType t);
/// The safetensors spelling of `t` ("F32", "BF16", ...).
const char* dtypeName(DType t);
/// True for F64/F32/BF16/F16.
bool isFloatingPoint(DType t);

/// One tensor entry of a safetensors header.
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0;  ///< byte offset of the first byte, relative to the data section
    std::uint64_t end = 0;    ///< one past the last byte, relative to the data section
    std::int64_t numel() const;
    std::uint64_t byteSize() const { return end - begin; }
};

/// "[2, 3]" for a shape; used in error messages throughout the backend.
std::string shapeString(const std::vector<std::int64_t>& shape);

/// A memory-mapped, validated safetensors file. The file is untrusted input: open() checks
/// the header length, that the header is a JSON object, every dtype, shape and offset pair,
/// that each tensor's byte size equals numel * element size, that all ranges lie inside the
/// data section and that no two overlap. Any violation throws draftscope::Error naming the
/// file, the tensor and the expected vs found values.
class SafetensorsFile {
public:
    /// Opens and validates `path`. Throws Error on I/O failure or an invalid file.
    static std::shared_ptr<const SafetensorsFile> open(const std::string& path);
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return path_; }
    /// Entries in data-offset order.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    /// The entry called `name`, or nullptr.
    const TensorInfo* find(const std::string& name) const;
    /// The entry called `name`; throws Error naming the file if absent.
    const TensorInfo& at(const std::string& name) const;
    /// Pointer to the first byte of `t`'s data inside the mapping (no alignment guarantee).
    const std::byte* data(const TensorInfo& t) const;
    /// `__metadata__` string map (empty if absent).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    /// Total file size in bytes.
    std::uint64_t fileSize() const { return fileSize_; }
    /// File offset of the data section (tensor t's bytes start at dataOffset() + t.begin).
    std::uint64_t dataOffset() const { return dataOffset_; }

    /// Copies tensor `name` converted to float32 (from F32, BF16, F16 or F64), row-major.
    /// Throws Error if absent or not floating point.
    std::vector<float> readFloat32(const std::string& name) const;
    /// Copies tensor `name` converted to int64 (from I64, I32, I16, I8, U8, BOOL).
    std::vector<std::int64_t> readInt64(const std::string& name) const;

private:
    SafetensorsFile() = default;
    std::string path_;
    std::uint64_t fileSize_ = 0;
    const std::byte* mapping_ = nullptr;
    std::uint64_t dataOffset_ = 0;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::size_t> index_;
    std::map<std::string, std::string> metadata_;
};

/// Builds a safetensors file in memory and writes it atomically (temp file + rename).
class SafetensorsWriter {
public:
    /// Adds a tensor; `data` holds numel(shape) * dtypeSize(dtype) bytes. Throws Error on a
    /// duplicate name or a size mismatch.
    void add(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape,
             const void* data, std::size_t bytes);
    void addFloat32(const std::string& name, const std::vector<std::int64_t>& shape,
                    const std::vector<float>& values);
    void addInt64(const std::string& name, const std::vector<std::int64_t>& shape,
                  const std::vector<std::int64_t>& values);
    void setMetadata(const std::string& key, const std::string& value);
    /// Writes the file; throws Error naming `path` on I/O failure.
    void write(const std::string& path) const;

private:
    struct Entry {
        std::string name;
        DType dtype;
        std::vector<std::int64_t> shape;
        std::vector<std::byte> bytes;
    };
    std::vector<Entry> entries_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace draftscope
