#include "text/pretokenizer.h"

#include "draftscope/errors.h"
#include "text/tokenizer_impl.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

namespace draftscope::text {

std::string onigToPcre2(const std::string& pattern) {
    std::string out;
    out.reserve(pattern.size() + 32);
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c != '\\' || i + 1 >= pattern.size()) {
            out += c;
            continue;
        }
        const char n = pattern[++i];
        if (n == 's') {
            out += "\\p{White_Space}";
        } else if (n == 'S') {
            out += "\\P{White_Space}";
        } else if (n == 'Q') {  // \Q...\E quotes literally: copy through unchanged
            const std::size_t e = pattern.find("\\E", i + 1);
            const std::size_t stop = e == std::string::npos ? pattern.size() : e + 2;
            out.append(pattern, i - 1, stop - (i - 1));
            i = stop - 1;
        } else {
            out += c;
            out += n;
        }
    }
    return out;
}

Regex::Regex(const std::string& pattern, bool literal, const std::string& where) {
    int errcode = 0;
    PCRE2_SIZE erroff = 0;
    // PCRE2_LITERAL does not combine with PCRE2_UCP (nor needs it).
    const std::uint32_t opts = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
    const std::string translated = literal ? pattern : onigToPcre2(pattern);
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), opts, &errcode,
                          &erroff, nullptr);
    if (!code_) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(errcode, buf, sizeof buf);
        throw Error(where + ": regex failed to compile at offset " + std::to_string(erroff) + ": " +
                    reinterpret_cast<const char*>(buf) + " (pattern: " + pattern +
                    (translated != pattern ? ", as given to PCRE2: " + translated : std::string()) + ")");
    }
    jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
}

MatchScratch& threadScratch() {
    thread_local MatchScratch scratch;
    return scratch;
}

void regexSplit(const Regex& re, const std::string& s, bool removeMatches, bool invert, MatchScratch& scratch,
                std::vector<std::string>& out) {
    const std::size_t n = s.size();
    std::size_t last = 0, pos = 0;
    auto emit = [&](std::size_t a, std::size_t b, bool isMatch) {
        if (b <= a) return;
        if (invert) isMatch = !isMatch;
        if (removeMatches && isMatch) return;
        out.emplace_back(s, a, b - a);
    };
    while (pos <= n) {
        const int rc = pcre2_match(re.code(), reinterpret_cast<PCRE2_SPTR>(s.data()), n, pos, PCRE2_NO_UTF_CHECK,
                                   scratch.data(), scratch.ctx());
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR buf[256];
            pcre2_get_error_message(rc, buf, sizeof buf);
            throw Error(std::string("tokenizer: pre-tokenizer regex failed while matching: ") +
                        reinterpret_cast<const char*>(buf));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch.data());
        const std::size_t ms = ov[0], me = ov[1];
        if (me <= ms) {  // empty match: contributes nothing; step over one character
            if (ms >= n) break;
            pos = ms + utf8Next(ubytes(s), n, ms).len;
            continue;
        }
        emit(last, ms, false);
        emit(ms, me, true);
        last = pos = me;
    }
    emit(last, n, false);
}

}  // namespace draftscope::text

namespace draftscope {

using namespace text;

void Tokenizer::Impl::loadPreTokenizer(const json& p, const std::string& where, bool& sawByteLevel) {
    if (!p.is_object()) throw Error(where + ": expected an object, found " + typeName(p));
    const std::string type = getString(p, "type", where);
    if (type == "Sequence") {
        const auto list = p.find("pretokenizers");
        if (list == p.end() || !list->is_array()) throw Error(where + ".pretokenizers: expected an array");
        std::size_t i = 0;
        for (const auto& sub : *list) loadPreTokenizer(sub, where + ".pretokenizers[" + std::to_string(i++) + "]", sawByteLevel);
    } else if (type == "Split") {
        PreTokStep step;
        step.kind = PreTokStep::Kind::Split;
        const auto pat = p.find("pattern");
        if (pat == p.end() || !pat->is_object())
            throw Error(where + ".pattern is missing (expected {\"Regex\": ...} or {\"String\": ...})");
        if (const auto r = pat->find("Regex"); r != pat->end() && r->is_string())
            step.regex = std::make_shared<Regex>(r->get<std::string>(), false, where + ".pattern.Regex");
        else if (const auto s = pat->find("String"); s != pat->end() && s->is_string())
            step.regex = std::make_shared<Regex>(s->get<std::string>(), true, where + ".pattern.String");
        else
            throw Error(where + ".pattern: expected {\"Regex\": string} or {\"String\": string}, found " + pat->dump());
        const std::string behavior = getString(p, "behavior", where);
        if (behavior == "Isolated") step.removeMatches = false;
        else if (behavior == "Removed") step.removeMatches = true;
        else
            throw Error(where + ".behavior: \"" + behavior + "\" is not supported (expected Isolated or Removed)");
        step.invert = getBool(p, "invert", false, where);
        preTok.push_back(std::move(step));
    } else if (type == "ByteLevel") {
        sawByteLevel = true;
        PreTokStep step;
        step.kind = PreTokStep::Kind::ByteLevel;
        step.addPrefixSpace = getBool(p, "add_prefix_space", true, where);
        if (getBool(p, "use_regex", true, where)) step.regex = std::make_shared<Regex>(kGpt2Pattern, false, where);
        preTok.push_back(std::move(step));
    } else {
        throw Error(where + ".type: \"" + type + "\" is not supported (expected Sequence, Split or ByteLevel)");
    }
}

void Tokenizer::Impl::preTokenize(std::string text, MatchScratch& scratch, std::vector<std::string>& pieces) const {
    std::vector<std::string> cur, next;
    cur.push_back(std::move(text));
    for (const PreTokStep& step : preTok) {
        next.clear();
        for (std::string& piece : cur) {
            if (step.kind == PreTokStep::Kind::ByteLevel) {
                if (step.addPrefixSpace && (piece.empty() || piece.front() != ' ')) piece.insert(piece.begin(), ' ');
                if (!step.regex) {
                    next.push_back(std::move(piece));
                    continue;
                }
                regexSplit(*step.regex, piece, false, false, scratch, next);
            } else {
                regexSplit(*step.regex, piece, step.removeMatches, step.invert, scratch, next);
            }
        }
        std::swap(cur, next);
    }
    for (auto& p : cur) pieces.push_back(std::move(p));
}

}  // namespace draftscope
