// Placement across devices (docs/ENGINE.md, "Placement across devices"): the planner on
// hand-computed cases, the placement options' parsing and validation, and exactness: a
// target split into CPU placement groups ("cpu,cpu", forced boundaries at every layer
// boundary) gives results bitwise identical to one device, for dense, hybrid and MoE
// targets, chain DFlash (greedy and sampled) and DDTree.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/placement.h"
#include "draftscope/results_json.h"
#include "draftscope/settings_validation.h"
#include "test_support.h"

#include <QtTest>

#include <string>
#include <vector>

using namespace draftscope;
using namespace testsupport;
using Bytes = std::vector<std::uint64_t>;

namespace {

/// Embeddings 10 B, four layers of 20 B, head 10 B on `limits.size()` devices.
PlacementRequest fourLayers(Bytes limits, std::uint64_t reserve = 0) {
    PlacementRequest r;
    r.embeddingBytes = 10;
    r.layerBytes = {20, 20, 20, 20};
    r.headBytes = 10;
    r.reserveBytes = reserve;
    for (std::size_t g = 0; g < limits.size(); ++g) r.deviceNames.push_back("cuda:" + std::to_string(g));
    r.deviceLimits = std::move(limits);
    return r;
}

/// A run as its results file records it, less what differs between placements (timing,
/// peaks, the device option and the placement itself). Floats keep every bit (JSON writes
/// the shortest round-tripping decimal).
std::string comparable(nlohmann::json j) {
    j.erase("timing_ms");
    j.erase("peak_device_bytes");
    j.erase("peak_device_bytes_per_device");
    j.erase("placement");
    if (j.contains("settings")) j["settings"].erase("device");
    return j.dump();
}

struct Fixture {
    std::string target;
    std::string drafter;  ///< empty: a random drafter of `shape` is written
    RandomDrafterShape shape{0, 0, 0, 0};
    std::vector<std::int64_t> prompt;
};

/// What one placement produces on `f`: forward, greedy chain, sampled chain, DDTree.
struct Outcome {
    std::vector<float> hidden, logits;
    std::string greedy, sampled, tree;
};

Outcome runAll(const Fixture& f, const std::string& drafterDir, const LoadOptions& load) {
    Engine e;
    e.loadTarget(f.target, load);
    e.loadDrafter(drafterDir);
    const auto p = idsPrompt(f.prompt);
    Outcome o;
    const auto fw = e.forward(p);
    o.hidden = fw.hiddenStates;
    o.logits = fw.logits;
    RunSettings s;
    s.maxNewTokens = 6;
    s.ignoreEos = true;
    o.greedy = comparable(toJson(e.run(p, s)));
    s.temperature = 0.8;
    s.seed = 7;
    o.sampled = comparable(toJson(e.run(p, s)));
    s.temperature = 0;
    o.tree = comparable(toJson(e.runTree(p, s, 8)));
    return o;
}

/// Every forced boundary of a `layers`-layer target on "cpu,cpu" against "cpu".
void checkEverySplit(const Fixture& f, std::int64_t layers) {
    QTemporaryDir tmp;
    std::string drafterDir = f.drafter;
    if (drafterDir.empty()) {
        drafterDir = tmp.path().toStdString() + "/drafter";
        writeRandomDrafter(drafterDir, f.shape, 6, 3);
    }
    const auto reference = runAll(f, drafterDir, {});
    for (std::int64_t split = 0; split + 1 < layers; ++split) {
        LoadOptions two;
        two.device = "cpu,cpu";
        two.splitAfterLayers = {split};
        const auto o = runAll(f, drafterDir, two);
        const QByteArray where = QByteArray("split after layer ") + QByteArray::number(static_cast<qlonglong>(split));
        QVERIFY2(o.hidden == reference.hidden, where.constData());
        QVERIFY2(o.logits == reference.logits, where.constData());
        QVERIFY2(o.greedy == reference.greedy, where.constData());
        QVERIFY2(o.sampled == reference.sampled, where.constData());
        QVERIFY2(o.tree == reference.tree, where.constData());
    }
}

std::vector<std::int64_t> prefix(const std::string& key, std::size_t n) {
    auto ids = goldenTensors().readInt64(key);
    ids.resize(n);
    return ids;
}

}  // namespace

