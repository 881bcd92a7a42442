// Byte-level BPE tokenizer reproducing HuggingFace `tokenizers` (Rust) for GPT-2 / Qwen style
// tokenizer.json files. Semantics follow tokenizers' AddedVocabulary (added-token splitting),
// normalizers (NFC ...), pre_tokenizers (Split, ByteLevel), models::bpe (rank-ordered merges,
// Word::merge_all) and decoders::ByteLevel (byte-level inverse + from_utf8_lossy).
//
// This file is the public API. The sections live beside it in backend/src/text:
// tokenizer_loader.cpp (reading the files), tokenizer_json (field access, streaming parse),
// bpe_model.cpp, added_tokens, normalizer.cpp, pretokenizer (PCRE2), byte_level, utf8;
// tokenizer_impl.h holds the shared state.

#include "draftscope/tokenizer.h"

#include "draftscope/errors.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

#include <filesystem>

namespace draftscope {

using namespace text;
namespace fs = std::filesystem;

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

const Tokenizer::Impl& Tokenizer::impl() const {
    if (!impl_) throw Error("tokenizer: used after being moved from");
    return *impl_;
}

Tokenizer Tokenizer::fromFile(const std::string& tokenizerJsonPath) {
    const fs::path p(tokenizerJsonPath);
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
        throw Error("tokenizer file '" + tokenizerJsonPath + "' does not exist or is not a regular file");
    auto impl = std::make_unique<Impl>();
    impl->loadTokenizerJson(p);
    return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::fromDirectory(const std::string& dir) {
    const fs::path d(dir);
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw Error("tokenizer directory '" + dir + "' does not exist or is not a directory");
    const fs::path tj = d / "tokenizer.json";
    if (!fs::is_regular_file(tj, ec))
        throw Error("tokenizer.json not found: expected '" + tj.string() + "' in tokenizer directory '" + dir + "'");
    auto impl = std::make_unique<Impl>();
    impl->loadTokenizerJson(tj);
    const fs::path cfg = d / "tokenizer_config.json";
    if (fs::exists(cfg, ec)) impl->loadConfig(cfg);
    return Tokenizer(std::move(impl));
}

std::vector<std::int64_t> Tokenizer::encode(std::string_view text) const {
    const Impl& m = impl();
    if (const std::size_t bad = firstInvalidUtf8(text); bad != std::string_view::npos)
        throw Error("tokenizer: input text is not valid UTF-8 (invalid byte 0x" +
                    [&] {
                        static const char* hex = "0123456789abcdef";
                        const auto b = static_cast<unsigned char>(text[bad]);
                        return std::string{hex[b >> 4], hex[b & 15]};
                    }() +
                    " at byte offset " + std::to_string(bad) + ")");
    std::vector<std::int64_t> ids;
    if (text.empty()) return ids;

    std::vector<Segment> rawSegs;
    m.splitAdded(text, m.rawMatcher, rawSegs);

    MatchScratch& scratch = threadScratch();
    std::vector<Segment> normSegs;
    std::vector<std::string> pieces;
    for (Segment& seg : rawSegs) {
        if (seg.addedIndex >= 0) {
            ids.push_back(m.added[static_cast<std::size_t>(seg.addedIndex)].id);
            continue;
        }
        normSegs.clear();
        m.splitAdded(m.normalize(seg.text), m.normMatcher, normSegs);
        for (Segment& ns : normSegs) {
            if (ns.addedIndex >= 0) {
                ids.push_back(m.added[static_cast<std::size_t>(ns.addedIndex)].id);
                continue;
            }
            pieces.clear();
            m.preTokenize(std::move(ns.text), scratch, pieces);
            for (const std::string& w : pieces) m.bpe(w, ids);
        }
    }
    return ids;
}

std::string Tokenizer::decode(const std::vector<std::int64_t>& ids, bool skipSpecial) const {
    const Impl& m = impl();
    std::string bytes;
    for (const std::int64_t id : ids) {
        if (!m.known(id)) continue;
        const auto i = static_cast<std::size_t>(id);
        if (skipSpecial && (m.idFlags[i] & kSpecial)) continue;
        bytes += m.idBytes[i];
    }
    return utf8Lossy(bytes);
}

std::string Tokenizer::tokenPiece(std::int64_t id) const {
    const Impl& m = impl();
    if (!m.known(id)) return "<id " + std::to_string(id) + "?>";
    const std::string& bytes = m.idBytes[static_cast<std::size_t>(id)];
    std::string out;
    const auto* s = ubytes(bytes);
    for (std::size_t i = 0; i < bytes.size();) {
        const Utf8Step st = utf8Next(s, bytes.size(), i);
        if (st.valid) out.append(bytes, i, st.len);
        else appendHexEscapes(out, std::string_view(bytes).substr(i, st.len));
        i += st.len;
    }
    return out;
}

std::string Tokenizer::tokenBytes(std::int64_t id) const {
    const Impl& m = impl();
    return m.known(id) ? m.idBytes[static_cast<std::size_t>(id)] : std::string();
}

std::optional<std::string> Tokenizer::tokenString(std::int64_t id) const {
    const Impl& m = impl();
    if (!m.known(id)) return std::nullopt;
    return m.idString[static_cast<std::size_t>(id)];
}

std::int64_t Tokenizer::vocabSize() const { return static_cast<std::int64_t>(impl().idFlags.size()); }

std::optional<std::int64_t> Tokenizer::tokenId(std::string_view content) const { return impl().lookup(content); }

bool Tokenizer::isSpecial(std::int64_t id) const {
    const Impl& m = impl();
    return m.known(id) && (m.idFlags[static_cast<std::size_t>(id)] & kSpecial) != 0;
}

bool Tokenizer::isAddedToken(std::int64_t id) const {
    const Impl& m = impl();
    return m.known(id) && (m.idFlags[static_cast<std::size_t>(id)] & kAdded) != 0;
}

std::optional<std::int64_t> Tokenizer::eosTokenId() const { return impl().eosId; }
std::optional<std::int64_t> Tokenizer::padTokenId() const { return impl().padId; }
bool Tokenizer::hasChatTemplate() const { return impl().chatTemplate; }
const std::string& Tokenizer::sourcePath() const { return impl().path; }

}  // namespace draftscope
