// diagnose: the three fixture drafters are told apart whatever their directory names, and
// the configuration checks name the field at fault (DFLASH.md section 7, docs/DIAGNOSE.md).

#include "draftscope/diagnosis.h"
#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/results_json.h"
#include "test_support.h"

#include <QProcess>
#include <QtTest>

using namespace draftscope;
using namespace testsupport;

namespace {

/// Diagnosis settings with `maxNew` tokens per prompt, the rest default.
DiagnoseSettings withMaxNew(std::int64_t maxNew) {
    DiagnoseSettings s;
    s.maxNewTokens = maxNew;
    return s;
}

const Finding* find(const DrafterDiagnosis& d, const std::string& id) {
    for (const auto& f : d.findings)
        if (f.id == id) return &f;
    return nullptr;
}

bool hasSevere(const DrafterDiagnosis& d) {
    for (const auto& f : d.findings)
        if (f.severity != Severity::Info) return true;
    return false;
}

const DrafterDiagnosis& byPath(const DiagnosisReport& r, const std::string& path) {
    for (const auto& d : r.drafters)
        if (d.path == path) return d;
    throw std::runtime_error("no diagnosis for " + path);
}

/// The demo target on one CPU thread: the probes make thousands of small drafter calls,
/// which several threads only slow down on a shared machine.
void loadDemoTarget(Engine& e) {
    LoadOptions o;
    o.threads = 1;
    e.loadTarget(demoTarget(), o);
}

/// The convention findings (ids convention-*, context-leak, label-shift) of `d`.
std::vector<std::string> conventionFindings(const DrafterDiagnosis& d) {
    std::vector<std::string> ids;
    for (const auto& f : d.findings)
        if (f.id.rfind("convention-", 0) == 0 || f.id == "context-leak" || f.id == "label-shift") ids.push_back(f.id);
    return ids;
}

/// Settings of the convention tests: the default prompts and length, the given families.
DiagnoseSettings withProbes(std::vector<std::string> families) {
    DiagnoseSettings s;
    s.probes = std::move(families);
    return s;
}

/// Copies drafter directory `src` to `dir` with config.json changed by `edit`.
template <class F>
std::string editedCopy(const std::string& src, const std::string& dir, F&& edit) {
    const auto out = copyModel(src, dir);
    auto cfg = readJson(out + "/config.json");
    edit(cfg);
    writeJson(out + "/config.json", cfg);
    return out;
}

std::vector<DiagnosePrompt> onePrompt() {
    DiagnosePrompt p;
    p.id = "fibonacci";
    p.spec.text = "def fibonacci(n):\n";
    return {p};
}

/// Diagnoses a copy of drafter directory `src` whose config.json `edit` changed, on
/// onePrompt() with `maxNew` new tokens.
template <class F>
DiagnosisReport diagnoseEditedCopy(const std::string& src, F&& edit, int maxNew) {
    QTemporaryDir tmp;
    const auto dir = copyModel(src, tmp.path().toStdString() + "/d");
    auto cfg = readJson(dir + "/config.json");
    edit(cfg);
    writeJson(dir + "/config.json", cfg);
    Engine e;
    e.loadTarget(demoTarget());
    return diagnoseDrafters(e, {dir}, onePrompt(), withMaxNew(maxNew));
}

}  // namespace

