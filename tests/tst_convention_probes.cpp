// Convention probes without a model (docs/DIAGNOSE.md, "Convention probes"): the paired
// bootstrap on hand-computed cases, per-anchor acceptance and slot match rates, the
// convention -> layout / visibility / tap mapping, the alternatives each family probes, and
// --probes parsing.

#include "analysis/convention_probes.h"
#include "draftscope/diagnosis.h"
#include "draftscope/errors.h"
#include "draftscope/masks.h"
#include "draftscope/probe_convention.h"
#include "draftscope/probe_statistics.h"

#include <QtTest>

using namespace draftscope;

namespace {

/// A probe over `sequence` with block size 4 (3 drafted slots) at `anchors`.
TeacherForcedDrafts probe(std::vector<std::int64_t> sequence, std::vector<std::int64_t> anchors,
                          std::vector<std::vector<std::int64_t>> drafts) {
    TeacherForcedDrafts p;
    p.sequence = std::move(sequence);
    p.promptLength = anchors.empty() ? 1 : anchors.front();
    p.blockSize = 4;
    p.anchors = std::move(anchors);
    p.drafts = std::move(drafts);
    return p;
}

/// A two-layer drafter summary: layer 0 sliding 24 causal, layer 1 full bidirectional.
ModelSummary swaSummary() {
    ModelSummary s;
    s.numLayers = 2;
    s.blockSize = 16;
    s.targetLayerIds = {1, 2, 4};
    s.layerTypes = {"sliding_attention", "full_attention"};
    s.layout = {LayerAttention{true, 24}, LayerAttention{}};
    return s;
}

std::vector<std::string> alternatives(const std::vector<ConventionAlternative>& alts, const ModelSummary& s) {
    std::vector<std::string> out;
    for (const auto& a : alts) out.push_back(describeConvention(a.convention, s.layout));
    return out;
}

}  // namespace

class TestConventionProbes : public QObject {
    Q_OBJECT
private slots:
    void bootstrapOfConstantDifferencesIsExact() {
        // Every pair differs by 0.5: every resample's mean is 0.5.
        const auto r = pairedBootstrap({1, 2, 3}, {1.5, 2.5, 3.5}, 2000, 0.99, 7);
        QCOMPARE(r.mean, 0.5);
        QCOMPARE(r.lower, 0.5);
        QCOMPARE(r.upper, 0.5);
        QCOMPARE(r.pairs, std::int64_t(3));
    }

    void bootstrapOfTwoPairs() {
        // Differences {0, 1}: a resample of 2 has mean 0 (p 1/4), 0.5 (1/2) or 1 (1/4). The 80%
        // interval takes the sorted means at t = round(0.1 * 2000) = 200 and 1799: about 500
        // resamples are 0 and 500 are 1, so the bounds are 0 and 1.
        const auto r = pairedBootstrap({1, 1}, {1, 2}, 2000, 0.80, 42);
        QCOMPARE(r.mean, 0.5);
        QCOMPARE(r.lower, 0.0);
        QCOMPARE(r.upper, 1.0);
        // The 20% interval (sorted means 800..1199) lies in the middle half: 0.5 both.
        const auto mid = pairedBootstrap({1, 1}, {1, 2}, 2000, 0.20, 42);
        QCOMPARE(mid.lower, 0.5);
        QCOMPARE(mid.upper, 0.5);
        // Deterministic: the same seed gives the same interval, on every platform (splitmix64).
        const std::vector<double> a = {1, 2, 1, 3, 1, 1, 2, 5}, b = {2, 2, 1, 4, 1, 3, 2, 5};
        const auto x = pairedBootstrap(a, b, 500, 0.9, 3), y = pairedBootstrap(a, b, 500, 0.9, 3);
        QCOMPARE(x.lower, y.lower);
        QCOMPARE(x.upper, y.upper);
        QCOMPARE(x.mean, 0.5);  // differences 1,0,0,1,0,2,0,0
        QVERIFY(x.lower >= 0.0 && x.lower <= 0.5 && x.upper >= 0.5 && x.upper <= 1.25);
    }

