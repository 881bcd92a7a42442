#pragma once
// Added tokens (HF tokenizers' AddedVocabulary): the tokens split out of the text before
// normalisation and pre-tokenisation, and their leftmost-longest matcher. Private.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace draftscope::text {

/// One entry of tokenizer.json's added_tokens.
struct AddedToken {
    std::int32_t id = 0;
    std::string content;
    std::string pattern;  // what is matched: content, normalised when `normalized` (as HF does)
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    bool special = false;
};

/// Leftmost-longest matcher over a set of added tokens (HF AddedVocabulary's aho-corasick
/// with MatchKind::LeftmostLongest).
class AddedMatcher {
public:
    /// Indexes the tokens whose `normalized` flag equals `normalized`.
    void build(const std::vector<AddedToken>& tokens, bool normalized) {
        for (auto& v : byFirst_) v.clear();
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (tokens[i].normalized != normalized || tokens[i].pattern.empty()) continue;
            byFirst_[static_cast<unsigned char>(tokens[i].pattern[0])].push_back(i);
            any_ = true;
        }
        for (auto& v : byFirst_)
            std::stable_sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) {
                return tokens[a].pattern.size() > tokens[b].pattern.size();
            });
    }
    bool empty() const { return !any_; }
    /// Index of the longest token matching at text[pos], or -1.
    long longestAt(const std::vector<AddedToken>& tokens, std::string_view text, std::size_t pos) const {
        for (std::size_t idx : byFirst_[static_cast<unsigned char>(text[pos])]) {
            const std::string& c = tokens[idx].pattern;
            if (text.size() - pos >= c.size() && text.compare(pos, c.size(), c) == 0) return static_cast<long>(idx);
        }
        return -1;
    }

private:
    std::array<std::vector<std::size_t>, 256> byFirst_;
    bool any_ = false;
};

}  // namespace draftscope::text
