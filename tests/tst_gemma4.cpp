// Gemma 4 text targets (issue 31): the HF Gemma4TextConfig defaults and the configs draftscope
// must refuse, the proportional rotary schedule against hand-computed values, and tiny random
// Gemma4ForCausalLM checkpoints written here (float32, names and shapes as HF's
// modeling_gemma4.py holds them): parameter counts by hand, cached decode steps against the
// uncached prefill (sliding windows past their width, KV sharing, per-layer inputs, the MoE
// block), final logit soft-capping against the uncapped logits, the embedding scale, the
// multimodal layout (Gemma4ForConditionalGeneration) against the text-only one, and the
// DFlash chain and DDTree loops against greedy decoding.
// HF goldens (tests/data/gemma4, made by tools/make_gemma4_fixtures.py with HF transformers 5.17
// on the GPU machine): HF's own saved checkpoints (bf16, per_layer_config as 5.17 writes it)
// loaded here and compared in float32 with HF's prefill hidden states and logits, three cached
// decode steps, a cached 6-token verify block (max abs diff within 1e-4 of the golden's max abs)
// and HF generate()'s greedy ids; the MoE model's expert choice per token against HF's router.

// Torch headers first: ATen uses `slots` as an identifier, which Qt defines as a macro.
#include "models/layers.h"

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/inspector.h"
#include "draftscope/model_config.h"
#include "draftscope/results_json.h"
#include "draftscope/safetensors.h"
#include "gemma4_support.h"
#include "hf_step_goldens.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

using namespace draftscope;
using namespace testsupport;
using namespace testsupport::gemma4;

namespace {


std::vector<std::int64_t> someIds(std::size_t n, std::uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<std::int64_t> d(3, kV - 2);
    std::vector<std::int64_t> ids(n);
    for (auto& i : ids) i = d(gen);
    return ids;
}

std::vector<float> rows(const std::vector<float>& x, std::size_t width, std::size_t from, std::size_t count) {
    return {x.begin() + static_cast<std::ptrdiff_t>(from * width),
            x.begin() + static_cast<std::ptrdiff_t>((from + count) * width)};
}

/// The error of loading a tiny dense model whose config `edit` changed ("" if it loads).
QString loadErrorWithConfig(const std::function<void(nlohmann::json&)>& edit) {
    QTemporaryDir tmp;
    const auto dir = tmp.path().toStdString() + "/m";
    writeTinyGemma4(dir, kDense, 5);
    auto c = readJson(dir + "/config.json");
    edit(c);
    writeJson(dir + "/config.json", c);
    return errorOf([&] { Engine().loadTarget(dir); });
}

std::string hfDir(const std::string& name) { return unpackedDataPath("gemma4/" + name); }

const SafetensorsFile& hfGoldens() {
    static const auto f = SafetensorsFile::open(unpackedDataPath("gemma4/goldens.safetensors"));
    return *f;
}

/// Data rows: the two HF-made checkpoints, column "model".
void hfModels() {
    QTest::addColumn<QString>("model");
    QTest::newRow("dense") << "tiny-gemma4";
    QTest::newRow("moe") << "tiny-gemma4-moe";
}

void variants() {
    QTest::addColumn<int>("which");
    QTest::newRow("dense-kEqV-ple-shared") << 0;
    QTest::newRow("moe") << 1;
}
const Variant& variantOf(int which) { return which == 0 ? kDense : kMoe; }

}  // namespace