class TestDiagnose : public QObject {
    Q_OBJECT
private slots:
    // The acceptance test: neutral names, shuffled order, default prompts.
    void tellsTheFixtureDraftersApart() {
        QTemporaryDir tmp;
        const std::string base = tmp.path().toStdString();
        const auto a = copyModel(drafterDir("drafter-label-shift"), base + "/drafter-a");
        const auto b = copyModel(drafterDir("drafter-good"), base + "/drafter-b");
        const auto c = copyModel(drafterDir("drafter-anchor-leak"), base + "/drafter-c");
        Engine e;
        loadDemoTarget(e);
        // The families of these signatures (the other convention probes: the tests below).
        const auto r = diagnoseDrafters(e, {a, b, c}, defaultDiagnosePrompts(),
                                        withProbes({"static", "acceptance", "context-leak", "label-shift"}));
        QCOMPARE(r.drafters.size(), std::size_t(3));
        for (const auto& d : r.drafters) {
            qInfo("#%d %s tau %.3f probe %.3f / %.3f, first slot same %.3f next %.3f", d.rank, d.path.c_str(), d.tau,
                  d.probeTau, d.probeTauAnchorFeature, d.samePositionMatch[0], d.nextPositionMatch[0]);
            for (const auto& f : d.findings) qInfo("   %s %s", severityName(f.severity), f.id.c_str());
        }
        // Ranked: the good drafter first, with no warning or error.
        QCOMPARE(r.drafters[0].path, b);
        QCOMPARE(r.drafters[0].rank, 1);
        QVERIFY(!hasSevere(r.drafters[0]));
        QVERIFY(r.drafters[0].tau > 1.7);
        // Label shift: named, as an error, and not mistaken for a context leak.
        const auto& shift = byPath(r, a);
        QVERIFY(find(shift, "label-shift"));
        QCOMPARE(find(shift, "label-shift")->severity, Severity::Error);
        QVERIFY(!find(shift, "context-leak"));
        QVERIFY(shift.nextPositionMatch[0] > 1.5 * shift.samePositionMatch[0]);
        // Context leak: named, and not mistaken for a label shift.
        const auto& leak = byPath(r, c);
        QVERIFY(find(leak, "context-leak"));
        QCOMPARE(find(leak, "context-leak")->severity, Severity::Error);
        QVERIFY(!find(leak, "label-shift"));
        QVERIFY(leak.probeTauAnchorFeature > leak.probeTau + 0.3);
        // The good drafter does not improve with the anchor's feature (it never saw it).
        QVERIFY(r.drafters[0].probeTauAnchorFeature < r.drafters[0].probeTau + 0.1);
        // JSON: stable ids, severities, evidence numbers.
        const auto j = toJson(r);
        QCOMPARE(j["drafters"][0]["rank"].get<int>(), 1);
        bool sawShift = false;
        for (const auto& d : j["drafters"])
            for (const auto& f : d["findings"])
                if (f["id"] == "label-shift") {
                    sawShift = true;
                    QCOMPARE(f["severity"].get<std::string>(), std::string("error"));
                    QVERIFY(f["evidence"]["first_slot_next_position_match"].get<double>() > 0.1);
                    QVERIFY(f["evidence"]["difference_lower"].get<double>() > 0.0);
                    QVERIFY(f["evidence"]["alternative_tau"].get<double>() - f["evidence"]["declared_tau"].get<double>() >
                            kConventionMargin);
                }
        QVERIFY(sawShift);
        // The probe table and the cost of each family that ran.
        QCOMPARE(j["settings"]["probes"], nlohmann::json({"static", "acceptance", "context-leak", "label-shift"}));
        const auto& good = j["drafters"][0];
        QCOMPARE(good["convention_probes"].size(), std::size_t(2));
        QCOMPARE(good["convention_probes"][0]["family"].get<std::string>(), std::string("context-leak"));
        QCOMPARE(good["convention_probes"][0]["tau"].get<double>(), r.drafters[0].probeTauAnchorFeature);
        QCOMPARE(good["convention_probes"][1]["alternative"].get<std::string>(), std::string("labels 1 position(s) later"));
        QCOMPARE(good["convention_probes"][1]["finding"].get<bool>(), false);
        QCOMPARE(good["costs"].size(), std::size_t(4));
        QCOMPARE(good["costs"][2]["family"].get<std::string>(), std::string("context-leak"));
        QCOMPARE(good["costs"][2]["probe_steps"].get<std::int64_t>(),
                 good["convention_probes"][0]["anchors"].get<std::int64_t>());  // one drafter call per anchor
        QCOMPARE(good["costs"][3]["probe_steps"].get<std::int64_t>(), std::int64_t(0));  // label shift: scoring only
    }

