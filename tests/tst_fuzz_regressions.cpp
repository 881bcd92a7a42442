// Inputs the fuzz targets (tests/fuzz, docs/RELIABILITY.md "Fuzzing") found to crash or to
// escape as something other than draftscope::Error, each reduced and kept inline: every one
// must now be refused with a readable draftscope::Error naming the file and the problem.

#include "checkpoints/shard_index.h"
#include "draftscope/errors.h"
#include "draftscope/prompt_set.h"
#include "draftscope/tokenizer.h"
#include "io/torch_pickle.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace draftscope;
using testsupport::errorOf;

class TestFuzzRegressions : public QObject {
    Q_OBJECT

private slots:
    // fuzz_prompt_set: a number too large for a double ("81e308") made nlohmann::json throw
    // out_of_range (406), not parse_error; it escaped parsePromptSet uncaught.
    void promptSetNumberOverflow() {
        const auto msg = errorOf([] { parsePromptSet("{\"question_id\": 81e308, \"turns\": [\"a\"]}\n", "p.jsonl"); });
        QVERIFY2(msg.startsWith("prompt set 'p.jsonl' line 1: invalid JSON") && msg.contains("number overflow"),
                 qPrintable(msg));
    }

    // The same overflow in tokenizer_config.json (read by Tokenizer::fromDirectory).
    void tokenizerConfigNumberOverflow() {
        QTemporaryDir dir;
        std::filesystem::copy_file(testsupport::demoTarget() + "/tokenizer.json",
                                   dir.filePath("tokenizer.json").toStdString());
        std::ofstream(dir.filePath("tokenizer_config.json").toStdString()) << "{\"model_max_length\": 1e400}";
        const auto msg = errorOf([&] { Tokenizer::fromDirectory(dir.path().toStdString()); });
        QVERIFY2(msg.contains("tokenizer_config.json' is not valid JSON") && msg.contains("number overflow"),
                 qPrintable(msg));
    }

    // The fuzz targets' torch-free entry points behave as the file-based readers.
    void shardIndexEntryPoint() {
        const auto map = parseShardIndex(
            "{\"metadata\": {\"total_size\": 8}, \"weight_map\": {\"b.weight\": \"model-2.safetensors\", "
            "\"a.weight\": \"model-1.safetensors\"}}",
            "idx.json");
        QCOMPARE(map.size(), std::size_t{2});
        QCOMPARE(map[0].first, std::string("a.weight"));  // nlohmann::json keeps keys sorted
        QCOMPARE(map[0].second, std::string("model-1.safetensors"));
        QCOMPARE(map[1].second, std::string("model-2.safetensors"));
        auto msg = errorOf([] { parseShardIndex("{\"weight_map\": {\"w\": \"../x.safetensors\"}}", "idx.json"); });
        QVERIFY2(msg.contains("'idx.json': weight_map entry 'w' names shard '../x.safetensors', which is not a plain file name"),
                 qPrintable(msg));
        msg = errorOf([] { parseShardIndex("{\"weight_map\": {\"w\": 1e999}}", "idx.json"); });
        QVERIFY2(msg.startsWith("'idx.json' is not valid JSON"), qPrintable(msg));
        msg = errorOf([] { parseShardIndex("[]", "idx.json"); });
        QVERIFY2(msg.contains("required object 'weight_map' is missing"), qPrintable(msg));
    }

    void pickleEntryPoint() {
        // PROTO 2, EMPTY_DICT, BINPUT 0, BINUNICODE "a", BININT1 7, SETITEM, STOP: {'a': 7}
        const std::string pickle("\x80\x02}q\x00X\x01\x00\x00\x00" "aK\x07s.", 15);
        const auto ar = torchpickle::Archive::fromPickle(pickle, "p.pkl");
        QVERIFY(ar->root().isDict());
        const auto* a = ar->root().c->find("a");
        QVERIFY(a && a->kind == torchpickle::Value::Kind::Int);
        QCOMPARE(a->i, std::int64_t{7});
        const auto msg = errorOf([] { torchpickle::Archive::fromPickle(std::string("\x80\x02}", 3), "p.pkl"); });
        QVERIFY2(msg.contains("'p.pkl'") && msg.contains("without a STOP opcode"), qPrintable(msg));
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "tst_fuzz_regressions.moc"
