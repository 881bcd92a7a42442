// The static-shape verify step that CUDA graphs capture (docs/ENGINE.md, "CUDA graphs";
// decoding/verify_graph.h), on the CPU without capture: its forward against the dynamic one
// (same logits and tapped features up to the rounding of attention over masked rows, same
// argmax, same KV rows), whole DFlash runs with it (identical output ids and acceptance
// lengths on every dense fixture and the hybrid one, both loops, greedy and sampled; on the
// hybrid target the state commit against KVCache::crop), the recorded mode, and
// the --cuda-graphs option (validated by name, "on" refused on the CPU). The drafter's
// static-shape call (DraftGraph) runs in the same runs.

// Torch headers first: ATen uses `slots` as an identifier, which Qt defines as a macro.
#include "checkpoints/weight_loader.h"
#include "decoding/dflash_loop.h"
#include "decoding/verify_graph.h"
#include "models/dflash_drafter.h"
#include "models/target_model.h"

#include <c10/core/InferenceMode.h>

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/model_config.h"
#include "draftscope/results_json.h"
#include "draftscope/settings_validation.h"
#include "gemma4_support.h"
#include "test_support.h"

#include <QtTest>

using namespace draftscope;
using namespace testsupport;

namespace {

std::unique_ptr<TargetModel> loadTarget(const std::string& dir) {
    const WeightLoader weights(dir);
    const auto config = loadTargetConfig(dir);
    TargetPlacement placement;  // one group on the CPU
    placement.devices = {at::Device(at::kCPU)};
    placement.plan.layerDevice.assign(static_cast<std::size_t>(config.numLayers), 0);
    return std::make_unique<TargetModel>(config, weights, at::kFloat, std::move(placement));
}

/// The dense fixtures with a drafter: the demo pair, and tiny targets with a random drafter.
struct Pair {
    std::unique_ptr<TargetModel> target;
    std::unique_ptr<DFlashDrafter> drafter;
};

/// `model`: "demo" (the demo target), "tiny-gemma4" or a tests/data/models fixture; `drafter`: a drafter
/// fixture name (drafterDir()) or "random" (a random drafter of the target's widths).
Pair loadPair(const QString& model, const QString& drafter, const QString& tmp) {
    Pair p;
    if (model == "tiny-gemma4") {  // written here (gemma4_support.h): sliding layers, KV sharing
        const auto dir = tmp.toStdString() + "/gemma4";
        gemma4::writeTinyGemma4(dir, gemma4::kDense, 3);
        p.target = loadTarget(dir);
    } else {
        p.target = loadTarget(model == "demo" ? demoTarget() : dataPath("models/" + model.toStdString()));
    }
    std::string dir = drafter == "dflash2-demo" ? unpackedDataPath("models/dflash2-demo") : drafterDir(drafter.toStdString());
    if (drafter == "random") {
        dir = tmp.toStdString() + "/drafter";
        const auto H = p.target->config().hiddenSize;
        writeRandomDrafter(dir, {H, H / 4, 2 * H, p.target->config().vocabSize}, 4, 7);
    }
    const WeightLoader w(dir);
    p.drafter = std::make_unique<DFlashDrafter>(loadDrafterConfig(dir), w, *p.target);
    return p;
}

std::vector<float> floats(const at::Tensor& t) {
    const auto c = t.to(at::kFloat).contiguous();
    return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

std::vector<std::int64_t> prompt() { return {5, 17, 300, 42, 7, 99, 211, 3, 64, 128, 9}; }

void addDenseRows() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("drafter");
    QTest::newRow("demo-qwen3") << "demo" << "drafter-good";
    QTest::newRow("llama3") << "tiny-llama3" << "random";
    QTest::newRow("qwen2-bias") << "tiny-qwen2" << "random";
    QTest::newRow("llama-tied") << "tiny-llama-tied" << "random";
    QTest::newRow("gemma4") << "tiny-gemma4" << "random";
}

}  // namespace

