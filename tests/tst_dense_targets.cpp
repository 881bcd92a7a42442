// Dense targets other than the demo Qwen3: Llama with llama3 rope scaling (float32
// weights), Llama with tied embeddings (bf16), Qwen2 with q/k/v bias (bf16). Goldens from
// HF transformers 5.17 (tools/make_dense_fixtures.py): hidden states and logits within
// 1e-4 of the tensor's max abs, greedy ids from HF generate exactly.

#include "draftscope/engine.h"
#include "test_support.h"

#include <QtTest>

using namespace draftscope;
using namespace testsupport;

class TestDenseTargets : public QObject {
    Q_OBJECT

    static const SafetensorsFile& denseGoldens() {
        static const auto f = SafetensorsFile::open(dataPath("dense_goldens.safetensors"));
        return *f;
    }

private slots:
    void forwardAndGreedy_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("architecture");
        QTest::newRow("llama3-rope-scaling") << "tiny-llama3" << "LlamaForCausalLM";
        QTest::newRow("llama-tied") << "tiny-llama-tied" << "LlamaForCausalLM";
        QTest::newRow("qwen2-bias") << "tiny-qwen2" << "Qwen2ForCausalLM";
    }
    void forwardAndGreedy() {
        QFETCH(QString, model);
        QFETCH(QString, architecture);
        const auto name = model.toStdString();
        Engine engine;
        const auto summary = engine.loadTarget(dataPath("models/" + name));
        QCOMPARE(summary.architecture, architecture.toStdString());
        QVERIFY(summary.unexpectedTensors.empty());
        auto p = idsPrompt(denseGoldens().readInt64(name + ".input_ids"));
        const auto r = engine.forward(p);
        const double eh = relativeMaxError(r.hiddenStates, denseGoldens().readFloat32(name + ".hidden_states"));
        const double el = relativeMaxError(r.logits, denseGoldens().readFloat32(name + ".logits"));
        qInfo("%s: hidden rel err %.3g, logits rel err %.3g", name.c_str(), eh, el);
        QVERIFY2(eh <= 1e-4, qPrintable(QString::number(eh)));
        QVERIFY2(el <= 1e-4, qPrintable(QString::number(el)));
        const auto greedy = engine.greedy(p, 8, /*ignoreEos=*/true);
        QCOMPARE(greedy, denseGoldens().readInt64(name + ".greedy_ids"));
    }

    void demoGreedyEqualsGoldenGreedy() {
        Engine engine;
        engine.loadTarget(demoTarget());
        auto p = goldenPrompt(2);
        QCOMPARE(engine.greedy(p, 96, true), goldens()["dflash_generate"]["greedy.p2"]["output_ids"].get<std::vector<std::int64_t>>());
    }
};

QTEST_GUILESS_MAIN(TestDenseTargets)
#include "tst_dense_targets.moc"
