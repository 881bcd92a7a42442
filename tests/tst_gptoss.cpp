// gpt-oss targets (issue 31): tiny GptOssForCausalLM checkpoints made by HF transformers 5.17
// (tools/make_gptoss_fixtures.py; tests/data/gptoss), one with bf16 experts and one with the
// same experts packed to MXFP4. Prefill hidden states and logits, three cached decode steps
// and a cached 6-token verify block against HF's float32 goldens (max abs diff within 1e-4 of
// the golden's max abs), the experts each token chose against HF's router, greedy decoding
// against HF generate(), the DFlash chain and DDTree loops against greedy decoding, and clear
// errors for configs and packed tensors draftscope must refuse.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/inspector.h"
#include "hf_step_goldens.h"
#include "test_support.h"

#include <QtTest>

using namespace draftscope;
using namespace testsupport;

namespace {

std::string gptOssDir(const std::string& name) { return unpackedDataPath("gptoss/" + name); }

const SafetensorsFile& gptOssGoldens() {
    static const auto f = SafetensorsFile::open(unpackedDataPath("gptoss/goldens.safetensors"));
    return *f;
}

/// A random drafter for the tiny gpt-oss targets (hidden 64, V 512), taps {0, 2}.
const RandomDrafterShape kDrafterShape{64, 16, 128, 512};

PromptSpec goldenPrefix(const std::string& m, std::size_t n) {
    const auto ids = gptOssGoldens().readInt64(m + ".input_ids");
    return idsPrompt({ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n)});
}

/// Copies model `src` to `dst`, rewriting its checkpoint with `edit` applied to every tensor
/// (a mutable copy of its entry, whose dtype it may change, and of its bytes).
void rewriteTensors(const std::string& src, const std::string& dst,
                    const std::function<void(TensorInfo&, std::vector<unsigned char>&)>& edit) {
    rewriteCheckpoint(src, dst, [&](const SafetensorsFile& f, SafetensorsWriter& w) {
        for (auto t : f.tensors()) {
            const auto* p = reinterpret_cast<const unsigned char*>(f.data(t));
            std::vector<unsigned char> bytes(p, p + t.byteSize());
            edit(t, bytes);
            w.add(t.name, t.dtype, t.shape, bytes.data(), bytes.size());
        }
    });
}

/// The error of loading a copy of target `model` whose config.json `edit` changed ("" if it loads).
QString loadErrorWithConfig(const std::string& model, const std::function<void(nlohmann::json&)>& edit) {
    QTemporaryDir tmp;
    const auto dir = copyModel(model, tmp.path().toStdString() + "/m");
    auto c = readJson(dir + "/config.json");
    edit(c);
    writeJson(dir + "/config.json", c);
    return errorOf([&] { Engine().loadTarget(dir); });
}

/// Data rows "bf16" and "mxfp4": the two fixture checkpoints, column "model".
void bothCheckpoints() {
        QTest::addColumn<QString>("model");
        QTest::newRow("bf16") << "tiny-gpt-oss";
        QTest::newRow("mxfp4") << "tiny-gpt-oss-mxfp4";
}

}  // namespace

class TestGptOss : public QObject {
    Q_OBJECT

private slots:
    void loads_data() { bothCheckpoints(); }
    void loads() {
        QFETCH(QString, model);
        Engine e;
        const auto s = e.loadTarget(gptOssDir(model.toStdString()));
        QCOMPARE(QString::fromStdString(s.architecture), QString("GptOssForCausalLM"));
        const std::vector<std::string> types = {"sliding_attention", "full_attention", "sliding_attention",
                                                "full_attention"};
        QCOMPARE(s.layerTypes, types);
        QVERIFY(s.unexpectedTensors.empty());
        // Hand count: embed + head 2 x 512 x 64; per layer: 2 norms 128, q/o 2 x 64 x 64 + 64 + 64,
        // k/v 2 x (32 x 64 + 32), sinks 4, router 8 x 64 + 8, experts 8 x (64 x 64 + 32 x 64) + 8 x 64 + 8 x 64;
        // final norm 64. MXFP4 counts two weights per block byte, so both agree.
        const std::int64_t perLayer = 128 + 2 * (64 * 64 + 64) + 2 * (32 * 64 + 32) + 4 + (8 * 64 + 8) +
                                      8 * (64 * 64 + 32 * 64) + 8 * 64 + 8 * 64;
        QCOMPARE(s.parameters, 2 * 512 * 64 + 4 * perLayer + 64);
    }