class TestVerifyGraph : public QObject {
    Q_OBJECT

private slots:
    // One verify block on a cache holding the prompt: the static-shape forward (rows written
    // at device positions, attention over the whole capacity under a mask) against the
    // dynamic forward. Masked rows add exact zeros to the softmax, so only the summation
    // order can differ: relative error <= 1e-5, identical argmax, KV rows alike.
    void staticForwardMatchesDynamic_data() { addDenseRows(); }
    void staticForwardMatchesDynamic() {
        QFETCH(QString, model);
        QFETCH(QString, drafter);
        c10::InferenceMode guard;
        QTemporaryDir tmp;
        const auto pair = loadPair(model, drafter, tmp.path());
        const auto& target = *pair.target;
        const auto featIdx = pair.drafter->featureIndices();
        const auto ids = prompt();
        const auto P = static_cast<std::int64_t>(ids.size());
        const auto longs = at::TensorOptions().dtype(at::kLong);
        const auto block = at::tensor(std::vector<std::int64_t>{11, 400, 23, 5}, longs);
        const auto T = block.size(0);

        KVCache dyn = target.makeCache(), stat = target.makeCache();
        for (auto* c : {&dyn, &stat}) {
            c->reserve(P + 20);
            target.forward(at::tensor(ids, longs), *c, {featIdx, P, {}, {}, {}});
        }
        // Rows beyond the length as a rejected block leaves them: the static step must mask
        // (or overwrite) them.
        target.forward(at::tensor(std::vector<std::int64_t>{7, 8, 9, 10, 11, 12}, longs), stat, {{}, 6, {}, {}, {}});
        stat.crop(P);
        QCOMPARE(stat.capacity() % 16, std::int64_t(0));
        QVERIFY(stat.capacity() >= P + 20);
        const auto a = target.forward(block, dyn, {featIdx, 0, {}, {}, {}});
        TargetForwardRequest req{featIdx, 0, at::arange(P, P + T, longs), {}, {}};
        req.staticShapes = true;
        const auto b = target.forward(block, stat, req);
        QCOMPARE(stat.length(), P);  // not advanced: the caller commits
        stat.advance(T);

        QVERIFY2(relativeMaxError(floats(b.logits), floats(a.logits)) <= 1e-5,
                 qPrintable(QString::number(relativeMaxError(floats(b.logits), floats(a.logits)))));
        QVERIFY(at::equal(b.logits.argmax(-1), a.logits.argmax(-1)));
        QCOMPARE(b.hidden.size(), a.hidden.size());
        for (std::size_t i = 0; i < a.hidden.size(); ++i)
            QVERIFY(relativeMaxError(floats(b.hidden[i]), floats(a.hidden[i])) <= 1e-5);
        for (std::int64_t l = 0; l < target.config().numLayers; ++l) {
            const auto [ka, va] = dyn.rows(static_cast<std::size_t>(l));
            const auto [kb, vb] = stat.rows(static_cast<std::size_t>(l));
            QCOMPARE(kb.defined(), ka.defined());
            if (!ka.defined()) continue;  // Gemma 4's KV-shared layers keep no rows of their own
            QVERIFY(relativeMaxError(floats(kb), floats(ka)) <= 1e-5);
            QVERIFY(relativeMaxError(floats(vb), floats(va)) <= 1e-5);
        }
    }