class TestGemma4 : public QObject {
    Q_OBJECT

private slots:
    void configTakesHfDefaults() {
        // A config that writes only the required sizes: HF Gemma4TextConfig's defaults apply.
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString();
        writeJson(dir + "/config.json", {{"architectures", {"Gemma4ForCausalLM"}}, {"hidden_size", 64},
                                         {"intermediate_size", 128}, {"num_hidden_layers", 7},
                                         {"num_attention_heads", 8}, {"vocab_size", 1000}});
        const auto c = loadTargetConfig(dir);
        QCOMPARE(c.family, TargetFamily::Gemma4);
        QCOMPARE(c.headDim, std::int64_t(256));
        QCOMPARE(c.numKvHeads, std::int64_t(4));
        QCOMPARE(c.slidingWindow, std::int64_t(512));
        QCOMPARE(c.maxPositions, std::int64_t(131072));
        // Five sliding, one full, and HF forces the last layer full.
        const std::vector<std::string> types = {"sliding_attention", "sliding_attention", "sliding_attention",
                                                "sliding_attention", "sliding_attention", "full_attention",
                                                "full_attention"};
        QCOMPARE(c.layerTypes, types);
        QVERIFY(c.tieWordEmbeddings);
        QCOMPARE(c.gemma4.globalHeadDim, std::int64_t(512));
        QCOMPARE(c.headDimOf(0), std::int64_t(256));
        QCOMPARE(c.headDimOf(5), std::int64_t(512));
        QCOMPARE(c.gemma4.perLayerInputSize, std::int64_t(256));
        QCOMPARE(c.gemma4.perLayerVocabSize, std::int64_t(262144));
        QCOMPARE(c.rope.type, std::string("default"));
        QCOMPARE(c.rope.theta, 10000.0);
        QCOMPARE(c.gemma4.fullRope.type, std::string("proportional"));
        QCOMPARE(c.gemma4.fullRope.partialRotaryFactor, 0.25);
        QCOMPARE(c.gemma4.fullRope.theta, 1e6);
        QVERIFY(!c.gemma4.finalLogitSoftcapping);
        QCOMPARE(c.kvSourceLayer(6), std::int64_t(-1));
        // Explicit null turns per-layer inputs off (HF tests the value's truth).
        writeJson(dir + "/config.json", {{"architectures", {"Gemma4ForCausalLM"}}, {"hidden_size", 64},
                                         {"intermediate_size", 128}, {"num_hidden_layers", 7},
                                         {"num_attention_heads", 8}, {"vocab_size", 1000},
                                         {"hidden_size_per_layer_input", nullptr}});
        QCOMPARE(loadTargetConfig(dir).gemma4.perLayerInputSize, std::int64_t(0));
    }

    void kvSharingFollowsHf() {
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString();
        writeTinyGemma4(dir, kDense, 1);
        const auto c = loadTargetConfig(dir);
        // Layers 4 (sliding) and 5 (full) share: their sources are the last earlier layers of
        // their types, 3 and 2.
        QCOMPARE(c.kvSourceLayer(3), std::int64_t(-1));
        QCOMPARE(c.kvSourceLayer(4), std::int64_t(3));
        QCOMPARE(c.kvSourceLayer(5), std::int64_t(2));
        QCOMPARE(c.kvHeadsOf(2), std::int64_t(1));  // attention_k_eq_v: num_global_key_value_heads
        QCOMPARE(c.kvHeadsOf(1), std::int64_t(2));
    }

