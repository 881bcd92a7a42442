#pragma once
// Writing torch.save-style checkpoints in tests (tst_training_checkpoint, tst_track): a zip
// archive through libtorch's PyTorchStreamWriter and hand-made data.pkl records (pickle
// protocol 2, as torch.save writes them). Include before Qt (ATen uses `slots`).

#include <caffe2/serialize/inline_container.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace testsupport {

/// Writes a torch.save-style zip (archive folder = file stem) with the given records.
void writeArchive(const std::string& path, const std::vector<std::pair<std::string, std::string>>& records) {
    caffe2::serialize::PyTorchStreamWriter w(path);
    for (const auto& [name, bytes] : records) w.writeRecord(name, bytes.data(), bytes.size());
    w.writeEndOfFile();
}

/// A little pickle writer for hand-made data.pkl records (protocol 2, as torch.save).
struct Pickle {
    std::string b = std::string("\x80\x02", 2);
    Pickle& op(char c) { b += c; return *this; }
    Pickle& str(const std::string& s) {
        b += 'X';
        const auto n = static_cast<std::uint32_t>(s.size());
        for (int k = 0; k < 4; ++k) b += static_cast<char>((n >> (8 * k)) & 0xff);
        b += s;
        return *this;
    }
    Pickle& i(std::int64_t v) {  // BININT (32-bit signed)
        b += 'J';
        const auto u = static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
        for (int k = 0; k < 4; ++k) b += static_cast<char>((u >> (8 * k)) & 0xff);
        return *this;
    }
    Pickle& global(const std::string& module, const std::string& name) { b += 'c' + module + '\n' + name + '\n'; return *this; }
    Pickle& ints(const std::vector<std::int64_t>& v) {
        op('(');
        for (auto x : v) i(x);
        return op('t');
    }
    /// _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False, OrderedDict())
    Pickle& tensor(const std::string& key, std::int64_t numel, std::int64_t offset, const std::vector<std::int64_t>& size,
                   const std::vector<std::int64_t>& stride, const std::string& type = "FloatStorage") {
        global("torch._utils", "_rebuild_tensor_v2").op('(');
        op('(').str("storage").global("torch", type).str(key).str("cpu").i(numel).op('t').op('Q');
        i(offset).ints(size).ints(stride).op('\x89').global("collections", "OrderedDict").op(')').op('R');
        return op('t').op('R');
    }
    Pickle& stop() { return op('.'); }
};

/// A torch.save file as a trainer writes one: {"model": {name: float32 tensor}, "step": step}
/// (each tensor its own storage record), like torch.save({"model": sd, "step": n}, path).
inline void writeTorchSave(const std::string& path,
                           const std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<float>>>& tensors,
                           std::int64_t step) {
    Pickle p;
    p.op('}').op('(').str("model").op('}').op('(');
    std::vector<std::pair<std::string, std::string>> records;
    int key = 0;
    for (const auto& [name, t] : tensors) {
        const auto& [shape, values] = t;
        std::vector<std::int64_t> stride(shape.size(), 1);
        for (std::size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * shape[i];
        p.str(name).tensor(std::to_string(key), static_cast<std::int64_t>(values.size()), 0, shape, stride);
        records.emplace_back("data/" + std::to_string(key),
                             std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
        ++key;
    }
    p.op('u').str("step").i(step).op('u').stop();
    records.insert(records.begin(), {{"data.pkl", p.b}, {"byteorder", "little"}});
    writeArchive(path, records);
}

}  // namespace testsupport