    void matchesGoldens_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("experts");  // LoadOptions::mxfp4Experts
        QTest::addColumn<QString>("quantization");
        QTest::newRow("bf16") << "tiny-gpt-oss" << "auto" << "";
        QTest::newRow("mxfp4-auto") << "tiny-gpt-oss-mxfp4" << "auto"
                                    << "MXFP4 experts, dequantised to float32 at load";  // the CPU has room
        QTest::newRow("mxfp4-packed") << "tiny-gpt-oss-mxfp4" << "packed"
                                      << "MXFP4 experts, kept packed (each chosen expert dequantised per forward)";
    }
    void matchesGoldens() {
        QFETCH(QString, model);
        QFETCH(QString, experts);
        QFETCH(QString, quantization);
        const auto m = model.toStdString();
        Engine e;
        LoadOptions o;
        o.mxfp4Experts = experts.toStdString();
        QCOMPARE(QString::fromStdString(e.loadTarget(gptOssDir(m), o).quantization), quantization);
        const auto err = stepGoldenErrors(e, gptOssGoldens(), m);
        qInfo("%s: hidden %.3g, logits %.3g, decode %.3g, verify %.3g", m.c_str(), err.hidden, err.logits, err.decode,
              err.verify);
        QVERIFY2(err.worst() <= 1e-4, qPrintable(QString::number(err.worst())));
    }

    void routerMatchesHf_data() { bothCheckpoints(); }
    void routerMatchesHf() {
        // Every layer's router: the experts each prefill token chose, in HF's top-k order.
        QFETCH(QString, model);
        const auto m = model.toStdString();
        Engine e;
        e.loadTarget(gptOssDir(m));
        const auto r = e.forward(idsPrompt(gptOssGoldens().readInt64(m + ".input_ids")));
        QCOMPARE(r.expertsPerToken, std::int64_t(2));
        QCOMPARE(r.numExperts, std::int64_t(8));
        const auto want = gptOssGoldens().readInt64(m + ".router_top");
        QCOMPARE(routerChoiceMismatches(r, want), std::size_t(0));
    }

    void packedAndBf16Differ() {
        // The MXFP4 checkpoint is a lossy packing of the bf16 one: same shapes, other logits. A
        // loader that silently ignored the packed tensors (or read the bf16 ones) would agree.
        const auto& g = gptOssGoldens();
        const auto a = g.readFloat32("tiny-gpt-oss.logits");
        const auto b = g.readFloat32("tiny-gpt-oss-mxfp4.logits");
        QVERIFY(relativeMaxError(a, b) > 1e-3);
    }

    void greedyMatchesHfGenerate_data() { bothCheckpoints(); }
    void greedyMatchesHfGenerate() {
        // 12 prompt tokens + 24 new: the cached sliding-window layers run past their window of 8.
        QFETCH(QString, model);
        const auto m = model.toStdString();
        Engine e;
        e.loadTarget(gptOssDir(m));
        const auto out = e.greedy(goldenPrefix(m, 12), 24, /*ignoreEos=*/true);
        QCOMPARE(out, gptOssGoldens().readInt64(m + ".greedy_ids"));
    }

    void dflashAndDDTreeEqualGreedy_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("blockSize");
        QTest::addColumn<QString>("experts");
        QTest::newRow("bf16-B4") << "tiny-gpt-oss" << 4 << "auto";
        QTest::newRow("mxfp4-packed-B8") << "tiny-gpt-oss-mxfp4" << 8 << "packed";
    }
    void dflashAndDDTreeEqualGreedy() {
        QFETCH(QString, model);
        QFETCH(int, blockSize);
        QFETCH(QString, experts);
        const auto m = model.toStdString();
        QTemporaryDir tmp;
        const auto drafterDir = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafterDir, kDrafterShape, blockSize, static_cast<std::uint32_t>(31 + blockSize));
        Engine e;
        LoadOptions o;
        o.mxfp4Experts = experts.toStdString();
        e.loadTarget(gptOssDir(m), o);
        e.loadDrafter(drafterDir);
        const auto prompt = goldenPrefix(m, 20);
        RunSettings s;
        s.maxNewTokens = 32;
        s.ignoreEos = true;
        const auto greedy = e.greedy(prompt, 32, /*ignoreEos=*/true);
        const auto run = e.run(prompt, s);
        QCOMPARE(run.outputIds, greedy);
        const auto tree = e.runTree(prompt, s, 6);
        QCOMPARE(tree.outputIds, greedy);
        int rollbacks = 0;
        for (int len : run.acceptanceLengths) rollbacks += len < blockSize;
        qInfo("%s B=%d: chain %zu steps (tau %.3f), tree %zu steps (tau %.3f)", m.c_str(), blockSize,
              run.acceptanceLengths.size(), run.tau, tree.acceptanceLengths.size(), tree.tau);
        QVERIFY(rollbacks > 0);  // rejected drafts were cropped from the cache
    }

    void badExpertStorageOptionIsNamed() {
        LoadOptions o;
        o.mxfp4Experts = "halfway";
        const auto msg = errorOf([&] { Engine().loadTarget(gptOssDir("tiny-gpt-oss-mxfp4"), o); });
        QVERIFY2(msg.contains("mxfp4-experts") && msg.contains("auto, packed or unpacked") && msg.contains("halfway"),
                 qPrintable(msg));
    }

    void inspectorNamesTheParts_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("storage");
        QTest::newRow("bf16") << "tiny-gpt-oss" << "stored unquantised";
        QTest::newRow("mxfp4") << "tiny-gpt-oss-mxfp4" << "stored as MXFP4";
    }
    void inspectorNamesTheParts() {
        QFETCH(QString, model);
        QFETCH(QString, storage);
        const auto r = inspectCheckpoint(gptOssDir(model.toStdString()));
        QVERIFY(r.architectureChecked);
        QVERIFY2(r.missing.empty() && r.mismatched.empty() && r.unexpected.empty(),
                 qPrintable(QString::number(r.missing.size()) + " missing"));
        QString notes;
        for (const auto& n : r.notes) notes += QString::fromStdString(n) + "\n";
        // Layer 0 slides (window 8); its sinks are listed per head, as stored (bf16, 3 digits).
        QVERIFY2(notes.contains("layer 0: sliding_attention (window 8); sink logit per head:") &&
                     notes.contains("layer 1: full_attention; sink logit per head:") &&
                     notes.contains("experts: 8, top-2, width 32; " + storage),
                 qPrintable(notes));
    }

    void nonFiniteLogitsAreRefused() {
        // A NaN sink poisons every logit: argmax 0 on both sides would read as perfect acceptance.
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString() + "/m";
        rewriteTensors(gptOssDir("tiny-gpt-oss"), dir, [](TensorInfo& t, std::vector<unsigned char>& b) {
            if (t.name == "model.layers.0.self_attn.sinks") b[0] = 0xC0, b[1] = 0x7F;  // bf16 NaN
        });
        const auto drafterDir = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafterDir, kDrafterShape, 4, 7);
        Engine e;
        e.loadTarget(dir);
        e.loadDrafter(drafterDir);
        RunSettings s;
        s.maxNewTokens = 8;
        s.ignoreEos = true;
        const auto prompt = goldenPrefix("tiny-gpt-oss", 6);
        for (const auto& msg : {errorOf([&] { e.run(prompt, s); }), errorOf([&] { e.runTree(prompt, s, 4); }),
                                errorOf([&] { e.greedy(prompt, 8, true); })})
            QVERIFY2(msg.contains("logits after the prompt are not finite") && msg.contains("inspect"), qPrintable(msg));
    }

    void oddRotaryDimensionIsRefused() {
        const auto msg = loadErrorWithConfig(gptOssDir("tiny-gpt-oss"), [](nlohmann::json& c) { c["head_dim"] = 15; });
        QVERIFY2(msg.contains("rotary dimension of 15, which is odd"), qPrintable(msg));
    }

    void refusesSwigluLimitOtherThanSeven() {
        const auto msg = loadErrorWithConfig(gptOssDir("tiny-gpt-oss"), [](nlohmann::json& c) { c["swiglu_limit"] = 10.0; });
        QVERIFY2(msg.contains("'swiglu_limit' = 10") && msg.contains("hard-codes 7"), qPrintable(msg));
        // The value HF applies is accepted.
        QCOMPARE(loadErrorWithConfig(gptOssDir("tiny-gpt-oss"), [](nlohmann::json& c) { c["swiglu_limit"] = 7.0; }),
                 QString());
    }

    void refusesOtherQuantization() {
        const auto msg = loadErrorWithConfig(gptOssDir("tiny-gpt-oss"), [](nlohmann::json& c) {
            c["quantization_config"] = {{"quant_method", "fp8"}};
        });
        QVERIFY2(msg.contains("quantization_config.quant_method") && msg.contains("\"fp8\""), qPrintable(msg));
        // MXFP4 on a Qwen3 target is refused too: draftscope reads it for gpt-oss only.
        const auto qmsg = loadErrorWithConfig(demoTarget(), [](nlohmann::json& c) {
            c["quantization_config"] = {{"quant_method", "mxfp4"}};
        });
        QVERIFY2(qmsg.contains("\"mxfp4\"") && qmsg.contains("Qwen3ForCausalLM"), qPrintable(qmsg));
    }

    void nanScaleIsNamed() {
        // E8M0 scale 255 is NaN: the tensor and the block are named (scales [E, H, I/32] = [8, 64, 1]).
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString() + "/m";
        const std::string bad = "model.layers.2.mlp.experts.down_proj_scales";
        rewriteTensors(gptOssDir("tiny-gpt-oss-mxfp4"), dir, [&](TensorInfo& t, std::vector<unsigned char>& b) {
            if (t.name == bad) b[5] = 255;
        });
        const auto msg = errorOf([&] { Engine().loadTarget(dir); });
        QVERIFY2(msg.contains("MXFP4 scales 'model.layers.2.mlp.experts.down_proj_scales'") &&
                     msg.contains("model.layers.2.mlp.experts.down_proj_blocks") && msg.contains("[0, 5, 0]") &&
                     msg.contains("E8M0's NaN"),
                 qPrintable(msg));
    }

    void wrongPackedDtypeIsNamed() {
        // blocks stored as bf16 instead of U8: the dtype mismatch names the tensor.
        QTemporaryDir tmp;
        const auto dir = tmp.path().toStdString() + "/m";
        const std::string victim = "model.layers.1.mlp.experts.gate_up_proj_blocks";
        rewriteTensors(gptOssDir("tiny-gpt-oss-mxfp4"), dir, [&](TensorInfo& t, std::vector<unsigned char>& b) {
            if (t.name != victim) return;
            t.dtype = DType::BF16;
            b.assign(b.size() * 2, 0);
        });
        const auto msg = errorOf([&] { Engine().loadTarget(dir); });
        QVERIFY2(msg.contains(QString::fromStdString(victim)) && msg.contains("U8 (packed MXFP4)"), qPrintable(msg));
    }

    void slidingLayersOnlyForGptOss() {
        // A Qwen3 target naming a sliding layer is refused (its HF class has no such layer type).
        const auto msg = loadErrorWithConfig(demoTarget(), [](nlohmann::json& c) {
            c["layer_types"] = std::vector<std::string>(c["num_hidden_layers"].get<std::size_t>(), "sliding_attention");
        });
        QVERIFY2(msg.contains("sliding_attention") && msg.contains("not supported"), qPrintable(msg));
    }
};

QTEST_GUILESS_MAIN(TestGptOss)
#include "tst_gptoss.moc"