    void refusesWhatItDoesNotImplement_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value");  // JSON
        QTest::addColumn<QString>("expected");
        QTest::newRow("bidirectional") << "use_bidirectional_attention" << "\"all\"" << "attend bidirectionally";
        QTest::newRow("activation") << "hidden_activation" << "\"silu\"" << "expected gelu_pytorch_tanh";
        QTest::newRow("yarn-full")
            << "rope_parameters"
            << R"({"sliding_attention": {"rope_type": "default"}, "full_attention": {"rope_type": "yarn", "factor": 2}})"
            << "rope_parameters.full_attention.rope_type 'yarn' is not supported";
        QTest::newRow("rope-entry") << "rope_parameters" << R"({"chunked_attention": {}})" << "entry 'chunked_attention'";
        QTest::newRow("rope-missing") << "rope_parameters" << R"({"sliding_attention": {"rope_type": "default"}})"
                                      << "rope_parameters.full_attention must be an object";
        QTest::newRow("default-on-full")
            << "rope_parameters"
            << R"({"sliding_attention": {"rope_type": "default"}, "full_attention": {"rope_type": "default"}})"
            << "rotates head_dim (8) dimensions, but those layers have 16";
        QTest::newRow("shared-all") << "num_kv_shared_layers" << "6" << "must be less than num_hidden_layers";
        QTest::newRow("moe-without-experts") << "enable_moe_block" << "true" << "'num_experts' is missing";
        QTest::newRow("softcap") << "final_logit_softcapping" << "-1" << "final_logit_softcapping must be positive";
        QTest::newRow("attn-softcap") << "attn_logit_softcapping" << "50.0" << "attention logit soft-capping";
    }
    void refusesWhatItDoesNotImplement() {
        QFETCH(QString, key);
        QFETCH(QString, value);
        QFETCH(QString, expected);
        const auto msg = loadErrorWithConfig([&](nlohmann::json& c) { c[key.toStdString()] = nlohmann::json::parse(value.toStdString()); });
        QVERIFY2(msg.contains(expected), qPrintable(msg));
    }

    void sharedLayerWithoutSourceIsRefused() {
        // Layer 5 is the only full layer once types are [s, s, s, s, s, f]... with 1 shared
        // layer whose type no earlier layer has.
        const auto msg = loadErrorWithConfig([](nlohmann::json& c) {
            c["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                                "sliding_attention", "full_attention"};
            c["num_kv_shared_layers"] = 1;
        });
        QVERIFY2(msg.contains("layer 5 (full_attention) shares keys and values") && msg.contains("no earlier layer"),
                 qPrintable(msg));
    }

    void proportionalRopeMatchesHandValues() {
        // head 8, partial 0.25: rope_angles = int(0.25 * 8 // 2) = 1, so pair (0, 4) turns at
        // base^0 = 1 rad per position and pairs 1..3 stay put (frequency 0), with factor 2
        // halving the one frequency.
        RopeConfig r;
        r.type = "proportional";
        r.partialRotaryFactor = 0.25;
        r.theta = 1e6;
        r.factor = 2.0;
        const RotaryEmbedding rope(r, 8, at::kCPU);
        const auto [cos, sin] = rope.cosSin(at::tensor(std::vector<std::int64_t>{0, 3}), at::kFloat);
        QCOMPARE(cos.sizes().vec(), (std::vector<std::int64_t>{2, 8}));
        const float c3 = std::cos(1.5f), s3 = std::sin(1.5f);
        const std::vector<float> cosWant = {1, 1, 1, 1, 1, 1, 1, 1, c3, 1, 1, 1, c3, 1, 1, 1};
        const std::vector<float> sinWant = {0, 0, 0, 0, 0, 0, 0, 0, s3, 0, 0, 0, s3, 0, 0, 0};
        const auto cv = cos.contiguous(), sv = sin.contiguous();
        for (int i = 0; i < 16; ++i) {
            QVERIFY(std::fabs(cv.data_ptr<float>()[i] - cosWant[static_cast<std::size_t>(i)]) < 1e-6);
            QVERIFY(std::fabs(sv.data_ptr<float>()[i] - sinWant[static_cast<std::size_t>(i)]) < 1e-6);
        }
        // Applied: x' = x cos + rotate_half(x) sin turns only dims 0 and 4.
        const auto x = at::arange(1, 9, at::kFloat).view({1, 1, 8});
        const auto y = RotaryEmbedding::apply(x, cos.narrow(0, 1, 1), sin.narrow(0, 1, 1)).reshape({-1});
        const auto yv = y.contiguous();
        QVERIFY(std::fabs(yv.data_ptr<float>()[0] - (1 * c3 - 5 * s3)) < 1e-5);
        QVERIFY(std::fabs(yv.data_ptr<float>()[4] - (5 * c3 + 1 * s3)) < 1e-5);
        for (int i : {1, 2, 3, 5, 6, 7}) QCOMPARE(yv.data_ptr<float>()[i], static_cast<float>(i + 1));
    }

    void loadsWithHandCountedParameters_data() { variants(); }
    void loadsWithHandCountedParameters() {
        QFETCH(int, which);
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString();
        const auto params = writeTinyGemma4(dir, variantOf(which), 3);
        Engine e;
        const auto s = e.loadTarget(dir);
        QCOMPARE(QString::fromStdString(s.architecture), QString("Gemma4ForCausalLM"));
        QCOMPARE(s.layerTypes, kTypes);
        QVERIFY(s.unexpectedTensors.empty());
        QCOMPARE(s.parameters, params);  // the tied head adds nothing
        const auto r = inspectCheckpoint(dir);
        QVERIFY(r.architectureChecked);
        QVERIFY2(r.missing.empty() && r.mismatched.empty() && r.unexpected.empty(),
                 qPrintable(QString::number(r.missing.size()) + " missing, " + QString::number(r.mismatched.size()) +
                            " mismatched, " + QString::number(r.unexpected.size()) + " unexpected"));
    }

    void cachedStepsMatchPrefill_data() { variants(); }
    void cachedStepsMatchPrefill() {
        // 20 tokens prefilled, then 3 single tokens and a 5-token block on the cache: every
        // logit row equals the uncached forward over all 28 tokens. Past the window of 6 the
        // sliding layers' masks, the shared layers' borrowed keys and the per-layer inputs of
        // the new tokens all have to line up.
        QFETCH(int, which);
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString();
        writeTinyGemma4(dir, variantOf(which), 11);
        Engine e;
        e.loadTarget(dir);
        const auto ids = someIds(28, 17);
        const auto whole = e.forward(idsPrompt(ids));
        const auto steps = e.forwardSteps({{ids.begin(), ids.begin() + 20}, {ids[20]}, {ids[21]}, {ids[22]},
                                           {ids.begin() + 23, ids.end()}});
        const auto V = static_cast<std::size_t>(kV);
        QVERIFY(relativeMaxError(steps[0].logits, rows(whole.logits, V, 0, 20)) < 1e-5);
        for (std::size_t i = 0; i < 3; ++i)
            QVERIFY(relativeMaxError(steps[i + 1].logits, rows(whole.logits, V, 20 + i, 1)) < 1e-5);
        QVERIFY(relativeMaxError(steps[4].logits, rows(whole.logits, V, 23, 5)) < 1e-5);
    }

    void slidingWindowChangesLogits() {
        // A loader that ignored sliding_window would give the same logits for any window.
        QTemporaryDir tmp;
        const auto a = tmp.path().toStdString() + "/a";
        writeTinyGemma4(a, kDense, 7);
        const auto b = copyModel(a, tmp.path().toStdString() + "/b");
        auto c = readJson(b + "/config.json");
        c["sliding_window"] = 64;
        writeJson(b + "/config.json", c);
        const auto ids = someIds(24, 3);
        Engine ea, eb;
        ea.loadTarget(a);
        eb.loadTarget(b);
        const auto la = ea.forward(idsPrompt(ids)).logits, lb = eb.forward(idsPrompt(ids)).logits;
        const auto V = static_cast<std::size_t>(kV);
        // Rows within the window agree (a query at position < 6 sees the same keys), later ones differ.
        QVERIFY(relativeMaxError(rows(la, V, 0, kWindow), rows(lb, V, 0, kWindow)) < 1e-6);
        QVERIFY(relativeMaxError(rows(la, V, 12, 12), rows(lb, V, 12, 12)) > 1e-4);
        // HF's window counts the query's own key: with window 6 the query at position 6 no
        // longer sees key 0, with window 7 it does. So the two agree on rows 0..5 only.
        c["sliding_window"] = kWindow + 1;
        writeJson(b + "/config.json", c);
        Engine ec;
        ec.loadTarget(b);
        const auto lc = ec.forward(idsPrompt(ids)).logits;
        QVERIFY(relativeMaxError(rows(la, V, 0, kWindow), rows(lc, V, 0, kWindow)) < 1e-6);
        QVERIFY(relativeMaxError(rows(la, V, kWindow, 1), rows(lc, V, kWindow, 1)) > 1e-4);
    }

    void softcapIsTanhOfUncappedLogits() {
        // logits = 30 tanh(l / 30) of the same model without soft-capping, row for row, and the
        // hidden states are untouched.
        QTemporaryDir tmp;
        const auto a = tmp.path().toStdString() + "/a";
        writeTinyGemma4(a, kDense, 13);
        const auto b = copyModel(a, tmp.path().toStdString() + "/b");
        auto c = readJson(b + "/config.json");
        c["final_logit_softcapping"] = nullptr;
        writeJson(b + "/config.json", c);
        const auto ids = someIds(10, 5);
        Engine ea, eb;
        ea.loadTarget(a);
        eb.loadTarget(b);
        const auto capped = ea.forward(idsPrompt(ids)), plain = eb.forward(idsPrompt(ids));
        QCOMPARE(capped.hiddenStates, plain.hiddenStates);
        double maxPlain = 0, maxDiff = 0;
        for (std::size_t i = 0; i < plain.logits.size(); ++i) {
            maxPlain = std::max(maxPlain, std::fabs(static_cast<double>(plain.logits[i])));
            const double want = 30.0 * std::tanh(static_cast<double>(plain.logits[i]) / 30.0);
            maxDiff = std::max(maxDiff, std::fabs(want - capped.logits[i]));
        }
        QVERIFY2(maxDiff < 1e-4, qPrintable(QString::number(maxDiff)));
        QVERIFY2(maxPlain > 1.0, qPrintable(QString::number(maxPlain)));  // the cap is not a no-op here
    }

    void embeddingsAreScaledBySqrtHidden() {
        // hidden_states[0] (HF: the scaled embedding) = table row x sqrt(32).
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString();
        writeTinyGemma4(dir, kDense, 19);
        const auto table = SafetensorsFile::open(dir + "/model.safetensors")->readFloat32("model.embed_tokens.weight");
        Engine e;
        e.loadTarget(dir);
        const std::vector<std::int64_t> ids = {5, 77};
        const auto r = e.forward(idsPrompt(ids));
        const float scale = std::sqrt(32.0f);
        for (std::size_t t = 0; t < 2; ++t)
            for (std::size_t j = 0; j < static_cast<std::size_t>(kH); ++j)
                QCOMPARE(r.hiddenStates[t * kH + j], table[static_cast<std::size_t>(ids[t]) * kH + j] * scale);
    }

    void multimodalLayoutMatchesTextOnly() {
        // The same language weights as Gemma4ForConditionalGeneration (text_config,
        // model.language_model.*, a vision tower beside it) give the same logits; the towers are
        // reported as ignored, never loaded.
        QTemporaryDir tmp;
        const auto text = tmp.path().toStdString() + "/text";
        const auto vlm = tmp.path().toStdString() + "/vlm";
        writeTinyGemma4(text, kDense, 23);
        rewriteCheckpoint(text, vlm, [](const SafetensorsFile& f, SafetensorsWriter& w) {
            for (const auto& t : f.tensors()) {
                auto name = t.name;
                if (name.rfind("model.", 0) == 0) name = "model.language_model." + name.substr(6);
                w.add(name, t.dtype, t.shape, f.data(t), t.byteSize());
            }
            w.addFloat32("model.vision_tower.encoder.layers.0.mlp.up_proj.linear.weight", {2, 2}, {1, 2, 3, 4});
            w.addFloat32("model.embed_vision.embedding_projection.weight", {2, 2}, {1, 2, 3, 4});
        });
        auto textCfg = readJson(text + "/config.json");
        textCfg.erase("architectures");
        writeJson(vlm + "/config.json", {{"architectures", {"Gemma4ForConditionalGeneration"}}, {"model_type", "gemma4"},
                                         {"text_config", textCfg}, {"vision_config", nullptr}, {"tie_word_embeddings", true}});
        const auto ids = someIds(16, 9);
        Engine a, b;
        a.loadTarget(text);
        const auto s = b.loadTarget(vlm);
        QVERIFY(s.unexpectedTensors.empty());
        QCOMPARE(s.ignoredTensors.size(), std::size_t(2));
        QCOMPARE(b.forward(idsPrompt(ids)).logits, a.forward(idsPrompt(ids)).logits);
        const auto r = inspectCheckpoint(vlm);
        QVERIFY(r.architectureChecked);
        QVERIFY(r.missing.empty() && r.mismatched.empty() && r.unexpected.empty());
    }

    void perLayerConfigMatchesFlatKeys() {
        // transformers >= 5.15 saves the full layers' head size and kv heads as per_layer_config
        // overrides instead of global_head_dim / num_global_key_value_heads: same model.
        QTemporaryDir tmp;
        const auto flat = tmp.path().toStdString() + "/flat";
        writeTinyGemma4(flat, kDense, 31);
        const auto split = copyModel(flat, tmp.path().toStdString() + "/split");
        auto c = readJson(split + "/config.json");
        c.erase("global_head_dim");
        c.erase("num_global_key_value_heads");
        c["per_layer_config"] = {{"2", {{"head_dim", kGlobalD}, {"num_key_value_heads", 1}}},
                                 {"5", {{"head_dim", kGlobalD}, {"num_key_value_heads", 1}}}};
        writeJson(split + "/config.json", c);
        const auto cfg = loadTargetConfig(split);
        QCOMPARE(cfg.headDimOf(5), kGlobalD);
        QCOMPARE(cfg.kvHeadsOf(2), std::int64_t(1));
        QCOMPARE(cfg.gemma4.globalHeadDim, kGlobalD);
        const auto ids = someIds(12, 4);
        Engine a, b;
        a.loadTarget(flat);
        b.loadTarget(split);
        QCOMPARE(b.forward(idsPrompt(ids)).logits, a.forward(idsPrompt(ids)).logits);
        // An override of any other field is refused by name.
        c["per_layer_config"]["2"]["sliding_window"] = 4;
        writeJson(split + "/config.json", c);
        const auto msg = errorOf([&] { loadTargetConfig(split); });
        QVERIFY2(msg.contains("per_layer_config.2.sliding_window") && msg.contains("head_dim and num_key_value_heads"),
                 qPrintable(msg));
    }

    void multimodalPlaceholdersEmbedAsPad() {
        // HF Gemma4Model embeds image/video/audio placeholder ids as the pad token, per-layer
        // inputs included, even without pixels: a prompt holding the image id gives the
        // text-only model's logits for the prompt with the pad id there. The top-level
        // tie_word_embeddings decides for the multimodal class.
        QTemporaryDir tmp;
        const auto text = tmp.path().toStdString() + "/text";
        const auto vlm = tmp.path().toStdString() + "/vlm";
        writeTinyGemma4(text, kDense, 37);
        rewriteCheckpoint(text, vlm, [](const SafetensorsFile& f, SafetensorsWriter& w) {
            for (const auto& t : f.tensors())
                w.add("model.language_model." + t.name.substr(6), t.dtype, t.shape, f.data(t), t.byteSize());
        });
        auto textCfg = readJson(text + "/config.json");
        textCfg["pad_token_id"] = 0;
        textCfg["tie_word_embeddings"] = false;  // the top level says true, and wins
        writeJson(vlm + "/config.json", {{"architectures", {"Gemma4ForConditionalGeneration"}}, {"text_config", textCfg},
                                         {"image_token_id", 100}, {"video_token_id", 101}, {"audio_token_id", nullptr}});
        QVERIFY(loadTargetConfig(vlm).tieWordEmbeddings);
        auto ids = someIds(10, 8);
        ids[3] = 100;
        ids[6] = 101;
        auto padded = ids;
        padded[3] = padded[6] = 0;
        Engine a, b;
        a.loadTarget(text);
        b.loadTarget(vlm);
        QCOMPARE(b.forward(idsPrompt(ids)).logits, a.forward(idsPrompt(padded)).logits);
        QVERIFY(a.forward(idsPrompt(ids)).logits != a.forward(idsPrompt(padded)).logits);
    }

    void inspectorNamesTheParts() {
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString();
        writeTinyGemma4(dir, kDense, 2);
        QString notes;
        for (const auto& n : inspectCheckpoint(dir).notes) notes += QString::fromStdString(n) + "\n";
        QVERIFY2(notes.contains("layer 0: sliding_attention (window 6); head 8, 2 kv heads; default rope, theta 10000\n") &&
                     notes.contains("layer 2: full_attention; head 16, 1 kv heads; proportional rope 0.25 of the head, "
                                    "theta 1e+06; values = keys (attention_k_eq_v)\n") &&
                     notes.contains("layer 4: sliding_attention (window 6); head 8, 2 kv heads; default rope, theta 10000; "
                                    "keys and values of layer 3") &&
                     notes.contains("embeddings x sqrt(32); per-layer inputs of 4 over 512 tokens; logits soft-capped at 30"),
                 qPrintable(notes));
    }

    void hfCheckpointLoads_data() { hfModels(); }
    void hfCheckpointLoads() {
        QFETCH(QString, model);
        Engine e;
        const auto s = e.loadTarget(hfDir(model.toStdString()));
        QCOMPARE(QString::fromStdString(s.architecture), QString("Gemma4ForCausalLM"));
        const std::vector<std::string> types = {"sliding_attention", "sliding_attention", "full_attention",
                                                "sliding_attention", "sliding_attention", "full_attention"};
        QCOMPARE(s.layerTypes, types);
        QVERIFY(s.unexpectedTensors.empty());
        const auto r = inspectCheckpoint(hfDir(model.toStdString()));
        QVERIFY(r.architectureChecked);
        QVERIFY(r.missing.empty() && r.mismatched.empty() && r.unexpected.empty());
    }

    void matchesHfGoldens_data() { hfModels(); }
    void matchesHfGoldens() {
        QFETCH(QString, model);
        const auto m = model.toStdString();
        Engine e;
        e.loadTarget(hfDir(m));
        const auto err = stepGoldenErrors(e, hfGoldens(), m);
        qInfo("%s: hidden %.3g, logits %.3g, decode %.3g, verify %.3g", m.c_str(), err.hidden, err.logits, err.decode,
              err.verify);
        QVERIFY2(err.worst() <= 1e-4, qPrintable(QString::number(err.worst())));
    }

    void greedyMatchesHfGenerate_data() { hfModels(); }
    void greedyMatchesHfGenerate() {
        // 12 prompt tokens + 24 new: the cached sliding layers (window 8) run past their window.
        QFETCH(QString, model);
        const auto m = model.toStdString();
        const auto ids = hfGoldens().readInt64(m + ".input_ids");
        Engine e;
        e.loadTarget(hfDir(m));
        const auto out = e.greedy(idsPrompt({ids.begin(), ids.begin() + 12}), 24, /*ignoreEos=*/true);
        QCOMPARE(out, hfGoldens().readInt64(m + ".greedy_ids"));
    }

    void routerMatchesHf() {
        // Every layer's router: the experts each prefill token chose, in HF's top-k order.
        const std::string m = "tiny-gemma4-moe";
        Engine e;
        e.loadTarget(hfDir(m));
        const auto r = e.forward(idsPrompt(hfGoldens().readInt64(m + ".input_ids")));
        QCOMPARE(r.expertsPerToken, std::int64_t(2));
        QCOMPARE(r.numExperts, std::int64_t(8));
        const auto want = hfGoldens().readInt64(m + ".router_top");
        QCOMPARE(routerChoiceMismatches(r, want), std::size_t(0));
        QVERIFY(std::set<std::int64_t>(want.begin(), want.end()).size() > 2);  // the router spreads the tokens
    }

    void hiddenStatsCarryTheTappedLayersRouting() {
        // The hidden-state statistics of a MoE target carry, per tapped layer, the experts its
        // router chose per position (HF's router_top of that layer), and survive the results
        // file's JSON; a broken expert index in a file is refused by name.
        QTemporaryDir tmp;
        const auto drafter = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafter, {64, 16, 128, kV}, 4, 47);  // taps layers 0 and 2
        Engine e;
        e.loadTarget(hfDir("tiny-gemma4-moe"));
        e.loadDrafter(drafter);
        const auto ids = hfGoldens().readInt64("tiny-gemma4-moe.input_ids");
        const auto want = hfGoldens().readInt64("tiny-gemma4-moe.router_top");  // [6, 40, 2]
        const auto st = e.hiddenStateStats(idsPrompt(ids));
        QCOMPARE(st.series.size(), std::size_t(3));
        for (std::size_t i = 0; i < 2; ++i) {
            const auto& s = st.series[i];
            const auto layer = static_cast<std::size_t>(s.layerId);
            QCOMPARE(s.numExperts, std::int64_t(8));
            const std::vector<std::int64_t> rowsOfLayer(want.begin() + static_cast<std::ptrdiff_t>(layer * 80),
                                                        want.begin() + static_cast<std::ptrdiff_t>((layer + 1) * 80));
            QCOMPARE(s.expertChoices, rowsOfLayer);
            const auto counts = s.expertCounts();
            QCOMPARE(std::accumulate(counts.begin(), counts.end(), std::int64_t(0)), std::int64_t(80));
            for (std::size_t x = 0; x < 8; ++x)
                QCOMPARE(counts[x], std::int64_t(std::count(rowsOfLayer.begin(), rowsOfLayer.end(), std::int64_t(x))));
        }
        QCOMPARE(st.series[2].numExperts, std::int64_t(0));  // the drafter's context has no router
        const auto back = hiddenStateStatsFromJson(toJson(st), "stats");
        QCOMPARE(back.series[1].expertChoices, st.series[1].expertChoices);
        QCOMPARE(back.series[1].numExperts, std::int64_t(8));
        auto j = toJson(st);
        j["series"][1]["expert_choices"][7] = 8;
        const auto msg = errorOf([&] { hiddenStateStatsFromJson(j, "stats"); });
        QVERIFY2(msg.contains("stats.series[1].expert_choices[7]: expected an expert 0..7, found 8"), qPrintable(msg));
        j["series"][1]["expert_choices"] = {1, 2, 3};
        const auto msg2 = errorOf([&] { hiddenStateStatsFromJson(j, "stats"); });
        QVERIFY2(msg2.contains("expected a multiple of the 40 positions"), qPrintable(msg2));
    }

    void denseTargetHasNoRouting() {
        const auto r = [] {
            Engine e;
            e.loadTarget(hfDir("tiny-gemma4"));
            return e.forward(idsPrompt({5, 6, 7}));
        }();
        QCOMPARE(r.expertsPerToken, std::int64_t(0));
        QVERIFY(r.expertChoices.empty());
    }

    void hfDflashAndDDTreeEqualGreedy() {
        // The HF-made MoE target with a random drafter on taps {0, 2}: both loops reproduce
        // greedy decoding through rejections (sliding-window crops).
        QTemporaryDir tmp;
        const auto drafter = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafter, {64, 16, 128, kV}, 4, 43);
        Engine e;
        e.loadTarget(hfDir("tiny-gemma4-moe"));
        e.loadDrafter(drafter);
        const auto ids = hfGoldens().readInt64("tiny-gemma4-moe.input_ids");
        const auto prompt = idsPrompt({ids.begin(), ids.begin() + 20});
        RunSettings s;
        s.maxNewTokens = 32;
        s.ignoreEos = true;
        const auto greedy = e.greedy(prompt, 32, /*ignoreEos=*/true);
        QCOMPARE(e.run(prompt, s).outputIds, greedy);
        QCOMPARE(e.runTree(prompt, s, 6).outputIds, greedy);
    }

    void dflashAndDDTreeEqualGreedy_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<int>("blockSize");
        QTest::newRow("dense-B4") << 0 << 4;
        QTest::newRow("moe-B8") << 1 << 8;
    }
    void dflashAndDDTreeEqualGreedy() {
        // A random drafter's blocks are mostly rejected: each rejection crops the target's
        // cache (sliding layers, shared keys) and the outputs must still be greedy decoding.
        QFETCH(int, which);
        QFETCH(int, blockSize);
        QTemporaryDir tmp;
        const auto target = tmp.path().toStdString() + "/target";
        writeTinyGemma4(target, variantOf(which), 29);
        const auto drafter = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafter, {kH, 8, 64, kV}, blockSize, static_cast<std::uint32_t>(31 + blockSize));
        Engine e;
        e.loadTarget(target);
        e.loadDrafter(drafter);
        const auto prompt = idsPrompt(someIds(14, 41));
        RunSettings s;
        s.maxNewTokens = 24;
        s.ignoreEos = true;
        const auto greedy = e.greedy(prompt, 24, /*ignoreEos=*/true);
        const auto run = e.run(prompt, s);
        QCOMPARE(run.outputIds, greedy);
        const auto tree = e.runTree(prompt, s, 6);
        QCOMPARE(tree.outputIds, greedy);
        int rollbacks = 0;
        for (int len : run.acceptanceLengths) rollbacks += len < blockSize;
        QVERIFY(rollbacks > 0);
    }
};

QTEST_GUILESS_MAIN(TestGemma4)
#include "tst_gemma4.moc"