    // Convention probes (issue 15): the weights carry the convention the drafter was trained
    // with; a config that declares another gets the finding that names the fix.
    void conventionProbesNameTheTrainedConvention() {
        QTemporaryDir tmp;
        const std::string base = tmp.path().toStdString();
        // drafter-swa was trained with layer 0 sliding 24 causal (DFLASH.md section 9).
        const auto lostWindow = editedCopy(drafterDir("drafter-swa"), base + "/a", [](auto& cfg) {
            cfg.erase("sliding_window");
            cfg.erase("use_sliding_window");
            cfg["layer_types"] = {"full_attention", "full_attention"};  // a sliding layer needs a window to load
        });
        const auto bidirectional = editedCopy(drafterDir("drafter-swa"), base + "/b", [](auto& cfg) { cfg["is_causal"] = false; });
        // drafter-good was trained on target_layer_ids [1, 2, 4].
        const auto deeperTaps = editedCopy(demoDrafter(), base + "/c", [](auto& cfg) {
            cfg["dflash_config"]["target_layer_ids"] = {2, 3, 5};
        });
        Engine e;
        loadDemoTarget(e);
        const auto r = diagnoseDrafters(e, {lostWindow, bidirectional, deeperTaps}, defaultDiagnosePrompts(),
                                        withProbes({"block-causal", "window", "tap-offset"}));
        for (const auto& d : r.drafters) {
            qInfo("%s: probe tau %.3f", d.path.c_str(), d.probeTau);
            for (const auto& c : d.conventionProbes)
                qInfo("   %-16s %.3f  [%+.3f, %+.3f] %s%s", c.family.c_str(), c.tau, c.difference.lower,
                      c.difference.upper, c.alternative.c_str(), c.finding ? "  FINDING" : "");
        }
        const auto& w = byPath(r, lostWindow);
        QCOMPARE(conventionFindings(w), std::vector<std::string>{"convention-window"});
        const auto* fw = find(w, "convention-window");
        QCOMPARE(fw->severity, Severity::Error);
        QVERIFY2(fw->message.find("declare layer 0 `sliding_attention`") != std::string::npos, fw->message.c_str());
        QVERIFY2(fw->message.find("`use_sliding_window: true`") != std::string::npos, fw->message.c_str());
        QCOMPARE(fw->evidence[0].first, std::string("declared_tau"));
        QVERIFY(fw->evidence[1].second > fw->evidence[0].second + kConventionMargin);
        QCOMPARE(fw->evidence[2].first, std::string("declared_expected_acceptance"));
        QVERIFY(fw->evidence[3].second > fw->evidence[2].second + kConventionMargin);
        QCOMPARE(fw->evidence[4].first, std::string("difference_lower"));
        QVERIFY(fw->evidence[4].second > 0.0);  // the interval's lower bound (expected acceptance)
        const auto& b = byPath(r, bidirectional);
        QCOMPARE(conventionFindings(b), std::vector<std::string>{"convention-block-causal"});
        const auto* fb = find(b, "convention-block-causal");
        QVERIFY2(fb->message.find("a causal block in layer 0") != std::string::npos, fb->message.c_str());
        QVERIFY2(fb->message.find("remove `is_causal`") != std::string::npos, fb->message.c_str());
        const auto& t = byPath(r, deeperTaps);
        QCOMPARE(conventionFindings(t), std::vector<std::string>{"convention-tap-offset"});
        const auto* ft = find(t, "convention-tap-offset");
        QVERIFY2(ft->message.find("target_layer_ids should be [1, 2, 4]") != std::string::npos, ft->message.c_str());
        // No chain loop ran (acceptance not selected): the probes followed the target's greedy text.
        QVERIFY(t.promptTaus.empty());
        QVERIFY(t.probeTau > 1.0);
    }

