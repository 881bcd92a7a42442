// Added tokens: reading tokenizer.json's added_tokens with HF's id rules, their per-id tables
// and splitting text around them (HF AddedVocabulary).

#include "text/added_tokens.h"

#include "draftscope/errors.h"
#include "text/byte_level.h"
#include "text/tokenizer_impl.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

#include <algorithm>

namespace draftscope {

using namespace text;

// Ids are assigned the way HF does when it deserialises added_tokens (TokenizerImpl +
// AddedVocabulary::add_tokens), not taken from the "id" fields: a content that is already an
// added token or a model.vocab key keeps that id, any other gets the next free id (model vocab
// size for the first, then max added id + 1). HF only warns when "id" disagrees; for files that
// HF wrote the two always agree.
void Tokenizer::Impl::loadAddedTokens(const json& arr) {
    const auto vocabLen = static_cast<std::int64_t>(stringToId.size());
    std::optional<std::int64_t> maxAdded;
    std::size_t i = 0;
    for (const auto& t : arr) {
        const std::string where = "added_tokens[" + std::to_string(i++) + "]";
        if (!t.is_object()) throw Error(where + ": expected an object, found " + typeName(t));
        AddedToken tok;
        const auto idIt = t.find("id");
        if (idIt == t.end()) throw Error(where + ".id is missing (expected an integer)");
        getId(*idIt, where + ".id");  // validated; see above for the id actually used
        tok.content = getString(t, "content", where);
        if (tok.content.empty()) throw Error(where + ".content: expected a non-empty string");
        if (firstInvalidUtf8(tok.content) != std::string::npos) throw Error(where + ".content is not valid UTF-8");
        tok.singleWord = getBool(t, "single_word", false, where);
        tok.lstrip = getBool(t, "lstrip", false, where);
        tok.rstrip = getBool(t, "rstrip", false, where);
        tok.normalized = getBool(t, "normalized", true, where);
        tok.special = getBool(t, "special", false, where);

        const bool duplicate = std::any_of(added.begin(), added.end(), [&](const AddedToken& a) {
            return a.content == tok.content && a.singleWord == tok.singleWord && a.lstrip == tok.lstrip &&
                   a.rstrip == tok.rstrip && a.normalized == tok.normalized && a.special == tok.special;
        });
        if (duplicate) continue;
        std::int64_t id;
        if (const auto a = addedByContent.find(tok.content); a != addedByContent.end()) id = a->second;
        else if (const auto v = stringToId.find(tok.content); v != stringToId.end()) id = v->second;
        else if (!maxAdded) id = vocabLen;
        else id = (*maxAdded >= vocabLen || vocabLen == 0) ? *maxAdded + 1 : vocabLen;
        if (id >= kMaxTokenId)
            throw Error(where + ": token id " + std::to_string(id) + " is out of range (expected 0.." +
                        std::to_string(kMaxTokenId - 1) + ")");
        tok.id = static_cast<std::int32_t>(id);
        addedByContent[tok.content] = tok.id;
        maxAdded = std::max(maxAdded.value_or(id), id);
        if (tok.special) specialContents.insert(tok.content);
        // added_tokens_map_r[id] = token: a later definition replaces an earlier one.
        const auto same = std::find_if(added.begin(), added.end(), [&](const AddedToken& a) { return a.id == tok.id; });
        if (same != added.end()) *same = std::move(tok);
        else added.push_back(std::move(tok));
    }
}

// Called once the normalizer is known: match patterns and per-id tables for added tokens.
void Tokenizer::Impl::finishAddedTokens() {
    std::int32_t maxId = static_cast<std::int32_t>(idFlags.size()) - 1;
    for (AddedToken& t : added) {
        t.pattern = t.normalized ? normalize(t.content) : t.content;
        maxId = std::max(maxId, t.id);
    }
    idString.resize(static_cast<std::size_t>(maxId) + 1);
    idBytes.resize(static_cast<std::size_t>(maxId) + 1);
    idFlags.resize(static_cast<std::size_t>(maxId) + 1, 0);
    std::string bytes;
    for (const AddedToken& t : added) {
        idString[t.id] = t.content;
        // HF decodes a normalized added token from its normalised form (AddedVocabulary's
        // normalized_cache), through the ByteLevel decoder like any other token.
        byteLevelDecode(t.normalized ? t.pattern : t.content, bytes);
        idBytes[t.id] = bytes;
        const bool special = specialContents.count(t.content) != 0;
        idFlags[t.id] = static_cast<std::uint8_t>((idFlags[t.id] & kInVocab) | kAdded | (special ? kSpecial : 0));
    }
    rawMatcher.build(added, false);
    normMatcher.build(added, true);
}

void Tokenizer::Impl::splitAdded(std::string_view text, const AddedMatcher& m, std::vector<Segment>& out) const {
    if (text.empty()) return;
    if (m.empty()) {
        out.push_back({std::string(text), -1});
        return;
    }
    std::size_t segStart = 0;  // start of the pending text segment
    std::size_t pos = 0;
    while (pos < text.size()) {
        const long idx = m.longestAt(added, text, pos);
        if (idx < 0) {
            ++pos;
            continue;
        }
        const AddedToken& tok = added[static_cast<std::size_t>(idx)];
        std::size_t start = pos, stop = pos + tok.pattern.size();
        if (tok.singleWord) {
            const bool startOk = start == 0 || !isWordCp(lastCp(text.substr(0, start)));
            const bool stopOk = stop == text.size() || !isWordCp(utf8Next(ubytes(text), text.size(), stop).cp);
            if (!startOk || !stopOk) {
                pos = stop;  // aho-corasick resumes after the rejected match
                continue;
            }
        }
        if (tok.lstrip) {
            while (start > segStart) {
                std::size_t k = start - 1;
                while (k > segStart && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
                if (!isWhitespaceCp(utf8Next(ubytes(text), text.size(), k).cp)) break;
                start = k;
            }
        }
        if (tok.rstrip) {
            while (stop < text.size()) {
                const Utf8Step st = utf8Next(ubytes(text), text.size(), stop);
                if (!isWhitespaceCp(st.cp)) break;
                stop += st.len;
            }
        }
        if (start > segStart) out.push_back({std::string(text.substr(segStart, start - segStart)), -1});
        out.push_back({{}, idx});
        segStart = pos = stop;
    }
    if (segStart < text.size()) out.push_back({std::string(text.substr(segStart)), -1});
}

}  // namespace draftscope
