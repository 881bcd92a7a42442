// Normalizers (HF normalizers NFC, NFD, NFKC, NFKD and Sequence) through utf8proc.

#include "draftscope/errors.h"
#include "text/tokenizer_impl.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

#include <utf8proc.h>

#include <cstdlib>

namespace draftscope {

using namespace text;

void Tokenizer::Impl::loadNormalizer(const json& n, const std::string& where) {
    if (n.is_null()) return;
    if (!n.is_object()) throw Error(where + ": expected an object or null, found " + typeName(n));
    const std::string type = getString(n, "type", where);
    if (type == "NFC") normalizers.push_back(NormForm::NFC);
    else if (type == "NFD") normalizers.push_back(NormForm::NFD);
    else if (type == "NFKC") normalizers.push_back(NormForm::NFKC);
    else if (type == "NFKD") normalizers.push_back(NormForm::NFKD);
    else if (type == "Sequence") {
        const auto list = n.find("normalizers");
        if (list == n.end() || !list->is_array()) throw Error(where + ".normalizers: expected an array");
        std::size_t i = 0;
        for (const auto& sub : *list) loadNormalizer(sub, where + ".normalizers[" + std::to_string(i++) + "]");
    } else {
        throw Error(where + ".type: \"" + type + "\" is not supported (expected NFC, NFD, NFKC, NFKD or Sequence)");
    }
}

std::string Tokenizer::Impl::normalize(std::string_view text) const {
    if (normalizers.empty() || isAscii(text)) return std::string(text);
    std::string cur(text);
    for (NormForm f : normalizers) {
        int opts = UTF8PROC_STABLE;
        switch (f) {
        case NormForm::NFC: opts |= UTF8PROC_COMPOSE; break;
        case NormForm::NFD: opts |= UTF8PROC_DECOMPOSE; break;
        case NormForm::NFKC: opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
        case NormForm::NFKD: opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
        }
        utf8proc_uint8_t* outBuf = nullptr;
        const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(cur.data()),
                                                static_cast<utf8proc_ssize_t>(cur.size()), &outBuf,
                                                static_cast<utf8proc_option_t>(opts));
        if (n < 0) {
            std::free(outBuf);
            throw Error(std::string("tokenizer: Unicode normalisation failed: ") + utf8proc_errmsg(n));
        }
        cur.assign(reinterpret_cast<const char*>(outBuf), static_cast<std::size_t>(n));
        std::free(outBuf);
    }
    return cur;
}

}  // namespace draftscope