class TestPlacement : public QObject {
    Q_OBJECT
private slots:
    // --- the planner -------------------------------------------------------------------
    void balancedSplitOfTwoDevices() {
        // Total 100, share 50: embeddings + layers 0-1 (50) on cuda:0, the rest on cuda:1.
        const auto p = planPlacement(fourLayers({kUnlimitedBytes, kUnlimitedBytes}));
        QCOMPARE(p.embeddingDevice, 0);
        QCOMPARE(p.layerDevice, (std::vector<int>{0, 0, 1, 1}));
        QCOMPARE(p.headDevice, 1);
        QCOMPARE(p.bytesPerDevice, (Bytes{50, 50}));
        QCOMPARE(p.drafterDevice, 0);  // equal room: the lowest index
        QCOMPARE(describePlacement(p, {"cuda:0", "cuda:1"}),
                 std::string("cuda:0: embeddings, layers 0-1, drafter; cuda:1: layers 2-3, head"));
    }

    void exactFitWithReserve() {
        // Limits 55 each, 5 reserved: 50 usable, exactly the two halves.
        const auto p = planPlacement(fourLayers({55, 55}, 5));
        QCOMPARE(p.layerDevice, (std::vector<int>{0, 0, 1, 1}));
        QCOMPARE(p.bytesPerDevice, (Bytes{55, 55}));
    }

    void oneDeviceHoldsEverything() {
        const auto p = planPlacement(fourLayers({100}));
        QCOMPARE(p.layerDevice, (std::vector<int>{0, 0, 0, 0}));
        QCOMPARE(p.headDevice, 0);
        QCOMPARE(p.bytesPerDevice, (Bytes{100}));
    }

    void sequentialWhenBalancedDoesNotFit() {
        // Balanced: cuda:0 takes 50, then cuda:1 (30) cannot hold 20 + 20 + 10. Sequential:
        // cuda:0 takes 10 + 3 x 20 = 70, cuda:1 20 + 10 = 30. The drafter goes where the
        // most room is left: both have 0, so cuda:0.
        const auto p = planPlacement(fourLayers({70, 30}));
        QCOMPARE(p.layerDevice, (std::vector<int>{0, 0, 0, 1}));
        QCOMPARE(p.headDevice, 1);
        QCOMPARE(p.bytesPerDevice, (Bytes{70, 30}));
    }

    void drafterGoesWhereMostRoomIsLeft() {
        auto r = fourLayers({60, 200});  // 10 left on cuda:0, 150 on cuda:1
        QCOMPARE(planPlacement(r).drafterDevice, 1);
        r.drafterDevice = 0;
        QCOMPARE(planPlacement(r).drafterDevice, 0);
        r.drafterDevice = 2;
        QVERIFY(errorOf([&] { planPlacement(r); }).contains("drafter device index 2 out of range (2 devices)"));
    }

    void threeDevicesAuto() {
        // Total 100 over three unlimited devices: share 34. cuda:0 10 + 20 = 30 (another
        // layer would make 50), cuda:1 20 (40 > 34), cuda:2 the rest.
        const auto p = planPlacement(fourLayers({kUnlimitedBytes, kUnlimitedBytes, kUnlimitedBytes}));
        QCOMPARE(p.layerDevice, (std::vector<int>{0, 1, 2, 2}));
        QCOMPARE(p.bytesPerDevice, (Bytes{30, 20, 50}));
    }

    void doesNotFitNamesModuleAndDevices() {
        const auto msg = errorOf([] { planPlacement(fourLayers({50, 49})); });
        QVERIFY2(msg.contains("the final norm and LM head (10 B) fits on no device"), qPrintable(msg));
        QVERIFY2(msg.contains("it needs 100 B"), qPrintable(msg));
        QVERIFY2(msg.contains("cuda:0 50 B, cuda:1 49 B"), qPrintable(msg));
        const auto reserved = errorOf([] { planPlacement(fourLayers({60, 60}, 11)); });
        QVERIFY2(reserved.contains("11 B of activations per device"), qPrintable(reserved));
    }