    void bootstrapRejectsBadInput() {
        QVERIFY_THROWS_EXCEPTION(Error, pairedBootstrap({1}, {1, 2}, 10, 0.9, 1));
        QVERIFY_THROWS_EXCEPTION(Error, pairedBootstrap({}, {}, 10, 0.9, 1));
        QVERIFY_THROWS_EXCEPTION(Error, pairedBootstrap({1}, {1}, 0, 0.9, 1));
        QVERIFY_THROWS_EXCEPTION(Error, pairedBootstrap({1}, {1}, 10, 1.0, 1));
    }

    void perAnchorAcceptanceAndSlotRates() {
        // sequence 10 11 12 13 14 15 16; anchors 1 and 2 (block 4: slots for a+1..a+3).
        const auto p = probe({10, 11, 12, 13, 14, 15, 16}, {1, 2}, {{12, 13, 99}, {99, 14, 15}});
        QCOMPARE(perAnchorAcceptance(p, 0), (std::vector<double>{3, 1}));
        // One position later: anchor 1 slot j against 13+j: 12 != 13; anchor 2: 99 != 14.
        QCOMPARE(perAnchorAcceptance(p, 1), (std::vector<double>{1, 1}));
        // Six tokens: anchor 2's slot 2 shifted by one is position 6, past the end: no match.
        const auto shifted = probe({10, 11, 12, 13, 14, 15}, {1, 2}, {{13, 14, 15}, {14, 15, 99}});
        QCOMPARE(perAnchorAcceptance(shifted, 1), (std::vector<double>{4, 3}));
        QCOMPARE(slotMatchRates({p}, 0), (std::vector<double>{0.5, 1.0, 0.5}));
        // ... and slot 2's rate counts anchor 1 only.
        QCOMPARE(slotMatchRates({shifted}, 1), (std::vector<double>{1.0, 1.0, 1.0}));
        QCOMPARE(slotMatchRates({p, shifted}, 0), (std::vector<double>{0.25, 0.5, 0.25}));
    }

    void expectedAcceptanceFromProbabilities() {
        auto p = probe({10, 11, 12, 13, 14, 15}, {1, 2}, {{12, 13, 14}, {13, 14, 15}});
        // Anchor 1: 1 + 0.5 + 0.5*0.5 + 0.5*0.5*1 = 2; anchor 2: 1 + 1 + 1*0 + 0 = 2 (a zero
        // ends the run); shift 1: anchor 1 1 + 0.25 + 0.25*0.8 + 0.25*0.8*0.5 = 1.55.
        p.sequenceProbs[0] = {{0.5f, 0.5f, 1.0f}, {1.0f, 0.0f, 1.0f}};
        p.sequenceProbs[1] = {{0.25f, 0.8f, 0.5f}, {0.0f, 1.0f, 1.0f}};
        const auto e0 = perAnchorExpectedAcceptance(p, 0);
        QCOMPARE(e0, (std::vector<double>{2.0, 2.0}));
        const auto e1 = perAnchorExpectedAcceptance(p, 1);
        QCOMPARE(e1.size(), std::size_t(2));
        QVERIFY(std::abs(e1[0] - 1.55) < 1e-7);  // float probabilities: 0.8f is not 0.8
        QCOMPARE(e1[1], 1.0);
        // Rows must match the anchors; only shifts 0 and 1 exist.
        p.sequenceProbs[0].pop_back();
        QVERIFY_THROWS_EXCEPTION(Error, perAnchorExpectedAcceptance(p, 0));
        QVERIFY_THROWS_EXCEPTION(Error, perAnchorExpectedAcceptance(p, 2));
    }

