#pragma once
// A small, strict reader for torch.save archives (zip format): libtorch's zip reader for the
// records and our own unpickler for data.pkl. Only what torch.save emits for state dicts
// and plain containers is understood: None, bools, ints, floats, strings, bytes, lists,
// tuples, dicts (string or int keys), tensors (torch._utils._rebuild_tensor_v2 /
// _rebuild_parameter over typed storages) and collections.OrderedDict. Every other Python
// global is refused, since unpickling one means running code chosen by the file's author.
// Everything read from the file is bounds-checked; bad input throws draftscope::Error.

#include <ATen/ATen.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace caffe2::serialize {
class PyTorchStreamReader;
}

namespace draftscope::torchpickle {

struct Container;

/// One unpickled value. Containers live in the Archive that produced them.
struct Value {
    enum class Kind { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict, Tensor, Global, Storage };
    Kind kind = Kind::None;
    bool b = false;
    std::int64_t i = 0;
    double f = 0;
    std::string s;               ///< String/Bytes payload; Global "module.name"; Storage key
    Container* c = nullptr;      ///< List, Tuple, Dict
    int tensor = -1;             ///< Tensor: index into Archive::tensorInfo

    bool isDict() const { return kind == Kind::Dict; }
    bool isTensor() const { return kind == Kind::Tensor; }
    bool isString() const { return kind == Kind::String; }
};

/// "dict", "tensor", "list", ... for messages.
std::string kindName(Value::Kind kind);

using DictKey = std::variant<std::int64_t, std::string>;

struct Container {
    std::vector<Value> items;                        ///< List / Tuple
    std::vector<std::pair<Value, Value>> entries;    ///< Dict, in insertion order
    std::map<DictKey, std::size_t> index;            ///< Dict key -> entries position
    bool orderedDict = false;                        ///< made by collections.OrderedDict()

    /// The value under string key `key`, or nullptr.
    const Value* find(const std::string& key) const;
};

/// A tensor as described by the pickle; its data is read from the archive on demand.
struct TensorInfo {
    std::string storageKey;
    at::ScalarType dtype = at::kFloat;
    std::int64_t storageOffset = 0;
    std::vector<std::int64_t> size, stride;
};

/// An opened torch.save archive with its data.pkl unpickled.
class Archive {
public:
    /// Opens `path` (a torch.save zip archive) and unpickles its data.pkl. Throws Error naming
    /// the file on an unreadable archive, a malformed pickle or a refused Python global.
    explicit Archive(const std::string& path);
    /// Unpickles `pickle`, the bytes of a data.pkl record, without a zip archive; `name`
    /// stands for the file in messages. For the unpickler's fuzz target and tests: tensor()
    /// throws, as there are no storage records. Throws Error like the constructor.
    static std::unique_ptr<Archive> fromPickle(const std::string& pickle, const std::string& name);
    ~Archive();
    Archive(const Archive&) = delete;
    Archive& operator=(const Archive&) = delete;

    const Value& root() const { return root_; }
    const TensorInfo& tensorInfo(const Value& v) const { return tensors_.at(static_cast<std::size_t>(v.tensor)); }
    /// The tensor `v` (kind Tensor) as a CPU tensor of its stored dtype: a view of its
    /// storage record, which is read (and checked against the pickle's size) on first use
    /// and shared between views of the same storage.
    at::Tensor tensor(const Value& v);

private:
    friend class Unpickler;
    Archive() = default;
    struct StorageInfo {
        at::ScalarType dtype;
        std::int64_t numel;
    };
    std::string path_;
    std::uint64_t fileSize_ = 0;
    std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader_;
    std::deque<Container> containers_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, StorageInfo> storages_;
    std::map<std::string, at::Tensor> loaded_;
    Value root_;
};

}  // namespace draftscope::torchpickle
