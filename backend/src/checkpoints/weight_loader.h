#pragma once
// Loads a checkpoint directory's tensors (single `model.safetensors` or a sharded
// `model.safetensors.index.json`) into ATen tensors, after checking them against the
// architecture's expected names and shapes.

#include "draftscope/safetensors.h"

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace draftscope {

/// A tensor the architecture needs: checkpoint name and exact shape.
struct TensorSpec {
    std::string name;
    std::vector<std::int64_t> shape;
    bool integer = false;  ///< an index tensor (integer or bool dtype) instead of a floating-point one
    bool packed = false;   ///< packed bytes (U8 exactly): MXFP4 blocks and scales
};

/// Outcome of matching a checkpoint against an architecture.
struct WeightReport {
    std::vector<std::string> missing;      ///< needed but absent
    std::vector<std::string> mismatched;   ///< present with wrong shape or dtype (described)
    std::vector<std::string> unexpected;   ///< present, not needed, not ignored
    std::vector<std::string> ignored;      ///< present under an ignored prefix (e.g. model.visual.)
};

/// Index over the safetensors files of one checkpoint directory.
class WeightLoader {
public:
    /// Opens `<dir>/model.safetensors`, or the shards listed by
    /// `<dir>/model.safetensors.index.json`, or a single other `*.safetensors` file.
    /// Throws Error if none exists or a file or the index is invalid.
    explicit WeightLoader(const std::string& dir);

    const std::string& directory() const { return dir_; }
    bool has(const std::string& name) const { return where_.count(name) != 0; }
    /// Names of every tensor in the checkpoint.
    std::vector<std::string> names() const;
    /// Shape of `name` (must exist).
    std::vector<std::int64_t> shape(const std::string& name) const;
    /// Stored dtype of `name` (must exist).
    DType dtype(const std::string& name) const;

    /// Compares `specs` with the checkpoint. Tensors under `ignoredPrefixes` are reported
    /// as ignored rather than unexpected. Throws Error listing every missing and mismatched
    /// tensor if any; otherwise returns the report.
    WeightReport check(const std::vector<TensorSpec>& specs,
                       const std::vector<std::string>& ignoredPrefixes = {}) const;

    /// Copies tensor `name` to `device`, converted to `dtype`. Throws Error if absent or
    /// not floating point. To a CUDA device the bytes go straight from the file into a ring
    /// of pinned staging buffers (large pread()s by several threads) and from there to the
    /// GPU by asynchronous copies; any dtype conversion runs on the GPU.
    at::Tensor load(const std::string& name, at::ScalarType dtype, const at::Device& device) const;
    /// Copies uint8 tensor `name` (MXFP4 blocks and scales) to `device` as stored. Throws Error
    /// if absent or not U8.
    at::Tensor loadBytes(const std::string& name, const at::Device& device) const;
    /// Number of NaN and infinite values of floating-point tensor `name`, read from the file
    /// (exponent bits all ones; no copy, no conversion); 0 for other dtypes. Throws Error if absent.
    std::int64_t nonFiniteCount(const std::string& name) const;
    /// Copies integer or bool tensor `name` to the host as int64 (row-major). Throws Error if
    /// absent or floating point.
    std::vector<std::int64_t> loadIndices(const std::string& name) const;

    /// Waits for every asynchronous copy load() issued (the destructor does too).
    void finishUploads() const;
    ~WeightLoader();
    WeightLoader(const WeightLoader&) = delete;
    WeightLoader& operator=(const WeightLoader&) = delete;

    /// Total bytes of all tensors.
    std::uint64_t totalBytes() const;

private:
    struct Location {
        std::shared_ptr<const SafetensorsFile> file;
        const TensorInfo* info;
    };
    std::string dir_;
    std::vector<std::shared_ptr<const SafetensorsFile>> files_;
    std::map<std::string, Location> where_;
    struct Staging;  // pinned buffers and file descriptors of the CUDA upload path
    mutable std::unique_ptr<Staging> staging_;
    at::Tensor uploadToCuda(const Location& loc, const at::Device& device) const;
};

}  // namespace draftscope
