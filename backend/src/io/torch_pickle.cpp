#include "io/torch_pickle.h"

#include "draftscope/errors.h"

#include <caffe2/serialize/inline_container.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <new>

namespace draftscope::torchpickle {

namespace {

constexpr std::size_t kMaxDims = 64;
constexpr std::size_t kMaxNameLength = 256;

std::string firstLine(const std::string& s) {
    const auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
}

/// Printable, bounded rendering of text taken from the file, for messages.
std::string printable(const std::string& s) {
    std::string out;
    for (const char ch : s.substr(0, 120)) out += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    if (s.size() > 120) out += "...";
    return out;
}

bool validUtf8(const std::string& s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n;
        std::uint32_t cp;
        if (c < 0x80) { ++i; continue; }
        if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
        else return false;
        if (i + n >= s.size()) return false;
        for (std::size_t k = 1; k <= n; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

struct StorageType {
    const char* name;
    at::ScalarType dtype;
};
const StorageType kStorageTypes[] = {
    {"FloatStorage", at::kFloat}, {"BFloat16Storage", at::kBFloat16}, {"HalfStorage", at::kHalf},
    {"DoubleStorage", at::kDouble}, {"LongStorage", at::kLong}, {"IntStorage", at::kInt},
    {"ShortStorage", at::kShort}, {"CharStorage", at::kChar}, {"ByteStorage", at::kByte},
    {"BoolStorage", at::kBool},
};

const char* opcodeName(unsigned char op) {
    switch (op) {
        case 0x80: return "PROTO";
        case 0x95: return "FRAME";
        case '.': return "STOP";
        case '(': return "MARK";
        case '0': return "POP";
        case '1': return "POP_MARK";
        case '2': return "DUP";
        case 'q': return "BINPUT";
        case 'r': return "LONG_BINPUT";
        case 0x94: return "MEMOIZE";
        case 'h': return "BINGET";
        case 'j': return "LONG_BINGET";
        case 'N': return "NONE";
        case 0x88: return "NEWTRUE";
        case 0x89: return "NEWFALSE";
        case 'J': return "BININT";
        case 'K': return "BININT1";
        case 'M': return "BININT2";
        case 0x8a: return "LONG1";
        case 'G': return "BINFLOAT";
        case 0x8c: return "SHORT_BINUNICODE";
        case 'X': return "BINUNICODE";
        case 0x8d: return "BINUNICODE8";
        case 'C': return "SHORT_BINBYTES";
        case 'B': return "BINBYTES";
        case 0x8e: return "BINBYTES8";
        case ')': return "EMPTY_TUPLE";
        case 't': return "TUPLE";
        case 0x85: return "TUPLE1";
        case 0x86: return "TUPLE2";
        case 0x87: return "TUPLE3";
        case ']': return "EMPTY_LIST";
        case 'a': return "APPEND";
        case 'e': return "APPENDS";
        case 'l': return "LIST";
        case '}': return "EMPTY_DICT";
        case 'd': return "DICT";
        case 's': return "SETITEM";
        case 'u': return "SETITEMS";
        case 'c': return "GLOBAL";
        case 0x93: return "STACK_GLOBAL";
        case 'R': return "REDUCE";
        case 'b': return "BUILD";
        case 'Q': return "BINPERSID";
        // Opcodes we do not implement, named for the message.
        case 'P': return "PERSID";
        case 0x81: return "NEWOBJ";
        case 0x92: return "NEWOBJ_EX";
        case 'i': return "INST";
        case 'o': return "OBJ";
        case 0x82: return "EXT1";
        case 0x83: return "EXT2";
        case 0x84: return "EXT4";
        case 0x8b: return "LONG4";
        case 0x8f: return "EMPTY_SET";
        case 0x90: return "ADDITEMS";
        case 0x91: return "FROZENSET";
        case 0x96: return "BYTEARRAY8";
        case 0x97: return "NEXT_BUFFER";
        case 0x98: return "READONLY_BUFFER";
        case 'I': return "INT";
        case 'L': return "LONG";
        case 'F': return "FLOAT";
        case 'S': return "STRING";
        case 'T': return "BINSTRING";
        case 'U': return "SHORT_BINSTRING";
        case 'V': return "UNICODE";
        case 'g': return "GET";
        case 'p': return "PUT";
        default: return nullptr;
    }
}

std::string hexByte(unsigned char b) {
    const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

}  // namespace

std::string kindName(Value::Kind kind) {
    switch (kind) {
        case Value::Kind::None: return "None";
        case Value::Kind::Bool: return "bool";
        case Value::Kind::Int: return "int";
        case Value::Kind::Float: return "float";
        case Value::Kind::String: return "string";
        case Value::Kind::Bytes: return "bytes";
        case Value::Kind::List: return "list";
        case Value::Kind::Tuple: return "tuple";
        case Value::Kind::Dict: return "dict";
        case Value::Kind::Tensor: return "tensor";
        case Value::Kind::Global: return "Python global";
        case Value::Kind::Storage: return "storage";
    }
    return "value";
}

const Value* Container::find(const std::string& key) const {
    const auto it = index.find(DictKey(key));
    return it == index.end() ? nullptr : &entries[it->second].second;
}

/// The pickle machine. Runs once over data.pkl, filling the Archive.
class Unpickler {
public:
    Unpickler(Archive& ar, const char* data, std::size_t size) : ar_(ar), p_(reinterpret_cast<const unsigned char*>(data)), n_(size) {}

    Value run() {
        while (true) {
            if (pos_ >= n_) fail("the pickle ends without a STOP opcode (the file is truncated or corrupt)");
            opPos_ = pos_;
            const unsigned char op = p_[pos_++];
            switch (op) {
                case 0x80: {  // PROTO
                    const auto v = u8();
                    if (v < 2 || v > 5) fail("pickle protocol " + std::to_string(v) + " is not supported (expected 2 to 5)");
                    break;
                }
                case 0x95: {  // FRAME: framing is only a read-ahead hint; check it fits.
                    const auto len = u64();
                    if (len > n_ - pos_) fail("a FRAME of " + std::to_string(len) + " bytes runs past the end of the pickle");
                    break;
                }
                case '.': {  // STOP
                    if (!marks_.empty()) fail("STOP with an unclosed MARK");
                    if (stack_.size() != 1)
                        fail("STOP with " + std::to_string(stack_.size()) + " values on the stack (expected exactly one)");
                    return stack_.back();
                }
                case '(': marks_.push_back(stack_.size()); break;  // MARK
                case '0': {  // POP
                    if (stack_.size() > base()) stack_.pop_back();
                    else if (!marks_.empty()) marks_.pop_back();
                    else fail("POP on an empty stack");
                    break;
                }
                case '1': popMark(); break;  // POP_MARK
                case '2': push(top()); break;  // DUP
                case 'q': memoPut(u8()); break;
                case 'r': memoPut(u32()); break;
                case 0x94: memoPut(static_cast<std::uint32_t>(memo_.size())); break;  // MEMOIZE
                case 'h': memoGet(u8()); break;
                case 'j': memoGet(u32()); break;
                case 'N': push(Value{}); break;
                case 0x88: push(boolean(true)); break;
                case 0x89: push(boolean(false)); break;
                case 'J': push(integer(static_cast<std::int32_t>(u32()))); break;
                case 'K': push(integer(u8())); break;
                case 'M': push(integer(u16())); break;
                case 0x8a: push(integer(long1())); break;
                case 'G': {
                    const auto* b = need(8);  // big-endian IEEE double
                    std::uint64_t bits = 0;
                    for (int k = 0; k < 8; ++k) bits = (bits << 8) | b[k];
                    pos_ += 8;
                    Value v;
                    v.kind = Value::Kind::Float;
                    std::memcpy(&v.f, &bits, 8);
                    push(v);
                    break;
                }
                case 0x8c: push(text(u8(), true)); break;
                case 'X': push(text(u32(), true)); break;
                case 0x8d: push(text(u64(), true)); break;
                case 'C': push(text(u8(), false)); break;
                case 'B': push(text(u32(), false)); break;
                case 0x8e: push(text(u64(), false)); break;
                case ')': push(container(Value::Kind::Tuple)); break;
                case 't': {
                    auto items = popToMark();
                    auto v = container(Value::Kind::Tuple);
                    v.c->items = std::move(items);
                    push(v);
                    break;
                }
                case 0x85: case 0x86: case 0x87: {
                    const std::size_t k = op - 0x84;
                    auto v = container(Value::Kind::Tuple);
                    v.c->items.resize(k);
                    for (std::size_t j = k; j-- > 0;) v.c->items[j] = pop();
                    push(v);
                    break;
                }
                case ']': push(container(Value::Kind::List)); break;
                case 'l': {
                    auto items = popToMark();
                    auto v = container(Value::Kind::List);
                    v.c->items = std::move(items);
                    push(v);
                    break;
                }
                case 'a': {
                    auto item = pop();
                    expect(top(), Value::Kind::List, "APPEND").c->items.push_back(std::move(item));
                    break;
                }
                case 'e': {
                    auto items = popToMark();
                    auto& list = expect(top(), Value::Kind::List, "APPENDS");
                    for (auto& it : items) list.c->items.push_back(std::move(it));
                    break;
                }
                case '}': push(container(Value::Kind::Dict)); break;
                case 'd': {
                    auto items = popToMark();
                    auto v = container(Value::Kind::Dict);
                    setItems(v, items);
                    push(v);
                    break;
                }
                case 's': {
                    std::vector<Value> kv(2);
                    kv[1] = pop();
                    kv[0] = pop();
                    setItems(expect(top(), Value::Kind::Dict, "SETITEM"), kv);
                    break;
                }
                case 'u': {
                    auto items = popToMark();
                    setItems(expect(top(), Value::Kind::Dict, "SETITEMS"), items);
                    break;
                }
                case 'c': {
                    const auto module = line();
                    const auto name = line();
                    push(global(module, name));
                    break;
                }
                case 0x93: {  // STACK_GLOBAL
                    const auto name = pop();
                    const auto module = pop();
                    if (!module.isString() || !name.isString()) fail("STACK_GLOBAL needs two strings");
                    push(global(module.s, name.s));
                    break;
                }
                case 'R': {
                    auto args = pop();
                    auto callable = pop();
                    push(reduce(callable, args));
                    break;
                }
                case 'b': {  // BUILD: only an OrderedDict's attribute dict (state_dict()'s _metadata), dropped.
                    const auto state = pop();
                    const auto& obj = top();
                    if (!(obj.isDict() && obj.c->orderedDict) || !(state.isDict() || state.kind == Value::Kind::None))
                        fail("BUILD (setting object state) is only accepted on an OrderedDict with a dict of attributes; "
                             "here on a " + kindName(obj.kind) + " with a " + kindName(state.kind));
                    break;
                }
                case 'Q': push(persistentLoad(pop())); break;
                default: {
                    const char* name = opcodeName(op);
                    fail(std::string("unsupported pickle opcode ") + (name ? std::string(name) + " (" + hexByte(op) + ")" : hexByte(op)) +
                         "; draftscope reads only the opcodes torch.save writes for tensors and containers");
                }
            }
        }
    }

private:
    Archive& ar_;
    const unsigned char* p_;
    std::size_t n_;
    std::size_t pos_ = 0, opPos_ = 0;
    std::vector<Value> stack_;
    std::vector<std::size_t> marks_;
    std::map<std::uint32_t, Value> memo_;

    [[noreturn]] void fail(const std::string& what) const {
        throw Error("cannot read '" + ar_.path_ + "' as a torch.save checkpoint: data.pkl, byte " + std::to_string(opPos_) +
                    ": " + what);
    }

    const unsigned char* need(std::size_t k) const {
        if (k > n_ - pos_)
            fail("the pickle ends inside an opcode's argument (needs " + std::to_string(k) + " more bytes, " +
                 std::to_string(n_ - pos_) + " left)");
        return p_ + pos_;
    }
    std::uint64_t le(std::size_t k) {
        const auto* b = need(k);
        std::uint64_t v = 0;
        for (std::size_t j = k; j-- > 0;) v = (v << 8) | b[j];
        pos_ += k;
        return v;
    }
    std::uint32_t u8() { return static_cast<std::uint32_t>(le(1)); }
    std::uint32_t u16() { return static_cast<std::uint32_t>(le(2)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(le(4)); }
    std::uint64_t u64() { return le(8); }

    std::int64_t long1() {
        const auto k = u8();
        if (k > 8) fail("an integer of " + std::to_string(k) + " bytes does not fit 64 bits");
        if (k == 0) return 0;
        const auto* b = need(k);
        std::uint64_t v = 0;
        for (std::size_t j = k; j-- > 0;) v = (v << 8) | b[j];
        if (k < 8 && (b[k - 1] & 0x80)) v |= ~std::uint64_t(0) << (8 * k);  // sign-extend
        pos_ += k;
        return static_cast<std::int64_t>(v);
    }

    Value text(std::uint64_t len, bool unicode) {
        if (len > n_ - pos_)
            fail("a " + std::string(unicode ? "string" : "bytes value") + " of " + std::to_string(len) + " bytes runs past the end of the pickle");
        Value v;
        v.kind = unicode ? Value::Kind::String : Value::Kind::Bytes;
        v.s.assign(reinterpret_cast<const char*>(p_ + pos_), static_cast<std::size_t>(len));
        pos_ += static_cast<std::size_t>(len);
        if (unicode && !validUtf8(v.s)) fail("a string is not valid UTF-8");
        return v;
    }

    std::string line() {
        std::string s;
        while (true) {
            const auto c = need(1)[0];
            ++pos_;
            if (c == '\n') break;
            if (s.size() >= kMaxNameLength) fail("a GLOBAL name longer than " + std::to_string(kMaxNameLength) + " bytes");
            s += static_cast<char>(c);
        }
        return s;
    }

    static Value boolean(bool b) {
        Value v;
        v.kind = Value::Kind::Bool;
        v.b = b;
        return v;
    }
    static Value integer(std::int64_t i) {
        Value v;
        v.kind = Value::Kind::Int;
        v.i = i;
        return v;
    }
    Value container(Value::Kind kind) {
        Value v;
        v.kind = kind;
        ar_.containers_.emplace_back();
        v.c = &ar_.containers_.back();
        return v;
    }

    std::size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
    void push(Value v) {
        // Every pushed value costs memory; a tiny file could otherwise DUP/BINGET one long
        // string or container millions of times. Real state-dict pickles stay far below this.
        pushedBytes_ += sizeof(Value) + (v.kind == Value::Kind::String ? v.s.size() : 0);
        if (pushedBytes_ > budget())
            fail("the pickle would need more than " + std::to_string(budget() >> 20) +
                 " MiB of values (a pickle of " + std::to_string(n_) + " bytes cannot describe a real state dict that large)");
        stack_.push_back(std::move(v));
    }
    std::size_t budget() const { return 64 * n_ + (std::size_t{256} << 20); }
    Value pop() {
        if (stack_.size() <= base())
            fail(stack_.empty() ? "stack underflow (an opcode needs a value, the stack is empty)"
                                : "stack underflow (an opcode needs a value above the last MARK)");
        Value v = std::move(stack_.back());
        stack_.pop_back();
        return v;
    }
    Value& top() {
        if (stack_.size() <= base()) fail("stack underflow (an opcode needs a value, none above the last MARK)");
        return stack_.back();
    }
    std::vector<Value> popToMark() {
        if (marks_.empty()) fail("an opcode needs a MARK and there is none");
        const auto m = marks_.back();
        marks_.pop_back();
        std::vector<Value> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(m)),
                                 std::make_move_iterator(stack_.end()));
        stack_.resize(m);
        return items;
    }
    void popMark() { (void)popToMark(); }

    Value& expect(Value& v, Value::Kind kind, const char* op) {
        if (v.kind != kind) fail(std::string(op) + " needs a " + kindName(kind) + " below its arguments, found a " + kindName(v.kind));
        return v;
    }

    void memoPut(std::uint32_t idx) { memo_[idx] = top(); }
    void memoGet(std::uint32_t idx) {
        const auto it = memo_.find(idx);
        if (it == memo_.end()) fail("memo entry " + std::to_string(idx) + " is read before it is written");
        push(it->second);
    }

    void setItems(Value& dict, const std::vector<Value>& kv) {
        if (kv.size() % 2) fail("a dict is given an odd number of keys and values");
        auto& c = *dict.c;
        for (std::size_t j = 0; j < kv.size(); j += 2) {
            DictKey key;
            if (kv[j].kind == Value::Kind::String) key = kv[j].s;
            else if (kv[j].kind == Value::Kind::Int) key = kv[j].i;
            else fail("a dict key is a " + kindName(kv[j].kind) + "; only string and int keys are read");
            const auto [it, fresh] = c.index.emplace(key, c.entries.size());
            if (fresh) c.entries.emplace_back(kv[j], kv[j + 1]);
            else c.entries[it->second].second = kv[j + 1];
        }
    }

    Value global(const std::string& module, const std::string& name) {
        const std::string full = module + "." + name;
        bool ok = full == "collections.OrderedDict" || full == "torch._utils._rebuild_tensor_v2" ||
                  full == "torch._utils._rebuild_parameter";
        if (module == "torch")
            for (const auto& st : kStorageTypes) ok = ok || name == st.name;
        if (!ok && module == "torch" && name.size() > 7 && name.compare(name.size() - 7, 7, "Storage") == 0)
            throw Error("'" + ar_.path_ + "' holds a tensor of storage type " + printable(full) +
                        ", a dtype draftscope does not read (it reads float, bfloat16, half, double and integer/bool tensors)");
        if (!ok)
            throw Error("'" + ar_.path_ + "' holds a Python object of class " + printable(full) +
                        ", which draftscope does not load from an untrusted checkpoint (unpickling it would run code "
                        "chosen by the file; trainers often save e.g. an argparse.Namespace of their arguments); save "
                        "only tensors and containers, e.g. torch.save({'model': model.state_dict()}, path)");
        Value v;
        v.kind = Value::Kind::Global;
        v.s = full;
        return v;
    }

    std::int64_t intArg(const Value& v, const char* what) {
        if (v.kind != Value::Kind::Int) fail(std::string(what) + " is a " + kindName(v.kind) + ", expected an int");
        return v.i;
    }

    std::vector<std::int64_t> intTuple(const Value& v, const char* what) {
        if (v.kind != Value::Kind::Tuple) fail(std::string("a tensor's ") + what + " is a " + kindName(v.kind) + ", expected a tuple of ints");
        if (v.c->items.size() > kMaxDims) fail(std::string("a tensor's ") + what + " has more than " + std::to_string(kMaxDims) + " dimensions");
        std::vector<std::int64_t> out;
        for (const auto& x : v.c->items) {
            const auto i = intArg(x, what);
            if (i < 0) fail(std::string("a tensor's ") + what + " holds a negative value " + std::to_string(i));
            out.push_back(i);
        }
        return out;
    }

    static bool emptyDictOrNone(const Value& v) {
        return v.kind == Value::Kind::None || (v.isDict() && v.c->entries.empty());
    }

    Value reduce(const Value& callable, const Value& args) {
        if (callable.kind != Value::Kind::Global) fail("REDUCE on a " + kindName(callable.kind) + ", which is not callable");
        if (args.kind != Value::Kind::Tuple) fail("REDUCE with arguments that are a " + kindName(args.kind) + ", not a tuple");
        const auto& a = args.c->items;
        const auto& fn = callable.s;
        if (fn == "collections.OrderedDict") {
            if (!a.empty()) fail("OrderedDict() is called with arguments; torch.save writes it empty and then sets its items");
            auto v = container(Value::Kind::Dict);
            v.c->orderedDict = true;
            return v;
        }
        if (fn == "torch._utils._rebuild_parameter") {
            if (a.size() != 3 || !a[0].isTensor() || a[1].kind != Value::Kind::Bool || !emptyDictOrNone(a[2]))
                fail("torch._utils._rebuild_parameter needs (tensor, requires_grad, empty backward_hooks)");
            return a[0];
        }
        if (fn == "torch._utils._rebuild_tensor_v2") return rebuildTensor(a);
        fail(fn + " cannot be called");
    }

    Value rebuildTensor(const std::vector<Value>& a) {
        if (a.size() != 6 && a.size() != 7)
            fail("torch._utils._rebuild_tensor_v2 is called with " + std::to_string(a.size()) + " arguments (expected 6 or 7)");
        if (a[0].kind != Value::Kind::Storage) fail("a tensor's storage is a " + kindName(a[0].kind) + ", not a persistent storage");
        TensorInfo t;
        t.storageKey = a[0].s;
        const auto& st = ar_.storages_.at(t.storageKey);
        t.dtype = st.dtype;
        t.storageOffset = intArg(a[1], "a tensor's storage offset");
        if (t.storageOffset < 0) fail("a tensor's storage offset is negative (" + std::to_string(t.storageOffset) + ")");
        t.size = intTuple(a[2], "size");
        t.stride = intTuple(a[3], "stride");
        if (t.size.size() != t.stride.size())
            fail("a tensor has " + std::to_string(t.size.size()) + " sizes but " + std::to_string(t.stride.size()) + " strides");
        if (a[4].kind != Value::Kind::Bool) fail("a tensor's requires_grad is a " + kindName(a[4].kind) + ", not a bool");
        if (!emptyDictOrNone(a[5])) fail("a tensor carries backward hooks, which are not loaded");
        if (a.size() == 7 && !emptyDictOrNone(a[6])) fail("a tensor carries metadata, which is not loaded");
        // The view must lie inside its storage: offset + sum((size-1)*stride) < numel; and it
        // may not have more elements than its storage (no broadcast views, which would let a
        // small file ask for a huge contiguous copy).
        const std::string where = "a tensor on storage '" + printable(t.storageKey) + "' (" + std::to_string(st.numel) + " elements)";
        bool empty = false;
        std::int64_t count = 1;
        for (const auto s : t.size) {
            empty = empty || s == 0;
            if (!empty && __builtin_mul_overflow(count, s, &count)) fail(where + " has sizes whose product overflows");
        }
        if (!empty && count > st.numel)
            fail(where + " has " + std::to_string(count) + " elements, more than its storage; broadcast or overlapping views are not read");
        if (empty) {
            if (t.storageOffset > st.numel) fail(where + " starts past its end");
        } else {
            std::int64_t last = t.storageOffset;
            for (std::size_t d = 0; d < t.size.size(); ++d) {
                std::int64_t step;
                if (__builtin_mul_overflow(t.size[d] - 1, t.stride[d], &step) || __builtin_add_overflow(last, step, &last))
                    fail(where + " has sizes and strides that overflow");
            }
            if (last >= st.numel)
                fail(where + " reaches element " + std::to_string(last) + ", past its end (storage offset " +
                     std::to_string(t.storageOffset) + ")");
        }
        ar_.tensors_.push_back(std::move(t));
        Value v;
        v.kind = Value::Kind::Tensor;
        v.tensor = static_cast<int>(ar_.tensors_.size() - 1);
        return v;
    }

    Value persistentLoad(const Value& pid) {
        // ('storage', torch.<X>Storage, key, location, numel)
        if (pid.kind != Value::Kind::Tuple || pid.c->items.size() != 5)
            fail("a persistent id is not a 5-tuple ('storage', storage type, key, location, numel)");
        const auto& it = pid.c->items;
        if (!it[0].isString() || it[0].s != "storage") fail("a persistent id does not start with 'storage'");
        if (it[1].kind != Value::Kind::Global || it[1].s.rfind("torch.", 0) != 0 ||
            it[1].s.size() < 7 || it[1].s.compare(it[1].s.size() - 7, 7, "Storage") != 0)
            fail("a persistent id's storage type is a " + kindName(it[1].kind) + ", not a torch storage class");
        if (!it[2].isString()) fail("a persistent id's key is a " + kindName(it[2].kind) + ", not a string");
        if (!it[3].isString()) fail("a persistent id's location is a " + kindName(it[3].kind) + ", not a string");
        const auto numel = intArg(it[4], "a storage's element count");
        const auto& key = it[2].s;
        if (key.empty() || key.size() > 64) fail("a storage key is empty or too long");
        for (const char ch : key)
            if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_')
                fail("storage key '" + printable(key) + "' holds characters other than letters, digits and _");
        if (numel < 0) fail("storage '" + key + "' has a negative element count");
        at::ScalarType dtype = at::kFloat;
        for (const auto& st : kStorageTypes)
            if (it[1].s == std::string("torch.") + st.name) dtype = st.dtype;
        std::int64_t bytes;
        if (__builtin_mul_overflow(numel, static_cast<std::int64_t>(c10::elementSize(dtype)), &bytes))
            fail("storage '" + key + "' is too large (" + std::to_string(numel) + " elements)");
        const auto [pos, fresh] = ar_.storages_.emplace(key, Archive::StorageInfo{dtype, numel});
        if (!fresh && (pos->second.dtype != dtype || pos->second.numel != numel))
            fail("storage '" + key + "' is described twice with different types or sizes");
        Value v;
        v.kind = Value::Kind::Storage;
        v.s = key;
        return v;
    }
    std::size_t pushedBytes_ = 0;
};

Archive::Archive(const std::string& path) : path_(path) {
    std::error_code ec;
    fileSize_ = std::filesystem::file_size(path, ec);
    if (ec) throw Error("cannot read '" + path + "': " + ec.message());
    std::string pickle;
    try {
        reader_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
        if (reader_->hasRecord("byteorder")) {
            auto [ptr, n] = reader_->getRecord("byteorder");
            const std::string order(static_cast<const char*>(ptr.get()), n);
            if (order != "little")
                throw Error("'" + path + "' was written on a " + printable(order) + "-endian machine; draftscope reads only little-endian checkpoints");
        }
        if (!reader_->hasRecord("data.pkl"))
            throw Error("'" + path + "' is a zip archive without a data.pkl record, so not a torch.save checkpoint");
        auto [ptr, n] = reader_->getRecord("data.pkl");
        pickle.assign(static_cast<const char*>(ptr.get()), n);
    } catch (const c10::Error& e) {
        throw Error("cannot read '" + path + "' as a torch.save checkpoint (zip archive): " + firstLine(e.what_without_backtrace()));
    } catch (const std::bad_alloc&) {
        throw Error("cannot read '" + path + "' as a torch.save checkpoint: a zip record is too large to load");
    }
    Unpickler u(*this, pickle.data(), pickle.size());
    root_ = u.run();
}

std::unique_ptr<Archive> Archive::fromPickle(const std::string& pickle, const std::string& name) {
    std::unique_ptr<Archive> ar(new Archive());
    ar->path_ = name;
    ar->fileSize_ = pickle.size();
    Unpickler u(*ar, pickle.data(), pickle.size());
    ar->root_ = u.run();
    return ar;
}

Archive::~Archive() = default;

at::Tensor Archive::tensor(const Value& v) {
    if (!v.isTensor()) throw Error("internal: Archive::tensor on a " + kindName(v.kind));
    if (!reader_) throw Error("'" + path_ + "' was read from its data.pkl alone; it has no tensor data");
    const auto& t = tensorInfo(v);
    auto found = loaded_.find(t.storageKey);
    if (found == loaded_.end()) {
        const auto& st = storages_.at(t.storageKey);
        const std::string record = "data/" + t.storageKey;
        const std::size_t bytes = static_cast<std::size_t>(st.numel) * c10::elementSize(st.dtype);  // overflow checked when read
        if (bytes > fileSize_)
            throw Error("'" + path_ + "': storage '" + t.storageKey + "' would hold " + std::to_string(bytes) +
                        " bytes, more than the whole file (" + std::to_string(fileSize_) + " bytes)");
        at::Tensor storage;
        try {
            if (!reader_->hasRecord(record))
                throw Error("'" + path_ + "' has no record '" + record + "' for a storage its data.pkl refers to (the archive is incomplete)");
            auto [ptr, n] = reader_->getRecord(record);
            if (n != bytes)
                throw Error("'" + path_ + "': storage record '" + record + "' holds " + std::to_string(n) + " bytes, but data.pkl says " +
                            std::to_string(st.numel) + " elements of " + std::string(c10::toString(st.dtype)) + " (" +
                            std::to_string(bytes) + " bytes)");
            storage = at::empty({st.numel}, at::TensorOptions().dtype(st.dtype).device(at::kCPU));
            if (bytes) std::memcpy(storage.data_ptr(), ptr.get(), bytes);
        } catch (const c10::Error& e) {
            throw Error("cannot read storage record '" + record + "' of '" + path_ + "': " + firstLine(e.what_without_backtrace()));
        } catch (const std::bad_alloc&) {
            throw Error("cannot read storage record '" + record + "' of '" + path_ + "': out of memory");
        }
        found = loaded_.emplace(t.storageKey, storage).first;
    }
    try {
        return found->second.as_strided(t.size, t.stride, t.storageOffset);
    } catch (const c10::Error& e) {
        throw Error("cannot view storage '" + t.storageKey + "' of '" + path_ + "': " + firstLine(e.what_without_backtrace()));
    }
}

}  // namespace draftscope::torchpickle