    // Drafters trained by tools/train_convention_drafters.py (2 layers, 4000 steps; tests/data/
    // FIXTURES.md), whose config.json declares the standard convention: one trained with its
    // block one position late (`ctx_len + 1`), one with a bidirectional 32-key window on every
    // layer that its config lost, and a clean one. Real weights, not edited configs: each bug
    // is named with its fix, the clean drafter gets nothing.
    void trainedDraftersAreNamed() {
        const auto late = unpackedDataPath("models/trained/position-plus1");
        const auto window = unpackedDataPath("models/trained/window-lost");
        const auto clean = unpackedDataPath("models/trained/clean-s1");
        Engine e;
        loadDemoTarget(e);
        const auto r = diagnoseDrafters(e, {late, window, clean}, defaultDiagnosePrompts(),
                                        withProbes({"position-offset", "window"}));
        for (const auto& d : r.drafters) {
            qInfo("%s: probe tau %.3f", d.path.c_str(), d.probeTau);
            for (const auto& c : d.conventionProbes)
                qInfo("   %-16s %.3f  %+.3f [%+.3f, %+.3f] %s%s", c.family.c_str(), c.tau, c.difference.mean,
                      c.difference.lower, c.difference.upper, c.alternative.c_str(), c.finding ? "  FINDING" : "");
        }
        const auto& l = byPath(r, late);
        QCOMPARE(conventionFindings(l), std::vector<std::string>{"convention-position-offset"});
        const auto* fl = find(l, "convention-position-offset");
        QVERIFY2(fl->message.find("a+1..a+B (`ctx_len + 1`)") != std::string::npos, fl->message.c_str());
        const auto& w = byPath(r, window);
        QCOMPARE(conventionFindings(w), std::vector<std::string>{"convention-window"});
        const auto* fw = find(w, "convention-window");
        QVERIFY2(fw->message.find("a bidirectional sliding window of about") != std::string::npos, fw->message.c_str());
        QVERIFY2(fw->message.find("causal: false}") != std::string::npos, fw->message.c_str());
        const auto& c = byPath(r, clean);
        QCOMPARE(conventionFindings(c), std::vector<std::string>{});
        QVERIFY(c.probeTau > 1.5);  // a working drafter, not one too weak to show anything
    }

    // The correct fixture drafters get no convention finding under any family.
    void correctDraftersGetNoConventionFinding() {
        Engine e;
        loadDemoTarget(e);
        const auto r = diagnoseDrafters(e, {demoDrafter(), drafterDir("drafter-swa"), drafterDir("drafter-modelopt-swa")},
                                        defaultDiagnosePrompts(),
                                        withProbes({"context-leak", "label-shift", "block-causal", "position-offset",
                                                    "tap-offset", "window"}));
        for (const auto& d : r.drafters) {
            qInfo("%s: probe tau %.3f", d.path.c_str(), d.probeTau);
            for (const auto& c : d.conventionProbes)
                qInfo("   %-16s %.3f  [%+.3f, %+.3f] %s", c.family.c_str(), c.tau, c.difference.lower,
                      c.difference.upper, c.alternative.c_str());
            QCOMPARE(conventionFindings(d), std::vector<std::string>{});
            QVERIFY(!hasSevere(d));
            QVERIFY(d.conventionProbes.size() >= 8);  // every family probed something
            for (const auto& c : d.conventionProbes) QVERIFY(!c.finding);
        }
    }