    // Hybrid target: the static step through VerifyGraph (the Gated DeltaNet states copied
    // into fixed buffers, commit() rebuilding the state after the accepted tokens into them)
    // leaves, bit for bit, the states that the same static forward followed by
    // KVCache::crop() leaves, for every accepted length, and again on a second step that
    // starts from the buffers; and close to the dynamic forward's (attention rounding only).
    void hybridCommitMatchesCrop() {
        c10::InferenceMode guard;
        auto target = loadTarget(dataPath("models/qwen3_5-tiny-causallm"));
        target->setCudaGraphMode(CudaGraphMode::StaticEager);
        const auto ids = prompt();
        const auto P = static_cast<std::int64_t>(ids.size());
        const auto longs = at::TensorOptions().dtype(at::kLong);
        const auto T = std::int64_t(4);
        const auto block1 = at::tensor(std::vector<std::int64_t>{11, 400, 23, 5}, longs);
        const auto block2 = at::tensor(std::vector<std::int64_t>{8, 31, 77, 2}, longs);
        const auto L = static_cast<std::size_t>(target->config().numLayers);
        auto prefilled = [&] {
            KVCache c = target->makeCache();
            c.reserve(P + 20);
            target->forward(at::tensor(ids, longs), c, {{1}, P, {}, {}, {}});
            return c;
        };
        // Reference: the static forward by hand, then crop().
        auto reference = [&](KVCache& c, const at::Tensor& block, std::int64_t keep) {
            TargetForwardRequest req{{1}, 0, at::arange(c.length(), c.length() + T, longs), {}, {}};
            req.staticShapes = true;
            const auto r = target->forward(block, c, req);
            c.advance(T);
            c.crop(keep);
            return r;
        };
        int linear = 0;
        for (std::int64_t n = 0; n <= T; ++n) {
            KVCache a = prefilled(), b = prefilled(), dyn = prefilled();
            VerifyGraph verifier(*target, T, {1});
            const auto va = verifier.forward(block1, a);
            const auto vb = reference(b, block1, P + n);
            QVERIFY(at::equal(va.logits, vb.logits));
            verifier.commit(a, P + n);
            target->forward(block1, dyn, {{}, 0, {}, {}, {}});
            dyn.crop(P + n);
            for (std::size_t l = 0; l < L; ++l) {
                const auto& sa = a.linearState(l);
                if (!sa.conv.defined()) continue;
                QVERIFY2(at::equal(sa.conv, b.linearState(l).conv) && at::equal(sa.recurrent, b.linearState(l).recurrent),
                         qPrintable(QString("first commit: layer %1, n %2").arg(l).arg(n)));
            }
            // A second step from the state the commit left in the buffers.
            const auto keep2 = P + n + 2;
            const auto va2 = verifier.forward(block2, a);
            const auto vb2 = reference(b, block2, keep2);
            QVERIFY(at::equal(va2.logits, vb2.logits));
            verifier.commit(a, keep2);
            target->forward(block2, dyn, {{}, 0, {}, {}, {}});
            dyn.crop(keep2);
            QCOMPARE(a.length(), keep2);
            linear = 0;
            for (std::size_t l = 0; l < L; ++l) {
                const auto& sa = a.linearState(l);
                if (!sa.conv.defined()) continue;
                ++linear;
                const auto& sb = b.linearState(l);
                QVERIFY2(at::equal(sa.conv, sb.conv) && at::equal(sa.recurrent, sb.recurrent),
                         qPrintable(QString("layer %1, n %2").arg(l).arg(n)));
                const auto& sd = dyn.linearState(l);
                QVERIFY(relativeMaxError(floats(sa.recurrent), floats(sd.recurrent)) <= 1e-5);
                QVERIFY(relativeMaxError(floats(sa.conv), floats(sd.conv)) <= 1e-5);
            }
            QVERIFY(verifier.describe().find("static shapes, not captured: 2 of 2 verify steps") != std::string::npos);
        }
        QVERIFY(linear > 0);
    }

