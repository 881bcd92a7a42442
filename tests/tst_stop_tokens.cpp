// The stop-token rule (draftscope/stop_tokens.h): which ids stop a run, ignoreEos, the cut
// after the first stop token, and how a target's stop ids are collected. Hand-computed cases;
// the loops' use of the rule is pinned by tst_golden_parity (current_eos, stopsAtEos).

#include "draftscope/errors.h"
#include "draftscope/stop_tokens.h"
#include "test_support.h"

#include <QtTest>

#include <string>
#include <vector>

using namespace draftscope;
using testsupport::errorOf;
using Ids = std::vector<std::int64_t>;

class TestStopTokens : public QObject {
    Q_OBJECT
private slots:
    void stopIdsStopTheRun() {
        const StopTokens s({2044, 7}, /*ignoreEos=*/false);
        QVERIFY(s.any());
        QVERIFY(s.isStop(2044));
        QVERIFY(s.isStop(7));
        QVERIFY(!s.isStop(5));
        QCOMPARE(s.ids(), (Ids{2044, 7}));
    }

    void ignoreEosStopsNothing() {
        const StopTokens s({2044, 7}, /*ignoreEos=*/true);
        QVERIFY(!s.any());
        QVERIFY(!s.isStop(2044));
        QVERIFY(s.ids().empty());
        Ids out{1, 2, 2044, 3};
        QVERIFY(!s.cutAfterFirstStop(out, 0));
        QCOMPARE(out, (Ids{1, 2, 2044, 3}));
        QVERIFY(!StopTokens().any());
    }

    void cutKeepsTheFirstStopAfterFrom() {
        const StopTokens s({2044, 7}, false);
        // Prompt [1, 7] (a stop id inside the prompt does not count), then generated tokens.
        Ids out{1, 7, 3, 2044, 5, 7};
        QCOMPARE(s.firstStop(out, 2), std::optional<std::size_t>(3));
        QCOMPARE(s.firstStop(out, 0), std::optional<std::size_t>(1));
        QCOMPARE(s.firstStop(out, 4), std::optional<std::size_t>(5));
        QCOMPARE(s.firstStop(out, 6), std::optional<std::size_t>());
        QVERIFY(s.cutAfterFirstStop(out, 2));
        QCOMPARE(out, (Ids{1, 7, 3, 2044}));
        Ids none{1, 7, 3, 4};
        QVERIFY(!s.cutAfterFirstStop(none, 2));
        QCOMPARE(none, (Ids{1, 7, 3, 4}));
        Ids last{1, 3, 7};
        QVERIFY(s.cutAfterFirstStop(last, 1));
        QCOMPARE(last, (Ids{1, 3, 7}));
    }

    void targetStopIdsInOrderWithoutRepeats() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string d = dir.path().toStdString();
        // No generation_config.json: config ids, then the tokenizer's eos if new.
        QCOMPARE(targetStopTokenIds(d, {2044}, 11), (Ids{2044, 11}));
        QCOMPARE(targetStopTokenIds(d, {2044}, 2044), (Ids{2044}));
        QCOMPARE(targetStopTokenIds(d, {}, std::nullopt), Ids{});
        // generation_config.json's list is merged after the config's ids, without repeats.
        testsupport::writeJson(d + "/generation_config.json", {{"eos_token_id", {2044, 9, 2044, 12}}});
        QCOMPARE(targetStopTokenIds(d, {2044}, 11), (Ids{2044, 9, 12, 11}));
        testsupport::writeJson(d + "/generation_config.json", {{"eos_token_id", 9}, {"do_sample", false}});
        QCOMPARE(targetStopTokenIds(d, {2044}, 9), (Ids{2044, 9}));
        testsupport::writeJson(d + "/generation_config.json", {{"do_sample", false}});
        QCOMPARE(targetStopTokenIds(d, {2044}, std::nullopt), (Ids{2044}));
    }

    void badGenerationConfigIsNamed() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        testsupport::writeBytes(d + "/generation_config.json", "{\"eos_token_id\": [1,");
        const QString msg = errorOf([&] { targetStopTokenIds(d, {2044}, std::nullopt); });
        QVERIFY2(msg.contains("generation_config.json") && msg.contains("not valid JSON"), qPrintable(msg));
    }
};

QTEST_GUILESS_MAIN(TestStopTokens)
#include "tst_stop_tokens.moc"
