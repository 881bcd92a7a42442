// The BPE model (HF models::bpe): model.vocab and model.merges, and the rank-ordered merge of
// one pre-tokenised word (Word::merge_all), with a cache.

#include "draftscope/errors.h"
#include "text/byte_level.h"
#include "text/tokenizer_impl.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

#include <algorithm>
#include <queue>

namespace draftscope {

using namespace text;

void Tokenizer::Impl::loadModel(const json& model, TokenizerJson& streamed) {
    if (const auto t = model.find("type"); t != model.end() && !t->is_null()) {
        if (!t->is_string() || t->get<std::string>() != "BPE")
            throw Error("model.type: expected \"BPE\", found " + (t->is_string() ? "\"" + t->get<std::string>() + "\"" : typeName(*t)));
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const auto it = model.find(key);
        if (it != model.end() && it->is_string() && !it->get<std::string>().empty())
            throw Error(std::string("model.") + key + ": expected null or \"\", found \"" + it->get<std::string>() +
                        "\" (not supported)");
    }
    fuseUnk = getBool(model, "fuse_unk", false, "model");
    ignoreMerges = getBool(model, "ignore_merges", false, "model");

    // model.vocab / model.merges were streamed by parseTokenizerJson when they have the right
    // JSON type; otherwise the DOM holds whatever was there and we report it.
    const auto vocab = model.find("vocab");
    if (vocab == model.end() || vocab->is_null())
        throw Error("model.vocab is missing (expected an object mapping token strings to ids)");
    if (!streamed.vocabStreamed) throw Error("model.vocab: expected an object, found " + typeName(*vocab));
    if (streamed.vocab.empty()) throw Error("model.vocab is empty");

    std::int32_t maxId = -1;
    stringToId.reserve(streamed.vocab.size() * 2);
    for (auto& [key, id] : streamed.vocab) {
        maxId = std::max(maxId, id);
        stringToId[std::move(key)] = id;  // a repeated key keeps its last id, as a JSON object does
    }
    streamed.vocab = {};
    idString.assign(static_cast<std::size_t>(maxId) + 1, {});
    idBytes.assign(static_cast<std::size_t>(maxId) + 1, {});
    idFlags.assign(static_cast<std::size_t>(maxId) + 1, 0);
    if (ignoreMerges) bytesToId.reserve(stringToId.size() * 2);
    std::string bytes;
    for (const auto& [key, id] : stringToId) {
        idString[id] = key;
        idFlags[id] |= kInVocab;
        if (byteLevelDecode(key, bytes) && ignoreMerges) bytesToId.emplace(bytes, id);
        idBytes[id] = bytes;
    }
    const auto& a = alphabet();
    for (int b = 0; b < 256; ++b) {
        std::string s;
        appendUtf8(s, a.byteToCp[b]);
        const auto it = stringToId.find(s);
        byteToId[b] = it == stringToId.end() ? -1 : it->second;
    }

    if (const auto unk = model.find("unk_token"); unk != model.end() && !unk->is_null()) {
        if (!unk->is_string()) throw Error("model.unk_token: expected a string or null, found " + typeName(*unk));
        const auto it = stringToId.find(unk->get<std::string>());
        if (it == stringToId.end())
            throw Error("model.unk_token: \"" + unk->get<std::string>() + "\" is not in model.vocab");
        unkId = it->second;
    }

    const auto mergesIt = model.find("merges");
    if (mergesIt == model.end() || mergesIt->is_null())
        throw Error("model.merges is missing (expected an array of [\"a\",\"b\"] pairs or \"a b\" strings)");
    if (!streamed.mergesStreamed) throw Error("model.merges: expected an array, found " + typeName(*mergesIt));
    merges.reserve(streamed.merges.size() * 2);
    std::int32_t rank = 0;
    std::string joined;
    for (const auto& [left, right] : streamed.merges) {
        joined.assign(left);
        joined.append(right);
        const auto ia = stringToId.find(left);
        const auto ib = stringToId.find(right);
        const auto iab = stringToId.find(joined);
        const std::string* missing = nullptr;
        if (ia == stringToId.end()) missing = &left;
        else if (ib == stringToId.end()) missing = &right;
        else if (iab == stringToId.end()) missing = &joined;
        if (missing)
            throw Error("model.merges[" + std::to_string(rank) + "]: token \"" + *missing + "\" is not in model.vocab");
        // HF collects merges into a HashMap: a repeated pair keeps its last rank.
        merges[pairKey(ia->second, ib->second)] = MergeInfo{rank, iab->second};
        ++rank;
    }
    streamed.merges = {};
}

std::vector<std::int32_t> Tokenizer::Impl::bpeUncached(const std::string& word) const {
    if (ignoreMerges) {
        if (const auto it = bytesToId.find(word); it != bytesToId.end()) return {it->second};
    }
    struct Sym {
        std::int32_t id;
        std::int32_t prev;
        std::int32_t next;
        std::uint32_t len;
    };
    std::vector<Sym> syms;
    syms.reserve(word.size());
    // Initial symbols: one per byte (= one per byte-level char), as models::bpe::merge_word.
    bool prevUnk = false;
    for (unsigned char b : word) {
        std::int32_t id = byteToId[b];
        if (id < 0) {
            if (!unkId) continue;  // no unk token: HF drops the character
            if (fuseUnk && prevUnk) {
                syms.back().len += 1;
                continue;
            }
            id = *unkId;
            prevUnk = true;
        } else {
            prevUnk = false;
        }
        const auto i = static_cast<std::int32_t>(syms.size());
        syms.push_back({id, i - 1, -1, 1});
        if (i > 0) syms[static_cast<std::size_t>(i - 1)].next = i;
    }

    // Word::merge_all: a min-heap on (rank, position); stale entries are skipped when the pair
    // at that position no longer produces the entry's new id.
    struct Cand {
        std::int32_t pos, rank, newId;
    };
    auto cmp = [](const Cand& a, const Cand& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; };
    std::priority_queue<Cand, std::vector<Cand>, decltype(cmp)> heap(cmp);
    for (std::size_t i = 0; i + 1 < syms.size(); ++i) {
        const auto it = merges.find(pairKey(syms[i].id, syms[i + 1].id));
        if (it != merges.end()) heap.push({static_cast<std::int32_t>(i), it->second.rank, it->second.newId});
    }
    while (!heap.empty()) {
        const Cand top = heap.top();
        heap.pop();
        Sym& cur = syms[static_cast<std::size_t>(top.pos)];
        if (cur.len == 0 || cur.next < 0) continue;
        Sym& nx = syms[static_cast<std::size_t>(cur.next)];
        const auto it = merges.find(pairKey(cur.id, nx.id));
        if (it == merges.end() || it->second.newId != top.newId) continue;
        cur.id = top.newId;
        cur.len += nx.len;
        const std::int32_t nn = nx.next;
        nx.len = 0;
        cur.next = nn;
        if (nn >= 0) syms[static_cast<std::size_t>(nn)].prev = top.pos;
        if (cur.prev >= 0) {
            const auto l = merges.find(pairKey(syms[static_cast<std::size_t>(cur.prev)].id, cur.id));
            if (l != merges.end()) heap.push({cur.prev, l->second.rank, l->second.newId});
        }
        if (nn >= 0) {
            const auto r = merges.find(pairKey(cur.id, syms[static_cast<std::size_t>(nn)].id));
            if (r != merges.end()) heap.push({top.pos, r->second.rank, r->second.newId});
        }
    }
    std::vector<std::int32_t> ids;
    for (std::int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<std::size_t>(i)].next)
        ids.push_back(syms[static_cast<std::size_t>(i)].id);
    return ids;
}

void Tokenizer::Impl::bpe(const std::string& word, std::vector<std::int64_t>& out) const {
    const bool cacheable = word.size() < kCacheMaxWord;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cacheMutex);
        if (const auto it = cache.find(word); it != cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<std::int32_t> ids = bpeUncached(word);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cacheMutex);
        if (cache.size() >= kCacheCapacity) cache.clear();
        cache.emplace(word, std::move(ids));
    }
}

}  // namespace draftscope
