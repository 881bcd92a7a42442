// Tests for draftscope::Tokenizer (byte-level BPE from HF tokenizer.json) and renderChatML.
// Ground truth: tests/data/goldens.json ("tokenizer" ids produced by HF tokenizers, and the
// demo prompts' "prompt_ids"), and Qwen3's chat_template in tests/data/tokenizers/qwen3.

#include "draftscope/chat_template.h"
#include "draftscope/errors.h"
#include "draftscope/tokenizer.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>


// The time budgets below are for optimised builds; an ASan/UBSan build (tools/sanitize-tests.sh:
// -O0, every access checked) runs the tokenizer about 3x slower, so they are scaled there.
#ifdef DRAFTSCOPE_SANITIZED
constexpr qint64 kTimeScale = 4;
#else
constexpr qint64 kTimeScale = 1;
#endif
using draftscope::ChatMessage;
using draftscope::Error;
using draftscope::Tokenizer;
using json = nlohmann::json;
using Ids = std::vector<std::int64_t>;

namespace {

const std::string kTestData = DRAFTSCOPE_TEST_DATA;
const std::string kDemoDir = DRAFTSCOPE_DEMO_DIR;
const std::string kQwen3Dir = DRAFTSCOPE_QWEN3_TOKENIZER_DIR;  // unpacked from tests/data/tokenizers/qwen3/*.xz
const std::string kDemoTokDir = kDemoDir + "/target";

json readJson(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return json::parse(ss.str());
}

void writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

QString ids2str(const Ids& ids) {
    QStringList parts;
    for (auto id : ids) parts << QString::number(id);
    return "[" + parts.join(", ") + "]";
}

// Runs f, expects draftscope::Error whose message contains every string in `needles`.
template <typename F>
void expectError(F f, const std::vector<std::string>& needles) {
    try {
        f();
    } catch (const Error& e) {
        const std::string msg = e.what();
        for (const auto& n : needles)
            QVERIFY2(msg.find(n) != std::string::npos,
                     qPrintable(QString("message '%1' lacks '%2'").arg(QString::fromStdString(msg), QString::fromStdString(n))));
        return;
    } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("expected draftscope::Error, got std::exception: %1").arg(e.what())));
    }
    QFAIL("expected draftscope::Error, nothing was thrown");
}

}  // namespace

class TstTokenizer : public QObject {
    Q_OBJECT

    std::unique_ptr<Tokenizer> qwen3_;
    std::unique_ptr<Tokenizer> demo_;
    json goldens_;

private slots:
    void initTestCase() {
        goldens_ = readJson(kTestData + "/goldens.json");
        QElapsedTimer t;
        t.start();
        qwen3_ = std::make_unique<Tokenizer>(Tokenizer::fromDirectory(kQwen3Dir));
        const qint64 ms = t.elapsed();
        qInfo("qwen3 tokenizer (11 MB tokenizer.json, 151k merges) loaded in %lld ms", ms);
        QVERIFY2(ms < 10000 * kTimeScale, "loading the Qwen3 tokenizer should take well under 10 s");
        demo_ = std::make_unique<Tokenizer>(Tokenizer::fromDirectory(kDemoTokDir));
    }

    // ---- golden ids ------------------------------------------------------------------

    void goldenIds_data() {
        QTest::addColumn<QString>("which");
        QTest::addColumn<int>("index");
        const auto& texts = goldens_["tokenizer"]["texts"];
        for (const char* which : {"qwen3", "demo"})
            for (int i = 0; i < static_cast<int>(texts.size()); ++i)
                QTest::newRow(qPrintable(QString("%1/%2").arg(which).arg(i))) << QString(which) << i;
    }
    void goldenIds() {
        QFETCH(QString, which);
        QFETCH(int, index);
        const Tokenizer& tok = which == "qwen3" ? *qwen3_ : *demo_;
        const std::string text = goldens_["tokenizer"]["texts"][index].get<std::string>();
        const Ids expected = goldens_["tokenizer"][which.toStdString()][index].get<Ids>();
        const Ids got = tok.encode(text);
        QVERIFY2(got == expected, qPrintable("got " + ids2str(got) + "\nexpected " + ids2str(expected)));
        QCOMPARE(tok.decode(got), text);
    }