    void containedConventionsAreTheSimplerExplanation() {
        const std::vector<LayerAttention> declared = {LayerAttention{}, LayerAttention{}};  // bidirectional, no window
        using B = ProbeConvention::BlockAttention;
        using W = ProbeConvention::Window;
        ProbeConvention causal0;
        causal0.blockAttention = {B::Causal, B::Declared};
        ProbeConvention causalWindow;  // a causal window of 62 on both layers
        causalWindow.blockAttention = {B::Causal, B::Causal};
        causalWindow.window = {{W::Kind::Given, 62}, {W::Kind::Given, 62}};
        ProbeConvention bidirectionalWindow;
        bidirectionalWindow.window = {{W::Kind::Given, 31}, {W::Kind::Given, 31}};
        QVERIFY(conventionContains(causalWindow, causal0, declared));
        QVERIFY(!conventionContains(causal0, causalWindow, declared));
        // A bidirectional window keeps layer 0 bidirectional: it does not contain the causal layer.
        QVERIFY(!conventionContains(bidirectionalWindow, causal0, declared));
        QVERIFY(!conventionContains(causalWindow, bidirectionalWindow, declared));  // other window size
        QVERIFY(!conventionContains(causal0, causal0, declared));                 // same changes
        // Offsets, anchor feature and label shift must be carried over.
        ProbeConvention plus1;
        plus1.positionOffset = 1;
        ProbeConvention plus1Causal = causal0;
        plus1Causal.positionOffset = 1;
        QVERIFY(conventionContains(plus1Causal, plus1, declared));
        QVERIFY(conventionContains(plus1Causal, causal0, declared));
        ProbeConvention minus1 = causal0;
        minus1.positionOffset = -1;
        QVERIFY(!conventionContains(minus1, plus1, declared));
        ProbeConvention shift;
        shift.labelShift = 1;
        ProbeConvention tap;
        tap.tapOffset = -1;
        QVERIFY(!conventionContains(tap, shift, declared));
        QVERIFY(!conventionContains(shift, tap, declared));
    }

    void conventionToLayoutAndVisibility() {
        const std::vector<LayerAttention> declared = {LayerAttention{true, 24}, LayerAttention{}};
        ProbeConvention c;
        QVERIFY(c.isDeclared());
        QCOMPARE(probeLayout(declared, c), declared);
        c.blockAttention = {ProbeConvention::BlockAttention::Bidirectional, ProbeConvention::BlockAttention::Causal};
        auto layout = probeLayout(declared, c);
        QCOMPARE(layout[0], (LayerAttention{false, 24}));
        QCOMPARE(layout[1], (LayerAttention{true, std::nullopt}));
        QVERIFY(c.changesDrafterCall());
        // Causal layer 1: block row at position 10 sees keys <= 10 only.
        QCOMPARE(layerVisibility(layout[1], {10}, {0, 9, 10, 11}), (std::vector<std::uint8_t>{1, 1, 1, 0}));
        // Window overrides: none on layer 0, 4 keys on layer 1 (keeping its causal override).
        c.window = {{ProbeConvention::Window::Kind::None, 0}, {ProbeConvention::Window::Kind::Given, 4}};
        layout = probeLayout(declared, c);
        QCOMPARE(layout[0], (LayerAttention{false, std::nullopt}));
        QCOMPARE(layout[1], (LayerAttention{true, 4}));
        QCOMPARE(layerVisibility(layout[1], {10}, {6, 7, 10, 11}), (std::vector<std::uint8_t>{0, 1, 1, 0}));
        QCOMPARE(describeConvention(c, declared), std::string("layer 0 full bidirectional; layer 1 sliding 4 causal"));
        // Overrides for missing layers and empty windows are refused.
        ProbeConvention tooMany;
        tooMany.blockAttention.assign(3, ProbeConvention::BlockAttention::Causal);
        QVERIFY_THROWS_EXCEPTION(Error, probeLayout(declared, tooMany));
        ProbeConvention empty;
        empty.window = {{ProbeConvention::Window::Kind::Given, 0}};
        QVERIFY_THROWS_EXCEPTION(Error, probeLayout(declared, empty));
        // Scoring-only and call-changing overrides.
        ProbeConvention shift;
        shift.labelShift = 1;
        QVERIFY(!shift.isDeclared());
        QVERIFY(!shift.changesDrafterCall());
        QCOMPARE(describeConvention(shift, declared), std::string("labels 1 position(s) later"));
        ProbeConvention moved;
        moved.positionOffset = 1;
        moved.anchorFeatureInContext = true;
        QCOMPARE(describeConvention(moved, declared), std::string("block at a+1; anchor feature in context"));
    }