    void forcedBoundaries() {
        auto r = fourLayers({100, 100});
        r.splitAfterLayers = {0};
        auto p = planPlacement(r);
        QCOMPARE(p.layerDevice, (std::vector<int>{0, 1, 1, 1}));
        QCOMPARE(p.bytesPerDevice, (Bytes{30, 70}));
        QCOMPARE(p.drafterDevice, 0);  // 70 left against 30
        r.deviceLimits = {100, 60};
        const auto msg = errorOf([&] { planPlacement(r); });
        QVERIFY2(msg.contains("cuda:1 needs 70 B for its layers but has 60 B"), qPrintable(msg));
        r.deviceLimits = {100, 100};
        r.splitAfterLayers = {3};
        QVERIFY(errorOf([&] { planPlacement(r); }).startsWith("split-after: expected strictly increasing decoder layer indices in 0..2 (the target has 4 layers), found a boundary after layer 3"));
        r.splitAfterLayers = {0, 1};
        QVERIFY(errorOf([&] { planPlacement(r); }).startsWith("split-after: expected one fewer boundary than devices (2), found 2 forced boundaries"));
    }

    void formatsBytes() {
        QCOMPARE(formatBytes(512), std::string("512 B"));
        QCOMPARE(formatBytes(1536), std::string("1.50 KiB"));
        QCOMPARE(formatBytes(std::uint64_t{40} << 30), std::string("40.00 GiB"));
        QCOMPARE(formatBytes(kUnlimitedBytes), std::string("unlimited"));
    }

    // --- options -----------------------------------------------------------------------
    void parsesMemoryLimits() {
        QCOMPARE(parseMemoryLimits("40GiB,1.5KB,7B"), (Bytes{std::uint64_t{40} << 30, 1500, 7}));
        QCOMPARE(parseMemoryLimits("0.5MiB"), (Bytes{524288}));
        QCOMPARE(parseMemoryLimits(" 40GiB ,\t7B"), (Bytes{std::uint64_t{40} << 30, 7}));  // spaces around entries
        for (const char* bad : {"40", "nanGiB", "-1GiB", "infGB", "GiB", "1e3GB", "40GiB,", "4 GiB", " , 4GiB",
                                "99999999999TiB"}) {
            const auto msg = errorOf([&] { parseMemoryLimits(bad); });
            QVERIFY2(msg.startsWith("gpu-memory: expected a comma-separated list of sizes"), qPrintable(msg));
        }
    }

    void validatesPlacementOptions() {
        QCOMPARE(deviceList("cuda:0,cuda:1"), (std::vector<std::string>{"cuda:0", "cuda:1"}));
        QCOMPARE(deviceList(" cuda:0, cuda:1 "), (std::vector<std::string>{"cuda:0", "cuda:1"}));
        LoadOptions o;
        o.device = "cpu,cpu";
        o.splitAfterLayers = {2};
        o.deviceMemory = {1000, 2000};
        o.drafterDevice = "cpu";
        validate(o);  // valid
        auto fails = [](LoadOptions bad) { return errorOf([&] { validate(bad); }); };
        for (const char* d : {"cpu,,cpu", "auto,cpu", "cuda:x", "cpu,", "cpu, ,cpu", "cu da"}) {
            auto b = o;
            b.device = d;
            QVERIFY2(fails(b).startsWith("device: expected cpu, cuda, cuda:N, a comma-separated list"), d);
        }
        auto b = o;
        b.deviceMemory = {1000};
        QVERIFY(fails(b).startsWith("gpu-memory: expected one limit per device of --device (2), found 1 limits"));
        b = o;
        b.splitAfterLayers = {1, 2};
        QVERIFY2(fails(b).startsWith("split-after: expected 1 layer index(es), one fewer than the 2 device(s) the "
                                     "target is split across, found 2"),
                 qPrintable(fails(b)));
        b = o;
        b.splitAfterLayers = {-1};
        QVERIFY(fails(b).startsWith("split-after: expected strictly increasing decoder layer indices >= 0"));
        b = o;
        b.drafterDevice = "cuda:0";
        QVERIFY(fails(b).startsWith("drafter-device: expected one of the devices listed in --device"));
        b = o;
        b.maxContext = 0;
        QVERIFY(fails(b).startsWith("max-context: expected an integer >= 1"));
    }