    void demoPromptIds_data() {
        QTest::addColumn<QString>("key");
        for (const char* k : {"0", "1", "2", "3"}) QTest::newRow(k) << QString(k);
    }
    void demoPromptIds() {
        QFETCH(QString, key);
        const std::string prompt = goldens_["prompts"][key.toStdString()].get<std::string>();
        const Ids expected = goldens_["prompt_ids"][key.toStdString()].get<Ids>();
        const Ids got = demo_->encode(prompt);
        QVERIFY2(got == expected, qPrintable("got " + ids2str(got) + "\nexpected " + ids2str(expected)));
        QCOMPARE(demo_->decode(got), prompt);
    }

    // ---- decode / pieces -------------------------------------------------------------

    void roundTripMisc() {
        const std::vector<std::string> texts = {
            "",
            " ",
            "\n\n\n",
            "   \t  x  \n  ",
            "I'm sure they'll've DONE it; IT'S fine",
            "Ünïcödé ✓ ∑ 𝔘 👩‍👩‍👧 ﷽",
            "mixed<|im_end|>specials<|endoftext|><think>\nhm\n</think>\n\n",
            std::string("nul\0byte", 8),
            "ааааааааааааааааааааааааааааааааааааааааааааааа",
        };
        for (const auto& t : texts) {
            QCOMPARE(qwen3_->decode(qwen3_->encode(t)), t);
            QCOMPARE(demo_->decode(demo_->encode(t)), t);
        }
        QVERIFY(qwen3_->encode("").empty());
        QCOMPARE(qwen3_->decode({}), std::string());
    }

    void tokenPieces() {
        QCOMPARE(qwen3_->tokenPiece(9707), std::string("Hello"));
        QCOMPARE(qwen3_->tokenPiece(1879), std::string(" world"));
        QCOMPARE(qwen3_->tokenPiece(198), std::string("\n"));
        QCOMPARE(qwen3_->tokenPiece(151644), std::string("<|im_start|>"));
        QCOMPARE(qwen3_->tokenPiece(151667), std::string("<think>"));
        // " 🤖" = 20 F0 9F A4 96 is split by BPE into incomplete UTF-8 pieces.
        const Ids robot = qwen3_->encode(" \xF0\x9F\xA4\x96");
        QCOMPARE(robot, (Ids{11162, 97, 244}));
        QCOMPARE(qwen3_->tokenPiece(11162), std::string(" \\xf0\\x9f"));
        QCOMPARE(qwen3_->tokenPiece(97), std::string("\\xa4"));
        QCOMPARE(qwen3_->tokenPiece(244), std::string("\\x96"));
        QCOMPARE(qwen3_->tokenBytes(11162), std::string(" \xF0\x9F"));
        // Out of range ids do not throw.
        QCOMPARE(qwen3_->tokenPiece(-1), std::string("<id -1?>"));
        QCOMPARE(qwen3_->tokenPiece(151669), std::string("<id 151669?>"));
        QCOMPARE(demo_->tokenPiece(5000), std::string("<id 5000?>"));
        QCOMPARE(qwen3_->tokenString(1879), std::optional<std::string>("\xC4\xA0world"));  // "Ġworld"
        QCOMPARE(qwen3_->tokenString(-5), std::optional<std::string>());
    }

    void decodeInvalidUtf8() {
        // Incomplete sequences decode to U+FFFD (one per maximal invalid subpart, like Rust's
        // from_utf8_lossy), complete ones reassemble across tokens.
        QCOMPARE(qwen3_->decode({11162}), std::string(" \xEF\xBF\xBD"));
        QCOMPARE(qwen3_->decode({97, 244}), std::string("\xEF\xBF\xBD\xEF\xBF\xBD"));
        QCOMPARE(qwen3_->decode({11162, 97, 244}), std::string(" \xF0\x9F\xA4\x96"));
        QCOMPARE(qwen3_->decode({11162, 9707}), std::string(" \xEF\xBF\xBDHello"));
        // Unknown ids are skipped, as HF does.
        QCOMPARE(qwen3_->decode({9707, -3, 999999999, 1879}), std::string("Hello world"));
    }

