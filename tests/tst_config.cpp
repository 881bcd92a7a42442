// HF config.json parsing for targets and drafters, and the tapped-layer fallback rule.

#include "draftscope/errors.h"
#include "draftscope/masks.h"
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

    // ---- Drafter layouts (DFLASH.md section 9) ----

    static nlohmann::json drafterJson() { return readJson(demoDrafter() + "/config.json"); }
    static std::vector<LayerAttention> layout(std::initializer_list<std::pair<bool, std::int64_t>> l) {
        std::vector<LayerAttention> out;  // window 0 = none
        for (auto [causal, w] : l) out.push_back({causal, w ? std::optional<std::int64_t>(w) : std::nullopt});
        return out;
    }

    void fixtureLayoutsMatchReference_data() {
        QTest::addColumn<QString>("drafter");
        for (const char* d : {"drafter-swa", "drafter-modelopt-swa", "drafter-yarn", "drafter-good"}) QTest::newRow(d) << QString(d);
    }
    void fixtureLayoutsMatchReference() {
        QFETCH(QString, drafter);
        const auto d = loadDrafterConfig(drafterDir(drafter.toStdString()));
        const auto& ref = variantGoldens()["layouts"][drafter.toStdString()];
        QCOMPARE(d.layers.size(), ref.size());
        for (std::size_t i = 0; i < ref.size(); ++i) {
            QCOMPARE(d.layers[i].causal, ref[i][0].get<bool>());
            QCOMPARE(d.layers[i].window.has_value(), !ref[i][1].is_null());
            if (!ref[i][1].is_null()) QCOMPARE(*d.layers[i].window, ref[i][1].get<std::int64_t>());
        }
    }

    void layoutResolutionRules() {
        const auto load = [&](const char* name, const nlohmann::json& j) { return loadDrafterConfig(writeConfig(name, j)).layers; };
        auto j = drafterJson();
        // Base layout: no layer_types, no window keys.
        j.erase("layer_types");
        QCOMPARE(load("base", j), layout({{false, 0}, {false, 0}}));
        // Sliding layers: window from sliding_window when use_sliding_window is true; causal by default.
        j["layer_types"] = {"sliding_attention", "full_attention"};
        j["sliding_window"] = 32;
        j["use_sliding_window"] = true;
        QCOMPARE(load("swa", j), layout({{true, 32}, {false, 0}}));
        // Top-level is_causal decides every layer, over the sliding default.
        j["is_causal"] = false;
        QCOMPARE(load("notcausal", j), layout({{false, 32}, {false, 0}}));
        j["is_causal"] = true;
        QCOMPARE(load("allcausal", j), layout({{true, 32}, {true, 0}}));
        // is_causal wins over dflash_config.causal; without it dflash_config.causal decides.
        j["dflash_config"]["causal"] = false;
        QCOMPARE(load("iscausalwins", j), layout({{true, 32}, {true, 0}}));
        j.erase("is_causal");
        QCOMPARE(load("dflashcausal", j), layout({{false, 32}, {false, 0}}));
        j["dflash_config"].erase("causal");
        // dflash_config.swa_window_size wins over sliding_window.
        j["dflash_config"]["swa_window_size"] = 20;
        QCOMPARE(load("swasize", j), layout({{true, 20}, {false, 0}}));
        // use_swa turns every layer sliding only if none is sliding already.
        j["dflash_config"]["use_swa"] = true;
        QCOMPARE(load("useswa-kept", j), layout({{true, 20}, {false, 0}}));
        j["layer_types"] = {"full_attention", "full_attention"};
        QCOMPARE(load("useswa-all", j), layout({{true, 20}, {true, 20}}));
        j.erase("layer_types");
        QCOMPARE(load("useswa-nolayertypes", j), layout({{true, 20}, {true, 20}}));
        // A window that no layer uses changes nothing.
        auto k = drafterJson();
        k["sliding_window"] = 24;
        k["use_sliding_window"] = true;
        QCOMPARE(load("unusedwindow", k), layout({{false, 0}, {false, 0}}));
        QCOMPARE(describeLayout(load("fixture-swa", readJson(drafterDir("drafter-swa") + "/config.json"))),
                 std::string("sliding 24 causal, full bidirectional"));
        QCOMPARE(describeLayout(load("fixture-modelopt", readJson(drafterDir("drafter-modelopt-swa") + "/config.json"))),
                 std::string("2 x sliding 24 bidirectional"));
        QCOMPARE(describeLayout(load("base2", drafterJson())), std::string("2 x full bidirectional"));
        QCOMPARE(describeLayerAttention({true, std::nullopt}), std::string("full causal"));
    }

    void layoutErrorsNameTheKey() {
        auto j = drafterJson();
        j["layer_types"] = {"sliding_attention"};
        auto msg = errorOf([&] { loadDrafterConfig(writeConfig("lt-length", j)); });
        QVERIFY2(msg.contains("layer_types has 1 entries") && msg.contains("num_hidden_layers = 2"), qPrintable(msg));
        j["layer_types"] = {"sliding_attention", "linear_attention"};
        msg = errorOf([&] { loadDrafterConfig(writeConfig("lt-unknown", j)); });
        QVERIFY2(msg.contains("'linear_attention'") && msg.contains("sliding_attention"), qPrintable(msg));
        // Sliding without a window: sliding_window given but use_sliding_window false (HF drops it).
        j["layer_types"] = {"sliding_attention", "full_attention"};
        j["sliding_window"] = 24;
        j["use_sliding_window"] = false;
        msg = errorOf([&] { loadDrafterConfig(writeConfig("nowindow", j)); });
        QVERIFY2(msg.contains("layer 0 is sliding_attention") && msg.contains("use_sliding_window"), qPrintable(msg));
        j.erase("sliding_window");
        msg = errorOf([&] { loadDrafterConfig(writeConfig("nowindow2", j)); });
        QVERIFY2(msg.contains("no window is given") && msg.contains("swa_window_size"), qPrintable(msg));
        // A window smaller than the block.
        j["dflash_config"]["swa_window_size"] = 8;
        msg = errorOf([&] { loadDrafterConfig(writeConfig("smallwindow", j)); });
        QVERIFY2(msg.contains("dflash_config.swa_window_size = 8") && msg.contains("block_size = 16"), qPrintable(msg));
        j["dflash_config"]["swa_window_size"] = 0;
        msg = errorOf([&] { loadDrafterConfig(writeConfig("zerowindow", j)); });
        QVERIFY2(msg.contains("dflash_config.swa_window_size") && msg.contains("positive integer"), qPrintable(msg));
        j["dflash_config"]["swa_window_size"] = 16;
        j["is_causal"] = "yes";
        msg = errorOf([&] { loadDrafterConfig(writeConfig("badcausal", j)); });
        QVERIFY2(msg.contains("'is_causal'") && msg.contains("true or false"), qPrintable(msg));
    }

    void drafterScalingKeys() {
        auto j = drafterJson();
        const auto base = loadDrafterConfig(writeConfig("noscale", j));
        QCOMPARE(base.inputEmbeddingScale, 1.0);
        QCOMPARE(base.outputMultiplier, 1.0);
        QVERIFY(!base.finalLogitSoftcapping);
        j["input_embedding_scale"] = 3.0;  // top level, overridden by dflash_config
        j["dflash_config"]["input_embedding_scale"] = 16.0;
        j["output_multiplier"] = 0.5;
        j["final_logit_softcapping"] = 30.0;
        j.erase("block_size");
        j["dflash_config"]["block_size"] = 8;
        const auto d = loadDrafterConfig(writeConfig("scales", j));
        QCOMPARE(d.inputEmbeddingScale, 16.0);
        QCOMPARE(d.outputMultiplier, 0.5);
        QCOMPARE(*d.finalLogitSoftcapping, 30.0);
        QCOMPARE(d.blockSize, 8);
        j["block_size"] = 16;  // dflash_config still wins
        QCOMPARE(loadDrafterConfig(writeConfig("scales2", j)).blockSize, 8);
        j["final_logit_softcapping"] = -1.0;
        const auto msg = errorOf([&] { loadDrafterConfig(writeConfig("badcap", j)); });
        QVERIFY2(msg.contains("final_logit_softcapping must be positive"), qPrintable(msg));
    }

    void unimplementedKeysAreRefusedByName_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<bool>("inDflashConfig");
        QTest::addColumn<QString>("expected");
        QTest::newRow("speculators") << "transformer_layer_config" << false << "speculators";
        QTest::newRow("speculators taps") << "aux_hidden_state_layer_ids" << false << "speculators";
        QTest::newRow("draft vocab") << "draft_vocab_size" << false << "reduced draft vocabulary";
        QTest::newRow("draft vocab nested") << "draft_vocab_size" << true << "dflash_config.draft_vocab_size";
        QTest::newRow("attention softcap") << "attn_logit_softcapping" << false << "soft-capping";
        QTest::newRow("mlp bias") << "mlp_bias" << false << "MLP projections with bias";
    }
    void unimplementedKeysAreRefusedByName() {
        QFETCH(QString, key);
        QFETCH(bool, inDflashConfig);
        QFETCH(QString, expected);
        auto j = drafterJson();
        nlohmann::json value = key == "mlp_bias" ? nlohmann::json(true) : nlohmann::json(512);
        if (key == "transformer_layer_config") value = {{"hidden_size", 256}};
        if (key == "aux_hidden_state_layer_ids") value = {2, 3, 5};
        (inDflashConfig ? j["dflash_config"] : j)[key.toStdString()] = value;
        const auto msg = errorOf([&] { loadDrafterConfig(writeConfig("refuse-" + key.toStdString(), j)); });
        QVERIFY2(msg.contains("'" + QString(inDflashConfig ? "dflash_config." : "") + key + "'") && msg.contains(expected) &&
                     msg.contains("does not implement"),
                 qPrintable(msg));
        // null and false mean "not used" and load.
        (inDflashConfig ? j["dflash_config"] : j)[key.toStdString()] = nullptr;
        QVERIFY(errorOf([&] { loadDrafterConfig(writeConfig("null-" + key.toStdString(), j)); }).isEmpty());
    }

    void targetRefusesDrafterOnlyKeys() {
        for (const char* key : {"output_multiplier", "final_logit_softcapping", "input_embedding_scale"}) {
            auto j = demoTargetJson();
            j[key] = 2.0;
            const auto msg = errorOf([&] { loadTargetConfig(writeConfig(std::string("t-") + key, j)); });
            QVERIFY2(msg.contains(QString("'") + key + "'") && msg.contains("does not implement"), qPrintable(msg));
        }
        auto j = demoTargetJson();
        j["use_sliding_window"] = true;
        j["sliding_window"] = 4096;
        QVERIFY(errorOf([&] { loadTargetConfig(writeConfig("t-swa", j)); }).contains("sliding-window attention in a target"));
        j["use_sliding_window"] = false;  // HF then ignores sliding_window
        QVERIFY(errorOf([&] { loadTargetConfig(writeConfig("t-swa-off", j)); }).isEmpty());
        j["rope_parameters"] = {{"rope_type", "dynamic"}, {"factor", 2.0}, {"rope_theta", 1e6}};
        const auto msg = errorOf([&] { loadTargetConfig(writeConfig("t-dynamic", j)); });
        QVERIFY2(msg.contains("rope type 'dynamic'") && msg.contains("yarn"), qPrintable(msg));
    }

    // ---- YaRN (DFLASH.md section 11) ----

    void yarnWorkedNumbers() {
        RopeConfig r;
        r.type = "yarn";
        r.theta = 1e7;
        r.factor = 64;
        r.originalMaxPositions = 4096;
        auto y = yarnParameters(r, 128);
        QCOMPARE(y.rotaryDim, 128);
        QCOMPARE(y.low, 11.0);
        QCOMPARE(y.high, 26.0);
        QVERIFY(qAbs(y.attentionFactor - 1.4158883) < 1e-7);
        // gpt-oss: theta 150000, dim 64, factor 32, original 4096, truncate false.
        r.theta = 150000;
        r.factor = 32;
        r.truncate = false;
        y = yarnParameters(r, 64);
        QVERIFY2(qAbs(y.low - 8.092779) < 1e-6, qPrintable(QString::number(y.low, 'g', 10)));
        QVERIFY2(qAbs(y.high - 17.398025) < 1e-6, qPrintable(QString::number(y.high, 'g', 10)));
        QVERIFY(qAbs(y.attentionFactor - 1.3465736) < 1e-7);
        // attention_factor given wins; mscale / mscale_all_dim ratio (DeepSeek): f 40, 1.0 / 1.0 -> 1.
        r.attentionFactor = 0.75;
        QCOMPARE(yarnParameters(r, 64).attentionFactor, 0.75);
        r.attentionFactor.reset();
        r.factor = 40;
        r.mscale = 0.707;
        r.mscaleAllDim = 0.707;
        QCOMPARE(yarnParameters(r, 64).attentionFactor, 1.0);
        r.mscaleAllDim = 1.0;  // (0.1*0.707*ln40+1) / (0.1*ln40+1)
        QVERIFY(qAbs(yarnParameters(r, 64).attentionFactor - (0.0707 * std::log(40.0) + 1) / (0.1 * std::log(40.0) + 1)) < 1e-12);
        // Partial rotary: dim = int(head_dim * partial_rotary_factor); high clamps to dim - 1.
        r = {};
        r.type = "yarn";
        r.theta = 100;  // corr(beta_slow) = 32 ln(2^20 / 2pi) / (2 ln 100) = 41.8 > dim - 1
        r.factor = 4;
        r.originalMaxPositions = 1 << 20;
        r.partialRotaryFactor = 0.25;
        y = yarnParameters(r, 128);
        QCOMPARE(y.rotaryDim, 32);
        QCOMPARE(y.high, 31.0);
    }

    void yarnConfigKeys() {
        // 5.x rope_parameters of the fixture: factor 4, original 128, beta 32/1, theta 1e6.
        const auto d = loadDrafterConfig(drafterDir("drafter-yarn"));
        QCOMPARE(d.body.rope.type, std::string("yarn"));
        QCOMPARE(d.body.rope.factor, 4.0);
        QCOMPARE(d.body.rope.originalMaxPositions, 128);
        QCOMPARE(d.body.rope.betaFast, 32.0);
        QCOMPARE(d.body.rope.betaSlow, 1.0);
        QCOMPARE(d.body.rope.theta, 1e6);
        QVERIFY(d.body.rope.truncate);
        // 4.x rope_scaling on a target, every optional key; original defaults to max_position_embeddings.
        auto j = demoTargetJson();
        j.erase("rope_parameters");
        j["rope_theta"] = 150000.0;
        j["max_position_embeddings"] = 8192;
        j["rope_scaling"] = {{"type", "yarn"}, {"factor", 32.0}, {"beta_fast", 16.0}, {"beta_slow", 2.0},
                             {"mscale", 1.0}, {"mscale_all_dim", 0.5}, {"attention_factor", 1.25}, {"truncate", false}};
        const auto c = loadTargetConfig(writeConfig("yarn4x", j));
        QCOMPARE(c.rope.type, std::string("yarn"));
        QCOMPARE(c.rope.originalMaxPositions, 8192);
        QCOMPARE(c.rope.betaFast, 16.0);
        QCOMPARE(c.rope.betaSlow, 2.0);
        QCOMPARE(*c.rope.mscale, 1.0);
        QCOMPARE(*c.rope.mscaleAllDim, 0.5);
        QCOMPARE(*c.rope.attentionFactor, 1.25);
        QVERIFY(!c.rope.truncate);
        j["rope_scaling"].erase("factor");
        const auto msg = errorOf([&] { loadTargetConfig(writeConfig("yarn-nofactor", j)); });
        QVERIFY2(msg.contains("'rope_scaling.factor' is missing"), qPrintable(msg));
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