    // --- the engine --------------------------------------------------------------------
    void loadRecordsPlacement() {
        Engine e;
        LoadOptions o;
        o.device = "cpu,cpu,cpu";
        o.splitAfterLayers = {1, 3};
        o.drafterDevice = "cpu";
        const auto s = e.loadTarget(demoTarget(), o);
        QCOMPARE(s.devices, (std::vector<std::string>{"cpu", "cpu", "cpu"}));
        QCOMPARE(s.placement, std::string("cpu: embeddings, layers 0-1, drafter; cpu: layers 2-3; cpu: layers 4-5, head"));
        o = {};
        o.device = "auto";  // no GPU here: the CPU
        QCOMPARE(e.loadTarget(demoTarget(), o).devices, (std::vector<std::string>{"cpu"}));
        QCOMPARE(e.targetSummary().placement, std::string("cpu: embeddings, layers 0-5, head, drafter"));
    }

    void tooSmallDeviceFailsBeforeLoading() {
        Engine e;
        LoadOptions o;
        o.device = "cpu,cpu";
        o.deviceMemory = {1024, 1024};
        const auto msg = errorOf([&] { e.loadTarget(demoTarget(), o); });
        QVERIFY2(msg.contains("the target does not fit on its devices: the embeddings"), qPrintable(msg));
        QVERIFY2(msg.contains("available: cpu 1.00 KiB, cpu 1.00 KiB"), qPrintable(msg));
        QVERIFY(!e.hasTarget());
    }

    void threeGroupsAreExact() {
        const auto p = goldenPrompt(0);
        Engine one, three;
        one.loadTarget(demoTarget());
        one.loadDrafter(demoDrafter());
        LoadOptions o;
        o.device = "cpu,cpu,cpu";
        o.splitAfterLayers = {0, 4};
        three.loadTarget(demoTarget(), o);
        three.loadDrafter(demoDrafter());
        RunSettings s;
        s.maxNewTokens = 8;
        QCOMPARE(comparable(toJson(three.run(p, s))), comparable(toJson(one.run(p, s))));
        QCOMPARE(comparable(toJson(three.runTree(p, s, 8))), comparable(toJson(one.runTree(p, s, 8))));
    }

    void denseTargetSplitAnywhereIsExact() {
        auto ids = promptIds(0);
        ids.resize(std::min<std::size_t>(ids.size(), 12));
        checkEverySplit({demoTarget(), demoDrafter(), {}, ids}, 6);
    }

    void hybridTargetSplitAnywhereIsExact() {
        checkEverySplit({dataPath("models/qwen3_5-tiny-causallm"), {}, {128, 32, 256, 2048}, prefix("q35.input_ids", 12)},
                        4);
    }

    void moeTargetSplitAnywhereIsExact() {
        const auto moe = SafetensorsFile::open(dataPath("moe_goldens.safetensors"));
        auto ids = moe->readInt64("tiny-qwen3_5-moe.input_ids");
        ids.resize(12);
        checkEverySplit({dataPath("models/tiny-qwen3_5-moe"), {}, {64, 16, 128, 512}, ids}, 4);
    }

    // Targets without a drafter fixture: the dense MoE target (two layers, too few for the
    // random drafter's taps) and a Llama with tied embeddings (its LM head on the last group
    // is a copy of the embedding table): forward and greedy decoding at every boundary.
    void targetsWithoutDrafterSplitAreExact_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("layers");
        QTest::newRow("qwen3-moe") << "tiny-qwen3-moe" << 2;
        QTest::newRow("llama-tied") << "tiny-llama-tied" << 3;
    }
    void targetsWithoutDrafterSplitAreExact() {
        QFETCH(QString, model);
        QFETCH(int, layers);
        const auto dir = dataPath("models/" + model.toStdString());
        const auto p = idsPrompt({5, 17, 300, 42, 7, 99, 511, 3});
        Engine one;
        one.loadTarget(dir);
        const auto reference = one.forward(p);
        const auto greedy = one.greedy(p, 8, true);
        for (int split = 0; split + 1 < layers; ++split) {
            Engine two;
            LoadOptions o;
            o.device = "cpu,cpu";
            o.splitAfterLayers = {split};
            two.loadTarget(dir, o);
            const auto f = two.forward(p);
            QCOMPARE(f.hiddenStates, reference.hiddenStates);
            QCOMPARE(f.logits, reference.logits);
            QCOMPARE(two.greedy(p, 8, true), greedy);
        }
    }
};

QTEST_GUILESS_MAIN(TestPlacement)
#include "tst_placement.moc"