    void tapOffsetsMapToHiddenStates() {
        QCOMPARE(probeFeatureIndices({1, 2, 4}, 0, 6), (std::vector<std::int64_t>{2, 3, 5}));
        QCOMPARE(probeFeatureIndices({1, 2, 4}, -1, 6), (std::vector<std::int64_t>{1, 2, 4}));
        QCOMPARE(probeFeatureIndices({0, 5}, -1, 6), (std::vector<std::int64_t>{0, 5}));  // embeddings, last layer
        QVERIFY_THROWS_EXCEPTION(Error, probeFeatureIndices({1, 5}, 1, 6));             // hidden_states[7] of 0..6
        ProbeConvention c;
        c.tapOffset = -1;
        QCOMPARE(describeConvention(c, {}), std::string("taps hidden_states[id]"));
    }

    void alternativesOfEachFamily() {
        const auto s = swaSummary();
        // Block causality: all causal, all bidirectional, every layer flipped, then the type
        // group and single layer flips that give a new layout (here none: layer 0 flipped is
        // all bidirectional, layer 1 flipped all causal).
        const auto causal = conventionAlternatives("block-causal", s, std::nullopt, 6, 100);
        QCOMPARE(alternatives(causal, s),
                 (std::vector<std::string>{"layer 1 full causal", "layer 0 sliding 24 bidirectional",
                                           "layer 0 sliding 24 bidirectional; layer 1 full causal"}));
        QCOMPARE(causal[0].fix.find("`is_causal: true`") != std::string::npos, true);
        QCOMPARE(causal[1].fix.find("`is_causal: false`") != std::string::npos, true);
        // Windows: drop layer 0's; give layer 1 one of 100/8 (< block size: left out), 25, 50,
        // causal as a sliding layer resolves without is_causal.
        const auto windows = conventionAlternatives("window", s, std::nullopt, 6, 100);
        const auto names = alternatives(windows, s);
        QCOMPARE(names, (std::vector<std::string>{"layer 0 full causal", "layer 1 sliding 25 causal",
                                                  "layer 1 sliding 50 causal"}));
        QVERIFY(windows[1].fix.find("`sliding_window: 25`") != std::string::npos);
        QVERIFY(windows[1].fix.find("`use_sliding_window: true`") != std::string::npos);
        // is_causal false makes a sliding layer bidirectional: so does the probed window.
        DrafterConfig bidirectional;
        bidirectional.isCausal = false;
        QCOMPARE(alternatives(conventionAlternatives("window", s, bidirectional, 6, 100), s)[1],
                 std::string("layer 1 sliding 25 bidirectional"));
        // A base-layout drafter (no window, no causality stated) may have lost a causal window
        // (z-lab sliding layers) on some layers or a bidirectional one on every layer (ModelOpt
        // use_swa with causal false): both are probed; with is_causal stated, only that one.
        ModelSummary base = swaSummary();
        base.layerTypes = {"full_attention", "full_attention"};
        base.layout = {LayerAttention{}, LayerAttention{}};
        const auto lost = conventionAlternatives("window", base, std::nullopt, 6, 100);
        QCOMPARE(alternatives(lost, base),
                 (std::vector<std::string>{"layer 0 sliding 25 causal; layer 1 sliding 25 causal",
                                           "layer 0 sliding 50 causal; layer 1 sliding 50 causal",
                                           "layer 0 sliding 25 causal", "layer 0 sliding 50 causal",
                                           "layer 1 sliding 25 causal", "layer 1 sliding 50 causal",
                                           "layer 0 sliding 25 bidirectional; layer 1 sliding 25 bidirectional",
                                           "layer 0 sliding 50 bidirectional; layer 1 sliding 50 bidirectional"}));
        QVERIFY2(lost[6].fix.find("`dflash_config: {use_swa: true, swa_window_size: 25, causal: false}`") !=
                     std::string::npos, lost[6].fix.c_str());
        QCOMPARE(conventionAlternatives("window", base, bidirectional, 6, 100).size(), std::size_t(6));
        // Taps: both offsets fit a 6-layer target; the fix names the ids.
        const auto taps = conventionAlternatives("tap-offset", s, std::nullopt, 6, 100);
        QCOMPARE(taps.size(), std::size_t(2));
        QVERIFY(taps[0].fix.find("target_layer_ids should be [0, 1, 3]") != std::string::npos);
        QVERIFY(taps[1].fix.find("target_layer_ids should be [2, 3, 5]") != std::string::npos);
        // A speculators-format drafter's fix names its own key, whose ids are hidden_states indices.
        auto spec = s;
        spec.speculatorsFormat = true;
        const auto specTaps = conventionAlternatives("tap-offset", spec, std::nullopt, 6, 100);
        QVERIFY2(specTaps[0].fix.find("aux_hidden_state_layer_ids should be [1, 2, 4]") != std::string::npos,
                 specTaps[0].fix.c_str());
        // ... on a 5-layer target hidden_states[6] does not exist: only d = -1.
        QCOMPARE(conventionAlternatives("tap-offset", s, std::nullopt, 5, 100).size(), std::size_t(1));
        QCOMPARE(conventionAlternatives("position-offset", s, std::nullopt, 6, 100).size(), std::size_t(2));
        QCOMPARE(conventionAlternatives("context-leak", s, std::nullopt, 6, 100)[0].convention.anchorFeatureInContext, true);
        QCOMPARE(conventionAlternatives("label-shift", s, std::nullopt, 6, 100)[0].convention.labelShift, 1);
        QVERIFY_THROWS_EXCEPTION(Error, conventionAlternatives("acceptance", s, std::nullopt, 6, 100));
    }