    // Whole runs: the static-shape verify (CudaGraphMode::StaticEager, what a graph replays)
    // against the dynamic one, on every dense fixture and the hybrid ones, both loop revisions, greedy and
    // sampled, with clipped last blocks (max_new 29 is not a multiple of the block): the
    // same output ids and acceptance lengths, and the mode recorded.
    void runsWithStaticShapesAreIdentical_data() {
        addDenseRows();
        // The hybrid target (static verify with fixed Gated DeltaNet state buffers), the
        // drafter's static call on a target whose verify stays eager (MoE), and the verify's
        // on a drafter whose masked layout keeps its calls eager.
        QTest::newRow("hybrid-qwen3_5") << "qwen3_5-tiny-causallm" << "random";
        QTest::newRow("moe-qwen3_5") << "tiny-qwen3_5-moe" << "random";
        QTest::newRow("demo-swa-drafter") << "demo" << "drafter-swa";
        // DFlash2: the static drafter call also returns the hidden rows the selector reads.
        QTest::newRow("demo-dflash2") << "demo" << "dflash2-demo";
    }
    void runsWithStaticShapesAreIdentical() {
        QFETCH(QString, model);
        QFETCH(QString, drafter);
        c10::InferenceMode guard;
        QTemporaryDir tmp;
        const auto pair = loadPair(model, drafter, tmp.path());
        auto& target = *pair.target;
        for (const auto loop : {LoopRevision::Current, LoopRevision::April2026})
            for (const double temperature : {0.0, 0.8}) {
                if (pair.drafter->selector() && loop == LoopRevision::April2026) continue;  // DFlash2: current only
                RunSettings s;
                s.maxNewTokens = 29;
                s.ignoreEos = true;
                s.loop = loop;
                s.temperature = temperature;
                s.seed = 3;
                target.setCudaGraphMode(CudaGraphMode::Off);
                const auto eager = runDFlash(target, *pair.drafter, prompt(), s, {}, {}, nullptr);
                target.setCudaGraphMode(CudaGraphMode::StaticEager);
                const auto stat = runDFlash(target, *pair.drafter, prompt(), s, {}, {}, nullptr);
                QCOMPARE(stat.outputIds, eager.outputIds);
                QCOMPARE(stat.acceptanceLengths, eager.acceptanceLengths);
                QCOMPARE(eager.timing.cudaGraphs, std::string("off (turned off)"));
                const auto steps = eager.acceptanceLengths.size();
                // Every full block ran static; clipped last blocks (current loop, where the
                // run has them) ran eagerly.
                // The drafter: every full block but the first call (the prompt's context).
                const auto B = static_cast<std::size_t>(pair.drafter->blockSize());
                std::size_t full = 0;
                for (const auto& step : stat.steps) full += step.drafted.size() + 1 == B ? 1 : 0;
                QVERIFY(full > 1);
                const auto targetWhy = target.staticShapeUnsupportedReason();
                const auto drafterWhy = pair.drafter->staticShapeUnsupportedReason();
                const auto expected =
                    (targetWhy.empty() ? "static shapes, not captured: " + std::to_string(full) + " of " +
                                             std::to_string(steps) + " verify steps"
                                       : "verify steps eager (" + targetWhy + ")") +
                    "; " +
                    (drafterWhy.empty() ? "static shapes, not captured: " + std::to_string(full - 1) + " of " +
                                              std::to_string(steps) + " drafter calls"
                                        : "drafter calls eager (" + drafterWhy + ")");
                QVERIFY2(stat.timing.cudaGraphs == expected, (stat.timing.cudaGraphs + " != " + expected).c_str());
            }
        target.setCudaGraphMode(CudaGraphMode::Auto);
        const auto automatic = runDFlash(target, *pair.drafter, prompt(), RunSettings{}, {}, {}, nullptr);
        QCOMPARE(automatic.timing.cudaGraphs, std::string("off (the device is the CPU)"));
    }