    // ---- special tokens --------------------------------------------------------------

    void specialTokens() {
        QCOMPARE(qwen3_->vocabSize(), std::int64_t{151669});
        QCOMPARE(demo_->vocabSize(), std::int64_t{2048});
        QCOMPARE(qwen3_->tokenId("<|im_start|>"), std::optional<std::int64_t>(151644));
        QCOMPARE(qwen3_->tokenId("<|im_end|>"), std::optional<std::int64_t>(151645));
        QCOMPARE(qwen3_->tokenId("\xC4\xA0world"), std::optional<std::int64_t>(1879));
        QCOMPARE(qwen3_->tokenId("no such token"), std::optional<std::int64_t>());
        QCOMPARE(demo_->tokenId("<|MASK|>"), std::optional<std::int64_t>(2047));

        QVERIFY(qwen3_->isSpecial(151643));
        QVERIFY(qwen3_->isSpecial(151644));
        QVERIFY(!qwen3_->isSpecial(151667));  // <think> is an added, non-special token
        QVERIFY(qwen3_->isAddedToken(151667));
        QVERIFY(!qwen3_->isSpecial(9707));
        QVERIFY(!qwen3_->isSpecial(-1));
        QVERIFY(!qwen3_->isSpecial(1 << 30));
        QVERIFY(demo_->isSpecial(2047));

        // eos_token from tokenizer_config.json: Qwen3 names <|im_end|>, the demo <|endoftext|>.
        QCOMPARE(qwen3_->eosTokenId(), std::optional<std::int64_t>(151645));
        QCOMPARE(qwen3_->padTokenId(), std::optional<std::int64_t>(151643));
        QCOMPARE(demo_->eosTokenId(), std::optional<std::int64_t>(2044));
        QVERIFY(qwen3_->hasChatTemplate());
        QVERIFY(demo_->hasChatTemplate());
        // fromFile reads no tokenizer_config.json.
        const Tokenizer bare = Tokenizer::fromFile(kDemoTokDir + "/tokenizer.json");
        QCOMPARE(bare.eosTokenId(), std::optional<std::int64_t>());
        QVERIFY(!bare.hasChatTemplate());
        QCOMPARE(bare.encode("Hello world"), demo_->encode("Hello world"));

        // Added tokens are matched before the pre-tokenizer and win over BPE, longest first.
        QCOMPARE(qwen3_->encode("<|im_end|>"), (Ids{151645}));
        QCOMPARE(qwen3_->encode("<think></think>"), (Ids{151667, 151668}));
        QCOMPARE(qwen3_->encode("a<|im_start|>b"),
                 (Ids{qwen3_->encode("a")[0], 151644, qwen3_->encode("b")[0]}));
        // A broken special token is plain text.
        const Ids broken = qwen3_->encode("<|im_start|");
        QVERIFY(std::find(broken.begin(), broken.end(), 151644) == broken.end());

        // skipSpecial drops special tokens only.
        const Ids ids = qwen3_->encode("<|im_start|>user\nhi<|im_end|>\n<think>x</think>");
        QCOMPARE(qwen3_->decode(ids), std::string("<|im_start|>user\nhi<|im_end|>\n<think>x</think>"));
        QCOMPARE(qwen3_->decode(ids, true), std::string("user\nhi\n<think>x</think>"));
    }

    void nfc() {
        // "e" + COMBINING ACUTE ACCENT is NFC-normalised to "é" before BPE.
        QCOMPARE(qwen3_->encode("e\xCC\x81"), qwen3_->encode("\xC3\xA9"));
        QCOMPARE(qwen3_->encode("caf" "e\xCC\x81 au lait"), qwen3_->encode("caf\xC3\xA9 au lait"));
        QCOMPARE(demo_->encode("nai\xCC\x88ve"), demo_->encode("na\xC3\xAFve"));
        // Decoding gives the normalised text.
        QCOMPARE(qwen3_->decode(qwen3_->encode("e\xCC\x81")), std::string("\xC3\xA9"));
        // Hangul jamo compose too.
        QCOMPARE(qwen3_->encode("\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"), qwen3_->encode("\xED\x95\x9C"));
    }

