// Inputs the fuzz targets (tests/fuzz, docs/RELIABILITY.md "Fuzzing") found to crash or to
// escape as something other than draftscope::Error, each reduced and kept inline: every one
// must now be refused with a readable draftscope::Error naming the file and the problem.

#include "checkpoints/shard_index.h"
#include "draftscope/errors.h"
#include "draftscope/prompt_set.h"
#include "draftscope/tokenizer.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace draftscope;
using testsupport::errorOf;

namespace {

std::string writeFile(const QTemporaryDir& dir, const std::string& name, const std::string& bytes) {
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

}  // namespace

class TestFuzzRegressions : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

private slots:
    void initTestCase() { QVERIFY(tmp_.isValid()); }

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
        writeFile(dir, "tokenizer_config.json", "{\"model_max_length\": 1e400}");
        const auto msg = errorOf([&] { Tokenizer::fromDirectory(dir.path().toStdString()); });
        QVERIFY2(msg.contains("tokenizer_config.json' is not valid JSON") && msg.contains("number overflow"),
                 qPrintable(msg));
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "tst_fuzz_regressions.moc"