    // Targets whose forward has no static shapes yet run eagerly, saying why, and "on" is an
    // Error naming the reason.
    void unsupportedTargetsSayWhy() {
        c10::InferenceMode guard;
        struct Case {
            const char* model;
            const char* why;
        };
        for (const auto& c : {Case{"tiny-qwen3-moe", "MoE"}, Case{"tiny-qwen3_5-moe", "MoE"}}) {
            auto target = loadTarget(dataPath(std::string("models/") + c.model));
            QVERIFY(QString::fromStdString(target->staticShapeUnsupportedReason()).contains(c.why));
            target->setCudaGraphMode(CudaGraphMode::StaticEager);
            const VerifyGraph off(*target, 4, {1});
            QVERIFY2(QString::fromStdString(off.describe()).startsWith("verify steps eager (") &&
                         QString::fromStdString(off.describe()).contains(c.why),
                     off.describe().c_str());
            target->setCudaGraphMode(CudaGraphMode::On);  // on the CPU: the device is the first reason
            QVERIFY(errorOf([&] { VerifyGraph on(*target, 4, {1}); }).contains("cuda-graphs on: impossible here"));
            // A request for static shapes on such a target is refused, not run wrongly.
            KVCache cache = target->makeCache();
            TargetForwardRequest req{{}, 0, at::arange(2, at::TensorOptions().dtype(at::kLong)), {}, {}};
            req.staticShapes = true;
            QVERIFY(errorOf([&] { target->forward(at::zeros({2}, at::kLong), cache, req); }).contains(c.why));
        }
    }

    // How a run's steps used graphs, as results files record it (GraphUse::describe/describeRun).
    void graphUseDescriptions() {
        GraphUse v;
        v.replays = 241;
        v.eager = 14;
        v.captures = 2;
        v.captureMs = 169.74;
        GraphUse d;
        d.replays = 240;
        d.eager = 15;
        d.captures = 1;
        d.captureMs = 8.6;
        QCOMPARE(GraphUse::describeRun(v, d), std::string("241 of 255 verify steps replayed, 2 captures (169.7 ms); "
                                                          "240 of 255 drafter calls replayed, 1 capture (8.6 ms)"));
        v.note = "state commits eager (out of memory)";
        QCOMPARE(v.describe("verify steps"),
                 std::string("241 of 255 verify steps replayed, 2 captures (169.7 ms), state commits eager (out of memory)"));
        v.note.clear();
        v.offReason = "capture failed";
        QCOMPARE(v.describe("verify steps"),
                 std::string("241 of 255 verify steps replayed, 2 captures (169.7 ms); then eager (capture failed)"));
        GraphUse off, offD;
        off.eager = offD.eager = 3;
        off.offReason = offD.offReason = "the device is the CPU";
        QCOMPARE(GraphUse::describeRun(off, offD), std::string("off (the device is the CPU)"));
        GraphUse st;
        st.staticEager = true;
        st.staticRuns = 8;
        st.eager = 1;
        QCOMPARE(st.describe("verify steps"), std::string("static shapes, not captured: 8 of 9 verify steps"));
    }

    // --cuda-graphs: spelled wrong is refused by name; "on" is refused at load on the CPU;
    // the recorded mode round-trips through the results file.
    void optionIsValidatedByName() {
        LoadOptions o;
        o.cudaGraphs = "yes";
        try {
            validate(o);
            QFAIL("expected InvalidSetting");
        } catch (const InvalidSetting& e) {
            QCOMPARE(QString::fromStdString(e.option()), QString("cuda-graphs"));
            QVERIFY(QString(e.what()).contains("auto, on or off"));
            QVERIFY(QString(e.what()).contains("'yes'"));
        }
        o.cudaGraphs = "on";
        Engine engine;
        try {
            engine.loadTarget(demoTarget(), o);
            QFAIL("expected InvalidSetting");
        } catch (const InvalidSetting& e) {
            QCOMPARE(QString::fromStdString(e.option()), QString("cuda-graphs"));
            QVERIFY2(QString(e.what()).contains("the device is the CPU"), e.what());
        }
        QVERIFY(!engine.hasTarget());
        o.cudaGraphs = "off";
        engine.loadTarget(demoTarget(), o);
        engine.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 8;
        s.ignoreEos = true;
        const auto r = engine.run(goldenPrompt(0), s);
        QCOMPARE(r.timing.cudaGraphs, std::string("off (turned off)"));
        const auto back = runResultFromJson(toJson(r), "run");
        QCOMPARE(back.timing.cudaGraphs, r.timing.cudaGraphs);
    }
};

QTEST_GUILESS_MAIN(TestVerifyGraph)
#include "tst_verify_graph.moc"
