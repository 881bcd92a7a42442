// HF config.json parsing for targets and drafters, and the tapped-layer fallback rule.

#include "draftscope/errors.h"
#include "draftscope/model_config.h"
#include "test_support.h"

#include <QtTest>

using namespace draftscope;
using namespace testsupport;

class TestConfig : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::string writeConfig(const std::string& name, const nlohmann::json& j) {
        const std::string dir = tmp_.path().toStdString() + "/" + name;
        std::filesystem::create_directories(dir);
        writeJson(dir + "/config.json", j);
        return dir;
    }
    static nlohmann::json demoTargetJson() { return readJson(demoTarget() + "/config.json"); }

    template <class F>
    static QString errorOf(F&& f) {
        try {
            f();
        } catch (const Error& e) {
            return QString::fromStdString(e.what());
        }
        return {};
    }

private slots:
    void demoTarget5xRopeParameters() {
        const auto c = loadTargetConfig(demoTarget());
        QCOMPARE(c.architecture, std::string("Qwen3ForCausalLM"));
        QVERIFY(c.family == TargetFamily::Qwen3);
        QCOMPARE(c.numLayers, 6);
        QCOMPARE(c.hiddenSize, 256);
        QCOMPARE(c.numHeads, 4);
        QCOMPARE(c.numKvHeads, 2);
        QCOMPARE(c.headDim, 64);
        QCOMPARE(c.vocabSize, 2048);
        QCOMPARE(c.rope.theta, 1000000.0);
        QCOMPARE(c.rope.type, std::string("default"));
        QCOMPARE(c.weightPrefix, std::string("model."));
        QCOMPARE(c.eosTokenIds, std::vector<std::int64_t>{2044});
        QVERIFY(!c.tieWordEmbeddings);
    }

    void rope4xTopLevelThetaAndLlama3Scaling() {
        auto j = demoTargetJson();
        j.erase("rope_parameters");
        j["architectures"] = {"LlamaForCausalLM"};
        j["rope_theta"] = 500000.0;
        j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
        j["tie_word_embeddings"] = true;
        const auto c = loadTargetConfig(writeConfig("llama", j));
        QVERIFY(c.family == TargetFamily::Llama);
        QCOMPARE(c.rope.theta, 500000.0);
        QCOMPARE(c.rope.type, std::string("llama3"));
        QCOMPARE(c.rope.factor, 8.0);
        QCOMPARE(c.rope.originalMaxPositions, 8192);
        QVERIFY(c.tieWordEmbeddings);
    }

    void textConfigNesting() {
        auto j = demoTargetJson();
        nlohmann::json outer = {{"architectures", {"Qwen3ForCausalLM"}}, {"model_type", "qwen3_vl"},
                                {"text_config", j}, {"tie_word_embeddings", true}};
        outer["text_config"].erase("tie_word_embeddings");
        const auto c = loadTargetConfig(writeConfig("nested", outer));
        QCOMPARE(c.hiddenSize, 256);
        QCOMPARE(c.weightPrefix, std::string("model.language_model."));
        QVERIFY(c.tieWordEmbeddings);  // top-level value used when text_config lacks it
    }

    void missingRequiredField() {
        auto j = demoTargetJson();
        j.erase("hidden_size");
        const auto dir = writeConfig("nohidden", j);
        const auto msg = errorOf([&] { loadTargetConfig(dir); });
        QVERIFY2(msg.contains("'hidden_size' is missing") && msg.contains("config.json"), qPrintable(msg));
    }

    void wrongFieldType() {
        auto j = demoTargetJson();
        j["num_hidden_layers"] = "six";
        const auto msg = errorOf([&] { loadTargetConfig(writeConfig("badtype", j)); });
        QVERIFY2(msg.contains("num_hidden_layers") && msg.contains("positive integer") && msg.contains("\"six\""), qPrintable(msg));
    }

    void unknownArchitecture() {
        auto j = demoTargetJson();
        j["architectures"] = {"GPTNeoXForCausalLM"};
        const auto msg = errorOf([&] { loadTargetConfig(writeConfig("neox", j)); });
        QVERIFY2(msg.contains("GPTNeoXForCausalLM") && msg.contains("not supported"), qPrintable(msg));
    }

    void drafterAsTargetIsExplained() {
        const auto msg = errorOf([&] { loadTargetConfig(demoDrafter()); });
        QVERIFY2(msg.contains("drafter"), qPrintable(msg));
    }

    void drafterFields() {
        const auto d = loadDrafterConfig(demoDrafter());
        QCOMPARE(d.blockSize, 16);
        QCOMPARE(d.maskTokenId, 2047);
        QCOMPARE(d.targetLayerIds, (std::vector<std::int64_t>{1, 2, 4}));
        QVERIFY(!d.targetLayerIdsDerived);
        QCOMPARE(d.numTargetLayers, 6);
        QCOMPARE(d.body.numLayers, 2);
    }

    void drafterTopLevelFieldsAndFallback() {
        auto j = readJson(demoDrafter() + "/config.json");
        j.erase("dflash_config");
        j["mask_token_id"] = 7;
        j["num_target_layers"] = 30;
        j["num_hidden_layers"] = 5;
        j["layer_types"] = std::vector<std::string>(5, "full_attention");
        const auto d = loadDrafterConfig(writeConfig("thirdparty", j));
        QCOMPARE(d.maskTokenId, 7);
        QVERIFY(d.targetLayerIdsDerived);
        QCOMPARE(d.targetLayerIds, (std::vector<std::int64_t>{1, 8, 14, 20, 27}));
    }

    void drafterWithoutMaskToken() {
        auto j = readJson(demoDrafter() + "/config.json");
        j["dflash_config"].erase("mask_token_id");
        const auto msg = errorOf([&] { loadDrafterConfig(writeConfig("nomask", j)); });
        QVERIFY2(msg.contains("mask_token_id"), qPrintable(msg));
    }

    void fallbackLayerIds() {
        // DFLASH.md section 1: round(1 + i*(L-4)/(n-1)), Python round (half to even).
        QCOMPARE(fallbackTargetLayerIds(30, 5), (std::vector<std::int64_t>{1, 8, 14, 20, 27}));
        QCOMPARE(fallbackTargetLayerIds(36, 5), (std::vector<std::int64_t>{1, 9, 17, 25, 33}));
        QCOMPARE(fallbackTargetLayerIds(6, 1), (std::vector<std::int64_t>{3}));
        // L=8, n=3: 1, 3, 5 exactly; L=9, n=3: 1, 3.5 -> 4, 6.
        QCOMPARE(fallbackTargetLayerIds(8, 3), (std::vector<std::int64_t>{1, 3, 5}));
        QCOMPARE(fallbackTargetLayerIds(9, 3), (std::vector<std::int64_t>{1, 4, 6}));
        // L=6, n=5: 1 + i*0.5 = 1, 1.5, 2, 2.5, 3 -> 1, 2, 2, 2, 3 (half to even).
        QCOMPARE(fallbackTargetLayerIds(6, 5), (std::vector<std::int64_t>{1, 2, 2, 2, 3}));
        QVERIFY(!errorOf([] { fallbackTargetLayerIds(0, 5); }).isEmpty());
    }

    void missingDirectoryAndFile() {
        QVERIFY(errorOf([] { loadTargetConfig("/nonexistent/model"); }).contains("not found"));
        const std::string empty = tmp_.path().toStdString() + "/empty";
        std::filesystem::create_directories(empty);
        QVERIFY(errorOf([&] { loadTargetConfig(empty); }).contains("no config.json"));
        writeBytes(empty + "/config.json", "{ not json");
        QVERIFY(errorOf([&] { loadTargetConfig(empty); }).contains("not valid JSON"));
    }
};

QTEST_GUILESS_MAIN(TestConfig)
#include "tst_config.moc"