    void invalidUtf8Input() {
        expectError([&] { qwen3_->encode("ok \xC3"); }, {"UTF-8", "offset 3"});
        expectError([&] { qwen3_->encode("\xFF"); }, {"UTF-8"});
        expectError([&] { qwen3_->encode("\xED\xA0\x80"); }, {"UTF-8"});  // surrogate
    }

    void cacheConsistency() {
        // Repeated encodes (cache hits) give the same result as the first (cache miss).
        const std::string text = goldens_["tokenizer"]["texts"][1].get<std::string>();
        const Ids a = qwen3_->encode(text);
        for (int i = 0; i < 3; ++i) QCOMPARE(qwen3_->encode(text), a);
    }

    void concurrentEncode() {
        // const member functions may be called from several threads at once.
        const auto& texts = goldens_["tokenizer"]["texts"];
        std::atomic<int> mismatches{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int rep = 0; rep < 50; ++rep)
                    for (std::size_t i = 0; i < texts.size(); ++i) {
                        const std::string text = texts[i].get<std::string>() + std::to_string(rep * 4 + t);
                        const Ids ids = qwen3_->encode(text);
                        if (qwen3_->decode(ids) != text) ++mismatches;
                    }
            });
        for (auto& th : threads) th.join();
        QCOMPARE(mismatches.load(), 0);
    }

    void moveSemantics() {
        Tokenizer a = Tokenizer::fromDirectory(kDemoTokDir);
        const Ids ids = a.encode("def main():");
        Tokenizer b(std::move(a));
        QCOMPARE(b.encode("def main():"), ids);
        Tokenizer c = Tokenizer::fromFile(kDemoTokDir + "/tokenizer.json");
        c = std::move(b);
        QCOMPARE(c.encode("def main():"), ids);
        QCOMPARE(c.eosTokenId(), std::optional<std::int64_t>(2044));
    }

    // ---- variants of tokenizer.json --------------------------------------------------

    void mergesAsStrings() {
        json j = readJson(kDemoTokDir + "/tokenizer.json");
        json merges = json::array();
        for (const auto& m : j["model"]["merges"]) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
        j["model"]["merges"] = merges;
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.path().toStdString() + "/tokenizer.json";
        writeFile(path, j.dump());
        const Tokenizer t = Tokenizer::fromFile(path);
        const auto& texts = goldens_["tokenizer"]["texts"];
        for (std::size_t i = 0; i < texts.size(); ++i)
            QCOMPARE(t.encode(texts[i].get<std::string>()), goldens_["tokenizer"]["demo"][i].get<Ids>());
    }

    void bareByteLevelPreTokenizer() {
        // GPT-2 style: a single ByteLevel pre-tokenizer with use_regex = true.
        json j = readJson(kDemoTokDir + "/tokenizer.json");
        j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/tokenizer.json";
        writeFile(path, j.dump());
        const Tokenizer t = Tokenizer::fromFile(path);
        // Both regexes split these texts identically.
        for (const char* s : {"Hello world", "import os\nimport sys\n", "x = 1 + 2"})
            QCOMPARE(t.encode(s), demo_->encode(s));
        // The GPT-2 regex groups digits ("1234" is one pre-token); the Qwen regex splits them.
        QCOMPARE(t.decode(t.encode("n = 1234")), std::string("n = 1234"));
        // add_prefix_space prepends a space to text that lacks one.
        j["pre_tokenizer"]["add_prefix_space"] = true;
        writeFile(path, j.dump());
        const Tokenizer p = Tokenizer::fromFile(path);
        QCOMPARE(p.encode("world"), demo_->encode(" world"));
    }

    void addedTokenStripping() {
        json j = readJson(kDemoTokDir + "/tokenizer.json");
        j["added_tokens"].push_back({{"id", 2048}, {"content", "<X>"}, {"single_word", false}, {"lstrip", true},
                                     {"rstrip", true}, {"normalized", false}, {"special", true}});
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/tokenizer.json";
        writeFile(path, j.dump());
        const Tokenizer t = Tokenizer::fromFile(path);
        QCOMPARE(t.vocabSize(), std::int64_t{2049});
        Ids expected = t.encode("a");
        expected.push_back(2048);
        const Ids b = t.encode("b");
        expected.insert(expected.end(), b.begin(), b.end());
        QCOMPARE(t.encode("a  <X>\t b"), expected);
    }

    void addedTokenOptions() {
        // normalized=true tokens are matched on NFC text against their NFC form; single_word
        // tokens only match between non-word characters (HF AddedVocabulary semantics).
        json j = readJson(kDemoTokDir + "/tokenizer.json");
        j["added_tokens"].push_back({{"id", 2048}, {"content", "cafe\u0301"}, {"single_word", false}, {"lstrip", false},
                                     {"rstrip", false}, {"normalized", true}, {"special", false}});
        j["added_tokens"].push_back({{"id", 2049}, {"content", "ony"}, {"single_word", true}, {"lstrip", false},
                                     {"rstrip", false}, {"normalized", false}, {"special", false}});
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/tokenizer.json";
        writeFile(path, j.dump());
        const Tokenizer t = Tokenizer::fromFile(path);
        QCOMPARE(t.encode("caf\xC3\xA9"), (Ids{2048}));
        QCOMPARE(t.encode("cafe\xCC\x81"), (Ids{2048}));
        QCOMPARE(t.tokenId("cafe\xCC\x81"), std::optional<std::int64_t>(2048));
        QVERIFY(!t.isSpecial(2048));
        QVERIFY(t.isAddedToken(2048));
        const Ids anthony = t.encode("Anthony");
        QVERIFY(std::find(anthony.begin(), anthony.end(), 2049) == anthony.end());
        QCOMPARE(t.encode("ony"), (Ids{2049}));
        const Ids spaced = t.encode("a ony b");
        QVERIFY(std::find(spaced.begin(), spaced.end(), 2049) != spaced.end());
    }

    void addedTokenIdsFollowHf() {
        // HF assigns added-token ids itself: a content that is already a vocab key keeps its
        // vocab id whatever "id" says (HF only warns); a new content gets the next free id.
        json j = readJson(kDemoTokDir + "/tokenizer.json");
        const std::string vocabKey = demo_->tokenString(300).value();
        j["added_tokens"].push_back({{"id", 2048}, {"content", vocabKey}, {"single_word", false}, {"lstrip", false},
                                     {"rstrip", false}, {"normalized", false}, {"special", false}});
        j["added_tokens"].push_back({{"id", 2100}, {"content", "<NEW>"}, {"single_word", false}, {"lstrip", false},
                                     {"rstrip", false}, {"normalized", false}, {"special", true}});
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/tokenizer.json";
        writeFile(path, j.dump());
        const Tokenizer t = Tokenizer::fromFile(path);
        QCOMPARE(t.tokenId(vocabKey), std::optional<std::int64_t>(300));
        QVERIFY(t.isAddedToken(300));
        QCOMPARE(t.tokenId("<NEW>"), std::optional<std::int64_t>(2048));
        QVERIFY(t.isSpecial(2048));
        QCOMPARE(t.vocabSize(), std::int64_t{2049});
    }

    void ignoreMerges() {
        // ignore_merges (Llama-3 style): a pre-token that is itself a vocab entry maps to it directly.
        json j = readJson(kDemoTokDir + "/tokenizer.json");
        j["model"]["ignore_merges"] = true;
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/tokenizer.json";
        writeFile(path, j.dump());
        const Tokenizer t = Tokenizer::fromFile(path);
        const auto& texts = goldens_["tokenizer"]["texts"];
        for (const auto& text : texts) QCOMPARE(t.decode(t.encode(text.get<std::string>())), text.get<std::string>());
        // Single-token words are unchanged.
        QCOMPARE(t.encode(" world"), demo_->encode(" world"));
    }

    // ---- bad input -------------------------------------------------------------------

    void missingDirectory() {
        const std::string d = kTestData + "/no/such/tokenizer_dir";
        expectError([&] { Tokenizer::fromDirectory(d); }, {d});
    }

    void missingTokenizerJson() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string d = dir.path().toStdString();
        expectError([&] { Tokenizer::fromDirectory(d); }, {"tokenizer.json", d});
        expectError([&] { Tokenizer::fromFile(d + "/tokenizer.json"); }, {d + "/tokenizer.json"});
    }

    void corruptJson() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        writeFile(d + "/tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 0,");
        expectError([&] { Tokenizer::fromDirectory(d); }, {d + "/tokenizer.json", "JSON"});
    }

    void corruptConfigJson() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        json j = readJson(kDemoTokDir + "/tokenizer.json");
        writeFile(d + "/tokenizer.json", j.dump());
        writeFile(d + "/tokenizer_config.json", "{ not json");
        expectError([&] { Tokenizer::fromDirectory(d); }, {d + "/tokenizer_config.json", "JSON"});
        writeFile(d + "/tokenizer_config.json", R"({"eos_token": "<|nope|>"})");
        expectError([&] { Tokenizer::fromDirectory(d); }, {d + "/tokenizer_config.json", "eos_token", "<|nope|>"});
        writeFile(d + "/tokenizer_config.json", R"({"eos_token": {"content": "<|MASK|>", "special": true}})");
        QCOMPARE(Tokenizer::fromDirectory(d).eosTokenId(), std::optional<std::int64_t>(2047));
    }

    void missingVocab() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        json j = readJson(kDemoTokDir + "/tokenizer.json");
        j["model"].erase("vocab");
        writeFile(d + "/tokenizer.json", j.dump());
        expectError([&] { Tokenizer::fromDirectory(d); }, {d + "/tokenizer.json", "model.vocab"});
        writeFile(d + "/tokenizer.json", R"({"version": "1.0"})");
        expectError([&] { Tokenizer::fromDirectory(d); }, {d + "/tokenizer.json", "model"});
    }

    void malformedContent() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        const std::string path = d + "/tokenizer.json";
        const json base = readJson(kDemoTokDir + "/tokenizer.json");

        json j = base;
        j["model"]["merges"].push_back(json::array({"zz\xC4\xA0", "qq"}));
        writeFile(path, j.dump());
        expectError([&] { Tokenizer::fromFile(path); }, {path, "model.merges[1788]", "not in model.vocab"});

        j = base;
        j["model"]["merges"].push_back("no-space-here");
        writeFile(path, j.dump());
        expectError([&] { Tokenizer::fromFile(path); }, {path, "model.merges[1788]"});

        j = base;
        j["model"]["vocab"]["x"] = "seven";
        writeFile(path, j.dump());
        expectError([&] { Tokenizer::fromFile(path); }, {path, "model.vocab[\"x\"]", "integer", "string"});

        j = base;
        j["model"]["type"] = "WordPiece";
        writeFile(path, j.dump());
        expectError([&] { Tokenizer::fromFile(path); }, {path, "model.type", "BPE", "WordPiece"});

        j = base;
        j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
        writeFile(path, j.dump());
        expectError([&] { Tokenizer::fromFile(path); }, {path, "pre_tokenizer.pretokenizers[0].pattern.Regex", "compile"});

        j = base;
        j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}};
        writeFile(path, j.dump());
        expectError([&] { Tokenizer::fromFile(path); }, {path, "pre_tokenizer.type", "Metaspace"});

        j = base;
        j["normalizer"] = {{"type", "Lowercase"}};
        writeFile(path, j.dump());
        expectError([&] { Tokenizer::fromFile(path); }, {path, "normalizer.type", "Lowercase"});

        j = base;
        j["added_tokens"].push_back({{"content", "<Y>"}});
        writeFile(path, j.dump());
        expectError([&] { Tokenizer::fromFile(path); }, {path, "added_tokens[4].id"});

        writeFile(path, "[1, 2, 3]");
        expectError([&] { Tokenizer::fromFile(path); }, {path, "object", "array"});
    }

    // ---- chat template ---------------------------------------------------------------

    void chatThinkingOn() {
        const std::vector<ChatMessage> msgs = {{"system", "You are terse."}, {"user", "Write FizzBuzz"}};
        QCOMPARE(draftscope::renderChatML(msgs, true, true),
                 std::string("<|im_start|>system\nYou are terse.<|im_end|>\n"
                             "<|im_start|>user\nWrite FizzBuzz<|im_end|>\n"
                             "<|im_start|>assistant\n"));
        QCOMPARE(draftscope::renderChatML(msgs, false, true),
                 std::string("<|im_start|>system\nYou are terse.<|im_end|>\n"
                             "<|im_start|>user\nWrite FizzBuzz<|im_end|>\n"));
        // The rendered prompt tokenises with the special tokens intact (cf. golden text 4).
        const std::string prompt = draftscope::renderChatML({{"user", "Write FizzBuzz"}}, true, true);
        QCOMPARE(prompt, goldens_["tokenizer"]["texts"][4].get<std::string>());
        QCOMPARE(qwen3_->encode(prompt), goldens_["tokenizer"]["qwen3"][4].get<Ids>());
    }

    void chatThinkingOff() {
        QCOMPARE(draftscope::renderChatML({{"user", "hi"}}, true, false),
                 std::string("<|im_start|>user\nhi<|im_end|>\n"
                             "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        // enable_thinking only matters with a generation prompt.
        QCOMPARE(draftscope::renderChatML({{"user", "hi"}}, false, false), std::string("<|im_start|>user\nhi<|im_end|>\n"));
    }

    void chatMultiTurn() {
        // Earlier assistant turns (before the last user query) lose their reasoning; the final
        // assistant turn after the last query keeps it, and gets an empty think block if it has none.
        const std::vector<ChatMessage> msgs = {
            {"user", "2+2?"},
            {"assistant", "<think>\nadd them\n</think>\n\n4"},
            {"user", "and 3+3?"},
            {"assistant", "<think>\n\nsimple\n\n</think>\n\n\n6"},
        };
        QCOMPARE(draftscope::renderChatML(msgs, false, true),
                 std::string("<|im_start|>user\n2+2?<|im_end|>\n"
                             "<|im_start|>assistant\n4<|im_end|>\n"
                             "<|im_start|>user\nand 3+3?<|im_end|>\n"
                             "<|im_start|>assistant\n<think>\nsimple\n</think>\n\n6<|im_end|>\n"));
        QCOMPARE(draftscope::renderChatML({{"user", "q"}, {"assistant", "plain answer"}}, true, false),
                 std::string("<|im_start|>user\nq<|im_end|>\n"
                             "<|im_start|>assistant\n<think>\n\n</think>\n\nplain answer<|im_end|>\n"
                             "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        // A non-final assistant turn after the last query without reasoning stays plain; a later
        // system message is rendered like a user turn; tool turns are grouped into one user turn.
        const std::vector<ChatMessage> tools = {
            {"user", "weather?"},
            {"assistant", "calling"},
            {"tool", "sunny"},
            {"tool", "22C"},
            {"system", "be brief"},
        };
        QCOMPARE(draftscope::renderChatML(tools, true, true),
                 std::string("<|im_start|>user\nweather?<|im_end|>\n"
                             "<|im_start|>assistant\ncalling<|im_end|>\n"
                             "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\n22C\n</tool_response><|im_end|>\n"
                             "<|im_start|>system\nbe brief<|im_end|>\n"
                             "<|im_start|>assistant\n"));
    }

    void chatBadInput() {
        expectError([] { draftscope::renderChatML({}, true, true); }, {"empty"});
        expectError([] { draftscope::renderChatML({{"user", "x"}, {"robot", "y"}}, true, true); }, {"robot", "message 1"});
    }

    // ---- speed -----------------------------------------------------------------------

    void encodeSpeed() {
        std::string big;
        const auto& texts = goldens_["tokenizer"]["texts"];
        while (big.size() < 1000000)
            for (const auto& t : texts) big += t.get<std::string>() + " " + std::to_string(big.size()) + " lorem ipsum dolor\n";
        QElapsedTimer t;
        t.start();
        const Ids ids = qwen3_->encode(big);
        const qint64 ms = t.elapsed();
        qInfo("qwen3 encode: %zu bytes -> %zu tokens in %lld ms", big.size(), ids.size(), ms);
        QCOMPARE(qwen3_->decode(ids), big);
        QVERIFY2(ms < 20000 * kTimeScale, "encoding 1 MB should take well under 20 s");
    }
};

QTEST_GUILESS_MAIN(TstTokenizer)
#include "tst_tokenizer.moc"