    void findingNamesTheFix() {
        const auto s = swaSummary();
        const auto alt = conventionAlternatives("tap-offset", s, std::nullopt, 6, 100)[0];
        ConventionProbe p;
        p.family = "tap-offset";
        p.alternative = describeConvention(alt.convention, s.layout);
        p.declaredTau = 1.2;
        p.tau = 1.9;
        p.difference = {0.7, 0.5, 0.9, 120};
        p.expectedDeclaredTau = 1.1;
        p.expectedTau = 1.45;
        p.expectedDifference = {0.35, 0.25, 0.45, 120};
        const auto f = conventionFinding(p, alt, s.layout);
        QCOMPARE(f.id, std::string("convention-tap-offset"));
        QCOMPARE(f.severity, Severity::Error);
        QVERIFY2(f.message.find("target_layer_ids should be [0, 1, 3]") != std::string::npos, f.message.c_str());
        QVERIFY2(f.message.find("accepts 1.90 tokens per block") != std::string::npos, f.message.c_str());
        // The interval in the message and the evidence is the expected acceptance's (the decision).
        QVERIFY2(f.message.find("expected acceptance 1.450 against 1.100, 99% interval of the gain 0.250..0.450 over "
                                "120 anchors") != std::string::npos,
                 f.message.c_str());
        QCOMPARE(f.evidence.size(), std::size_t(7));
        QCOMPARE(f.evidence[0].first, std::string("declared_tau"));
        QCOMPARE(f.evidence[1].second, 1.9);
        QCOMPARE(f.evidence[2].second, 1.1);
        QCOMPARE(f.evidence[3].second, 1.45);
        QCOMPARE(f.evidence[4].first, std::string("difference_lower"));
        QCOMPARE(f.evidence[4].second, 0.25);
        QCOMPARE(f.evidence[5].second, 0.45);
        QCOMPARE(f.evidence[6].second, 120.0);
    }

    void probeFamiliesParse() {
        QCOMPARE(parseProbeFamilies("all"), diagnoseProbeFamilies());
        QCOMPARE(parseProbeFamilies(" window, tap-offset ,window"), (std::vector<std::string>{"window", "tap-offset"}));
        try {
            parseProbeFamilies("window,causal");
            QFAIL("no error");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("unknown probe family 'causal'") != std::string::npos, e.what());
            QVERIFY(std::string(e.what()).find("block-causal") != std::string::npos);
        }
        QVERIFY_THROWS_EXCEPTION(Error, parseProbeFamilies(" , "));
    }
};

QTEST_GUILESS_MAIN(TestConventionProbes)
#include "tst_convention_probes.moc"