    void cliProbesOptionAndCost() {
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"diagnose", "--target", QString::fromStdString(demoTarget()), "--drafter",
                                 QString::fromStdString(drafterDir("drafter-anchor-leak")), "--prompt",
                                 "def fibonacci(n):\n", "--max-new", "32", "--probes", "static,context-leak",
                                 "--threads", "1"});
        QVERIFY(p.waitForFinished(300000));
        const auto out = QString::fromUtf8(p.readAllStandardOutput());
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(out.contains("#1 probe tau"), qPrintable(out));  // no chain loop: no tau
        QVERIFY2(out.contains("convention probes"), qPrintable(out));
        QVERIFY2(out.contains("anchor feature in context"), qPrintable(out));
        QVERIFY2(out.contains("cost: static 0 steps"), qPrintable(out));
        QVERIFY2(out.contains("; context-leak 17 steps"), qPrintable(out));  // anchors: 32 new tokens - 16 + 1
        // Progress in estimated drafter calls: the prompt's probe (17 anchors), then the one
        // convention family's alternative (17 more).
        const auto progress = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(progress.contains("diagnosing: 0/34 drafter calls (estimated)") &&
                     progress.contains("diagnosing: 17/34 drafter calls (estimated), about") &&
                     progress.contains("diagnosing: 34/34 drafter calls (estimated)"),
                 qPrintable(progress));
        // An unknown family is refused by name before any model loads.
        QProcess bad;
        bad.start(DRAFTSCOPE_CLI, {"diagnose", "--target", QString::fromStdString(demoTarget()), "--drafter",
                                   QString::fromStdString(demoDrafter()), "--probes", "window,causal"});
        QVERIFY(bad.waitForFinished(60000));
        QVERIFY(bad.exitCode() != 0 && bad.exitCode() != 3);
        const auto err = QString::fromUtf8(bad.readAllStandardError());
        QVERIFY2(err.contains("unknown probe family 'causal'"), qPrintable(err));
        QVERIFY2(err.contains("block-causal"), qPrintable(err));
    }

    // Configuration checks: each names the field and the numbers.
    void tappedLayerBeyondTheTarget() {
        QTemporaryDir tmp;
        const auto dir = copyModel(demoDrafter(), tmp.path().toStdString() + "/d");
        auto cfg = readJson(dir + "/config.json");
        cfg["dflash_config"]["target_layer_ids"] = {1, 2, 6};  // the demo target has layers 0..5
        writeJson(dir + "/config.json", cfg);
        Engine e;
        e.loadTarget(demoTarget());
        const auto r = diagnoseDrafters(e, {dir}, onePrompt(), withMaxNew(16));
        const auto& d = r.drafters[0];
        QVERIFY(!d.loaded);
        const auto* f = find(d, "tapped-layer-out-of-range");
        QVERIFY(f);
        QCOMPARE(f->severity, Severity::Error);
        QVERIFY(f->message.find("[1, 2, 6]") != std::string::npos);
        QCOMPARE(f->evidence[0].second, 6.0);
        QCOMPARE(f->evidence[1].second, 6.0);
        QVERIFY(find(d, "load-failed"));
    }

    void fcWidthAgainstTappedLayers() {
        QTemporaryDir tmp;
        const auto dir = copyModel(demoDrafter(), tmp.path().toStdString() + "/d");
        auto cfg = readJson(dir + "/config.json");
        cfg["dflash_config"]["target_layer_ids"] = {1, 4};  // fc.weight was trained on 3 layers
        writeJson(dir + "/config.json", cfg);
        Engine e;
        e.loadTarget(demoTarget());
        const auto r = diagnoseDrafters(e, {dir}, onePrompt(), withMaxNew(16));
        const auto* f = find(r.drafters[0], "fc-width");
        QVERIFY(f);
        QCOMPARE(f->severity, Severity::Error);
        QVERIFY(f->message.find("trained with 3 tapped layers") != std::string::npos);
        QCOMPARE(f->evidence[0].second, 768.0);  // 3 x 256
        QCOMPARE(f->evidence[1].second, 2.0);
    }

    void maskTokenIsEos() {
        QTemporaryDir tmp;
        const auto dir = copyModel(demoDrafter(), tmp.path().toStdString() + "/d");
        auto cfg = readJson(dir + "/config.json");
        cfg["dflash_config"]["mask_token_id"] = cfg["eos_token_id"];
        writeJson(dir + "/config.json", cfg);
        Engine e;
        e.loadTarget(demoTarget());
        const auto r = diagnoseDrafters(e, {dir}, onePrompt(), withMaxNew(16));
        const auto* f = find(r.drafters[0], "mask-token-is-special");
        QVERIFY(f);
        QCOMPARE(f->severity, Severity::Warning);
        QVERIFY(f->message.find("eos") != std::string::npos);
        QVERIFY(r.drafters[0].loaded);
    }

    void slidingLayersWithoutUseSlidingWindow() {
        // layer_types sliding + sliding_window, but use_sliding_window false: HF drops the
        // window; draftscope refuses the config (DFLASH.md section 9) and says why.
        const auto r = diagnoseEditedCopy(drafterDir("drafter-swa"), [](auto& cfg) { cfg.erase("use_sliding_window"); }, 16);
        const auto& d = r.drafters[0];
        QVERIFY(!d.loaded);
        const auto* f = find(d, "sliding-window-dropped");
        QVERIFY(f);
        QCOMPARE(f->severity, Severity::Error);
        QVERIFY2(f->message.find("use_sliding_window is missing") != std::string::npos, f->message.c_str());
        QCOMPARE(f->evidence[0].second, 24.0);
        QCOMPARE(f->evidence[1].second, 1.0);
        const auto* load = find(d, "load-failed");
        QVERIFY(load && load->message.find("no window is given") != std::string::npos);
    }

    void causalKeysDisagreeAndWindowShorterThanContext() {
        // is_causal true against dflash_config.causal false.
        const auto r = diagnoseEditedCopy(drafterDir("drafter-modelopt-swa"), [](auto& cfg) { cfg["is_causal"] = true; }, 32);
        const auto& d = r.drafters[0];
        QVERIFY(d.loaded);
        const auto* f = find(d, "causal-keys-disagree");
        QVERIFY(f);
        QCOMPARE(f->severity, Severity::Warning);
        QVERIFY2(f->message.find("2 x sliding 24 causal") != std::string::npos, f->message.c_str());
        // "def fibonacci(n):\n" + 32 new tokens exceeds the window of 24 ...
        const auto* w = find(d, "window-shorter-than-context");
        QVERIFY(w);
        QCOMPARE(w->severity, Severity::Info);
        QCOMPARE(w->evidence[0].second, 24.0);
        QVERIFY(w->evidence[1].second > 24.0);
        QVERIFY(w->message.find("layer(s) 0, 1") != std::string::npos);
        // ... and the plain fixture layout (no disagreement) within a short run raises neither.
        Engine e2;
        e2.loadTarget(demoTarget());
        const auto r2 = diagnoseDrafters(e2, {drafterDir("drafter-modelopt-swa")}, onePrompt(), withMaxNew(4));
        QVERIFY(!find(r2.drafters[0], "causal-keys-disagree"));
        QVERIFY(!find(r2.drafters[0], "window-shorter-than-context"));
    }

    void maskTokenOutsideTheVocabulary() {
        QTemporaryDir tmp;
        const auto dir = copyModel(demoDrafter(), tmp.path().toStdString() + "/d");
        auto cfg = readJson(dir + "/config.json");
        cfg["dflash_config"]["mask_token_id"] = 5000;
        writeJson(dir + "/config.json", cfg);
        Engine e;
        e.loadTarget(demoTarget());
        const auto r = diagnoseDrafters(e, {dir}, onePrompt(), withMaxNew(16));
        const auto* f = find(r.drafters[0], "mask-token-out-of-vocab");
        QVERIFY(f);
        QCOMPARE(f->evidence[0].second, 5000.0);
        QCOMPARE(f->evidence[1].second, 2048.0);
    }

    // The CLI: exit code with --fail-on, JSON with findings.
    void cliWritesJsonAndFailsOnErrors() {
        QTemporaryDir tmp;
        const QString json = tmp.path() + "/d.json";
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"diagnose", "--target", QString::fromStdString(demoTarget()), "--drafter",
                                 QString::fromStdString(drafterDir("drafter-anchor-leak")), "--prompt",
                                 "def fibonacci(n):\n", "--max-new", "48", "--json", json, "--fail-on", "error"});
        QVERIFY(p.waitForFinished(300000));
        const auto out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.contains("#1 tau"), qPrintable(out));
        const auto j = readJson(json.toStdString());
        QCOMPARE(j["drafters"].size(), std::size_t(1));
        QVERIFY(j["drafters"][0]["findings"].is_array());
        bool error = false;
        for (const auto& f : j["drafters"][0]["findings"]) error = error || f["severity"] == "error";
        QCOMPARE(p.exitCode(), error ? 3 : 0);
    }
};

QTEST_GUILESS_MAIN(TestDiagnose)
#include "tst_diagnose.moc"
