// Files in and out under draftscope's policies. Output files (draftscope/file_io.h,
// docs/RELIABILITY.md "Output files"): written atomically through a temporary file in the
// same directory, symlinks written through, directories, devices and FIFOs refused, no
// temporary file left after an error or an interrupt. Messages quoting damaged files
// (nlohmann::json's "last read: '...'"): escaped, always valid UTF-8.

#include "draftscope/engine.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/prompt_set.h"
#include "draftscope/safetensors.h"
#include "test_support.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QStringDecoder>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <csignal>
#include <unistd.h>

#include <filesystem>
#include <limits>

using namespace draftscope;
using namespace testsupport;
namespace fs = std::filesystem;

namespace {

/// Whether `bytes` is valid UTF-8 (Qt's strict decoder).
bool isValidUtf8(const QByteArray& bytes) {
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    (void)decoder.decode(bytes);
    return !decoder.hasError();
}

/// The draftscope::Error message of `f()` as raw bytes (errorOf would decode them).
template <class F>
QByteArray rawErrorOf(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return QByteArray(e.what());
    }
    return {};
}

/// The names in `dir`, sorted.
QStringList entries(const QString& dir) {
    QStringList names;
    for (const auto& e : fs::directory_iterator(dir.toStdString())) names << QString::fromStdString(e.path().filename().string());
    names.sort();
    return names;
}

}  // namespace

class TestIoPolicy : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    int dirCount_ = 0;

    /// A fresh empty directory for one test.
    QString freshDir() {
        const QString d = tmp_.filePath("d" + QString::number(dirCount_++));
        fs::create_directories(d.toStdString());
        return d;
    }

private slots:
    // ---- output files ----

    void writesReplaceAtomicallyAndKeepTheMode() {
        const QString d = freshDir();
        const std::string out = (d + "/out.json").toStdString();
        writeFileAtomically(out, "first\n");
        QCOMPARE(readFileToString(out), std::string("first\n"));
        QVERIFY(::chmod(out.c_str(), 0640) == 0);
        writeFileAtomically(out, "second\n");
        QCOMPARE(readFileToString(out), std::string("second\n"));
        struct stat st {};
        QVERIFY(::stat(out.c_str(), &st) == 0);
        QCOMPARE(st.st_mode & 07777, mode_t(0640));
        QCOMPARE(entries(d), QStringList{"out.json"});  // no temporary file left
        // A new file gets 0666 less the umask, as any program's.
        const mode_t mask = ::umask(022);
        writeFileAtomically((d + "/new.json").toStdString(), "x");
        ::umask(mask);
        QVERIFY(::stat((d + "/new.json").toStdString().c_str(), &st) == 0);
        QCOMPARE(st.st_mode & 07777, mode_t(0644));
    }

    void symlinkToAFileIsWrittenThrough() {
        const QString d = freshDir();
        fs::create_directories((d + "/real").toStdString());
        const std::string target = (d + "/real/data.json").toStdString();
        writeBytes(target, "old");
        const std::string link = (d + "/link.json").toStdString();
        fs::create_symlink("real/data.json", link);  // relative, resolved against the link's directory
        const std::string chain = (d + "/chain.json").toStdString();
        fs::create_symlink(link, chain);  // a link to the link
        writeFileAtomically(chain, "new");
        QVERIFY(fs::is_symlink(link) && fs::is_symlink(chain));
        QCOMPARE(fs::read_symlink(link).string(), std::string("real/data.json"));
        QCOMPARE(readFileToString(target), std::string("new"));
        QCOMPARE(resolveOutputPath(chain), target);
        QCOMPARE(entries(d + "/real"), QStringList{"data.json"});
        QCOMPARE(entries(d), (QStringList{"chain.json", "link.json", "real"}));
    }

    void danglingSymlinkCreatesItsTarget() {
        const QString d = freshDir();
        const std::string link = (d + "/link.json").toStdString();
        fs::create_symlink("made.json", link);
        writeFileAtomically(link, "made");
        QVERIFY(fs::is_symlink(link));
        QCOMPARE(readFileToString((d + "/made.json").toStdString()), std::string("made"));
        // A dangling link into a missing directory is refused by name.
        const std::string bad = (d + "/bad.json").toStdString();
        fs::create_symlink("nowhere/x.json", bad);
        QCOMPARE(errorOf([&] { writeFileAtomically(bad, "x"); }),
                 QString::fromStdString("cannot write '" + bad + "': directory '" + d.toStdString() +
                                        "/nowhere' does not exist"));
        // A symlink loop is refused, not followed forever.
        const std::string a = (d + "/a").toStdString(), b = (d + "/b").toStdString();
        fs::create_symlink("b", a);
        fs::create_symlink("a", b);
        QCOMPARE(errorOf([&] { writeFileAtomically(a, "x"); }),
                 QString::fromStdString("cannot write '" + a + "': too many levels of symbolic links"));
    }

    void directoryAtThePathIsRefused() {
        const QString d = freshDir();
        const std::string sub = (d + "/results.json").toStdString();
        fs::create_directories(sub);
        QCOMPARE(errorOf([&] { writeFileAtomically(sub, "x"); }),
                 QString::fromStdString("refusing to write '" + sub + "': it is a directory, not a regular file; give a file name"));
        QVERIFY(fs::is_directory(sub));
        // Through a symlink: the message names the link and its target.
        const std::string link = (d + "/to-dir.json").toStdString();
        fs::create_symlink(sub, link);
        QCOMPARE(errorOf([&] { writeFileAtomically(link, "x"); }),
                 QString::fromStdString("refusing to write '" + link + "' (the target of the symlink, '" + sub +
                                        "'): it is a directory, not a regular file; give a file name"));
        QCOMPARE(entries(d), (QStringList{"results.json", "to-dir.json"}));
    }

    void devicesAndFifosAreRefused() {
        QCOMPARE(errorOf([] { writeFileAtomically("/dev/null", "x"); }),
                 QString("refusing to write '/dev/null': it is a character device, not a regular file; give a file name"));
        struct stat st {};
        QVERIFY(::stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));  // still the device
        const QString d = freshDir();
        const std::string link = (d + "/null.json").toStdString();
        fs::create_symlink("/dev/null", link);
        QVERIFY(errorOf([&] { writeFileAtomically(link, "x"); }).contains("it is a character device"));
        const std::string fifo = (d + "/pipe").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QCOMPARE(errorOf([&] { checkOutputPath(fifo); }),
                 QString::fromStdString("refusing to write '" + fifo + "': it is a FIFO, not a regular file; give a file name"));
        QCOMPARE(entries(d), (QStringList{"null.json", "pipe"}));
    }

    void unwritableDirectoryIsNamed() {
        // Root ignores permission bits: there, sysfs (which refuses new files to everyone)
        // stands in for a read-only directory.
        QString dir = freshDir();
        QVERIFY(::chmod(dir.toStdString().c_str(), 0555) == 0);
        if (::geteuid() == 0) dir = "/sys";
        const std::string out = (dir + "/out.json").toStdString();
        QCOMPARE(errorOf([&] { writeFileAtomically(out, "x"); }),
                 QString::fromStdString("cannot write '" + out + "': cannot create a file in '" + dir.toStdString() +
                                        "': Permission denied"));
        QCOMPARE(errorOf([&] { checkOutputPath(out); }), errorOf([&] { writeFileAtomically(out, "x"); }));
        QVERIFY(!fs::exists(out));
    }

    void failedOrInterruptedWritesLeaveNothing() {
        const QString d = freshDir();
        const std::string out = (d + "/r.json").toStdString();
        writeBytes(out, "kept");
        {
            AtomicOutputFile f(out);
            f.write("partial");
            QVERIFY(fs::exists(f.tempPath()));
            QCOMPARE(fs::path(f.tempPath()).parent_path().string(), d.toStdString());  // same directory: rename is atomic
            // destroyed without commit(): an exception unwinding through a writer
        }
        QCOMPARE(readFileToString(out), std::string("kept"));
        QCOMPARE(entries(d), QStringList{"r.json"});
        // What a SIGINT/SIGTERM handler calls before the process ends.
        AtomicOutputFile a(out), b((d + "/other.csv").toStdString());
        a.write("partial");
        QCOMPARE(entries(d).size(), 3);
        removePendingOutputFiles();
        QCOMPARE(entries(d), QStringList{"r.json"});
        QCOMPARE(readFileToString(out), std::string("kept"));
    }

    /// A running CLI stopped by SIGTERM, or by two SIGINTs, at spread-out moments (while it
    /// computes or writes its 9 MB output, or just after it finished) leaves the destination either as it was
    /// or complete, and no temporary file: the property of docs/RELIABILITY.md "Output
    /// files" on a real process, not only on removePendingOutputFiles().
    void signalledCliLeavesNoPartialFile() {
        const QString d = freshDir();
        const QString out = d + "/h.safetensors";
        QStringList ids;
        for (int i = 0; i < 600; ++i) ids << QString::number(3 + (i * 7) % 2000);
        const QStringList args = {"forward", "--model", QString::fromStdString(demoTarget()), "--prompt-ids",
                                  ids.join(','), "--out", out, "--threads", "1"};
        qint64 runMs = std::numeric_limits<qint64>::max();  // the shorter of two runs
        for (int warm = 0; warm < 2; ++warm) {
            QElapsedTimer clock;
            clock.start();
            QProcess ref;
            ref.start(DRAFTSCOPE_CLI, args);
            QVERIFY(ref.waitForFinished(120000));
            QCOMPARE(ref.exitCode(), 0);
            runMs = std::min(runMs, clock.elapsed());
        }
        const std::string complete = readFileToString(out.toStdString());
        QVERIFY(complete.size() > 8'000'000);
        const int runs = 8;
        int stopped = 0;
        for (int i = 0; i < runs; ++i) {
            writeBytes(out.toStdString(), "kept");
            QProcess p;
            p.start(DRAFTSCOPE_CLI, args);
            QVERIFY(p.waitForStarted(10000));
            const auto pid = static_cast<pid_t>(p.processId());  // kept: 0 after QProcess reaps it
            QVERIFY(pid > 0);
            // From 40% of a run's length to 10% past it: mostly computing and writing. No event
            // loop meanwhile (usleep, not qWait), so the child is not reaped and `pid` stays
            // ours until waitForFinished() below.
            ::usleep(static_cast<useconds_t>(1000 * runMs * (0.4 + 0.7 * i / (runs - 1))));
            if (i % 2 == 1) {  // two SIGINTs: the CLI's first one only asks to stop after the step
                ::kill(pid, SIGINT);
                ::usleep(5000);
                ::kill(pid, SIGINT);
            } else {
                ::kill(pid, SIGTERM);
            }
            QVERIFY(p.waitForFinished(120000));
            // Stopped by the CLI's handler (143, 130), or by the signal's default action
            // before main() installed the handlers (CrashExit); else it finished first.
            if (p.exitStatus() == QProcess::CrashExit || p.exitCode() == 143 || p.exitCode() == 130) ++stopped;
            else QCOMPARE(p.exitCode(), 0);
            QCOMPARE(entries(d), QStringList{"h.safetensors"});  // no temporary file left
            const std::string now = readFileToString(out.toStdString());
            QVERIFY2(now == "kept" || now == complete, qPrintable(QString("run %1: %2 bytes").arg(i).arg(now.size())));
        }
        qInfo("%d of %d runs stopped by a signal (run length %lld ms)", stopped, runs, static_cast<long long>(runMs));
        QVERIFY(stopped >= 1);  // the signals did land in running processes
    }

    void cliJsonThroughASymlink() {
        const QString d = freshDir();
        writeBytes((d + "/real.json").toStdString(), "old");
        fs::create_symlink("real.json", (d + "/latest.json").toStdString());
        QProcess p;
        p.start(DRAFTSCOPE_CLI, {"inspect", QString::fromStdString(demoDrafter()), "--json", d + "/latest.json"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(fs::is_symlink((d + "/latest.json").toStdString()));
        const auto j = readJson((d + "/real.json").toStdString());
        QVERIFY(j.contains("tensors") && !j["tensors"].empty());
        QCOMPARE(entries(d), (QStringList{"latest.json", "real.json"}));
    }

    // An output that is an input, another output, or a checkpoint file in an input model
    // directory is refused before any work, naming both options; the files stay as they were.
    void outputsNeverOverwriteInputsOrEachOther() {
        const QString d = freshDir();
        fs::copy(demoDrafter(), (d + "/drafter").toStdString(), fs::copy_options::recursive);
        const std::string weights = (d + "/drafter/model.safetensors").toStdString();
        const std::string before = readFileToString(weights);
        writeBytes((d + "/prompts.jsonl").toStdString(), "{\"prompt\": \"hi\"}\n");
        struct Case {
            QStringList args;
            QString message;
        };
        const QString drafter = d + "/drafter";
        // A .pt training checkpoint with its config.json beside it.
        fs::create_directories((d + "/pt").toStdString());
        fs::copy(dataPath("pt/flat.pt"), (d + "/pt/flat.pt").toStdString());
        fs::copy(dataPath("pt/config.json"), (d + "/pt/config.json").toStdString());
        const std::string ptConfig = readFileToString((d + "/pt/config.json").toStdString());
        // Links whose targets do not exist yet: the write would create the target.
        fs::create_symlink((d + "/drafter/model-2.safetensors").toStdString(), (d + "/dangling").toStdString());
        fs::create_symlink("r2.json", (d + "/dangling2").toStdString());
        const std::vector<Case> cases{
            {{"forward", "--model", drafter, "--prompt", "hi", "--out", drafter + "/model.safetensors"},
             "--out: '" + drafter + "/model.safetensors' would overwrite a checkpoint file in --model's directory"},
            {{"inspect", drafter, "--json", d + "/r.json", "--csv", d + "/r.json"},
             "--csv: '" + d + "/r.json' is also the file of --json: give each output its own file"},
            {{"inspect", drafter, "--json", drafter + "/config.json"},
             "--json: '" + drafter + "/config.json' would overwrite a checkpoint file in path's directory"},
            {{"eval", "--target", drafter, "--drafter", drafter, "--prompts", d + "/prompts.jsonl", "--out",
              d + "/prompts.jsonl"},
             "--out: '" + d + "/prompts.jsonl' is also read as --prompts: writing it would destroy the input"},
            {{"inspect", d + "/pt/flat.pt", "--json", d + "/pt/config.json"},
             "--json: '" + d + "/pt/config.json' would overwrite a checkpoint file in path's directory '" + d + "/pt'"},
            // A new file named relative and absolute, or through "..", is one file.
            {{"inspect", drafter, "--json", "r.json", "--csv", d + "/r.json"},
             "--csv: '" + d + "/r.json' is also the file of --json"},
            {{"inspect", drafter, "--json", d + "/r.json", "--csv", d + "/pt/../r.json"},
             "--csv: '" + d + "/pt/../r.json' is also the file of --json"},
            {{"forward", "--model", drafter, "--prompt", "hi", "--out", d + "/dangling"},
             "--out: '" + d + "/dangling' would overwrite a checkpoint file in --model's directory"},
            {{"inspect", drafter, "--json", d + "/r2.json", "--csv", d + "/dangling2"},
             "--csv: '" + d + "/dangling2' is also the file of --json"},
        };
        for (const auto& c : cases) {
            QProcess p;
            p.setWorkingDirectory(d);
            p.start(DRAFTSCOPE_CLI, c.args);
            QVERIFY(p.waitForFinished(60000));
            const QString err = QString::fromUtf8(p.readAllStandardError());
            QVERIFY2(p.exitCode() == 1 && err.contains("error: " + c.message), qPrintable(c.args.join(' ') + " -> " + err));
        }
        QCOMPARE(readFileToString(weights), before);
        QVERIFY(!fs::exists((d + "/r.json").toStdString()) && !fs::exists((d + "/r2.json").toStdString()));
        QVERIFY(!fs::exists((d + "/drafter/model-2.safetensors").toStdString()));
        QCOMPARE(readFileToString((d + "/pt/config.json").toStdString()), ptConfig);
        QCOMPARE(readFileToString((d + "/prompts.jsonl").toStdString()), std::string("{\"prompt\": \"hi\"}\n"));
    }

    // ---- messages quoting damaged files ----

    void escapeNonPrintableRule() {
        QCOMPARE(escapeNonPrintable("plain ascii ~"), std::string("plain ascii ~"));
        QCOMPARE(escapeNonPrintable("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"), std::string("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"));
        QCOMPARE(escapeNonPrintable("a\tb\nc\rd"), std::string("a\\tb\\nc\\rd"));
        QCOMPARE(escapeNonPrintable(std::string("\x00\x01\x1b[31m\x7f", 8)), std::string("\\x00\\x01\\x1b[31m\\x7f"));
        QCOMPARE(escapeNonPrintable("\xff\xfe"), std::string("\\xff\\xfe"));
        QCOMPARE(escapeNonPrintable("\xc2\x85"), std::string("\\xc2\\x85"));        // C1 control NEL
        QCOMPARE(escapeNonPrintable("\xe2\x82"), std::string("\\xe2\\x82"));        // truncated sequence
        QCOMPARE(escapeNonPrintable("\xc0\xaf"), std::string("\\xc0\\xaf"));        // overlong '/'
        QCOMPARE(escapeNonPrintable("\xed\xa0\x80"), std::string("\\xed\\xa0\\x80"));  // surrogate
        QCOMPARE(escapeNonPrintable("a\xe2\x80\xae" "b"), std::string("a\\xe2\\x80\\xaeb"));  // bidi override (Cf)
        QCOMPARE(escapeNonPrintable("\xef\xbb\xbf"), std::string("\\xef\\xbb\\xbf"));     // zero-width no-break space
        const std::string once = escapeNonPrintable("x\xff\x01y\n");
        QCOMPARE(escapeNonPrintable(once), once);  // idempotent
        // A whole message for display keeps its lines; everything else is escaped alike.
        QCOMPARE(escapeForDisplay("2 missing tensor(s):\n  - a\x1b[2J\t\xff\n"),
                 std::string("2 missing tensor(s):\n  - a\\x1b[2J\\t\\xff\n"));
    }

    // A real weight file with bytes of its JSON header mutated, one mutation at a time:
    // every message is valid UTF-8, names the file, and shows the bytes escaped.
    void mutatedSafetensorsHeadersGiveValidUtf8Messages() {
        const std::string original = readFileToString(dataPath("dense_goldens.safetensors"));
        std::uint64_t headerLen = 0;
        std::memcpy(&headerLen, original.data(), 8);
        QVERIFY(headerLen > 100 && 8 + headerLen < original.size());
        const std::string path = (freshDir() + "/mutated.safetensors").toStdString();
        const auto openMessage = [&](const std::string& bytes) {
            writeBytes(path, bytes);
            return rawErrorOf([&] { SafetensorsFile::open(path); });
        };

        // Every 7th header byte set to 0xff.
        int mutations = 0, quoted = 0;
        for (std::uint64_t i = 8; i < 8 + headerLen; i += 7) {
            std::string bytes = original;
            bytes[i] = '\xff';
            const QByteArray msg = openMessage(bytes);
            QVERIFY2(!msg.isEmpty(), qPrintable(QString("byte %1 set to 0xff was accepted").arg(i)));
            QVERIFY2(isValidUtf8(msg), msg.toHex().constData());
            QVERIFY(msg.contains("mutated.safetensors"));
            QVERIFY(!msg.contains('\xff'));
            quoted += msg.contains("\\xff");
            ++mutations;
        }
        QVERIFY(mutations > 100);
        QVERIFY2(quoted * 10 >= mutations * 9, qPrintable(QString("%1 of %2 quoted the byte").arg(quoted).arg(mutations)));

        // 0xff 0xfe and control bytes inserted inside a tensor name (a JSON string) and
        // between tokens; the header length grows with them.
        const std::string header = original.substr(8, headerLen), data = original.substr(8 + headerLen);
        const std::size_t name = header.find("\"tiny-llama-tied") + 1, colon = header.find(':');
        for (const std::string& junk : {std::string("\xff\xfe"), std::string("\x01\x02\x1b[2J", 6), std::string("\x7f\xc3")}) {
            for (std::size_t at : {name, colon}) {
                std::string h = header;
                h.insert(at, junk);
                std::string bytes(8, '\0');
                const std::uint64_t n = h.size();
                std::memcpy(bytes.data(), &n, 8);
                bytes += h + data;
                const QByteArray msg = openMessage(bytes);
                QVERIFY2(!msg.isEmpty() && isValidUtf8(msg), msg.toHex().constData());
                QVERIFY2(msg.contains("header is not valid JSON"), msg.constData());
                if (junk[0] == '\xff') QVERIFY2(msg.contains("\\xff"), msg.constData());
                QVERIFY(!msg.contains('\x1b') && !msg.contains('\x7f'));
            }
        }
    }

    // The same rule in the other JSON parsers: config.json, tokenizer.json, the sharded
    // index, generation_config.json, prompt sets.
    void otherJsonParsersEscapeTooInTheirMessages() {
        const std::string junk = "\xff\xfe\x01\x1b";
        const auto check = [&](const QByteArray& msg, const char* expect) {
            QVERIFY2(!msg.isEmpty() && isValidUtf8(msg), msg.toHex().constData());
            QVERIFY2(msg.contains(expect) && msg.contains("\\xff"), msg.constData());
            QVERIFY(!msg.contains('\x1b'));
        };
        const QString d = freshDir();
        Engine e;
        for (const char* file : {"config.json", "tokenizer.json", "generation_config.json"}) {
            const std::string m = copyModel(demoTarget(), (d + "/m-" + file).toStdString());
            writeBytes(m + "/" + file, "{\"a\": \"x\"" + junk + "}");
            check(rawErrorOf([&] { e.loadTarget(m); }), file);
        }
        const std::string sharded = copyModel(demoTarget(), (d + "/sharded").toStdString());
        fs::rename(sharded + "/model.safetensors", sharded + "/model-00001-of-00001.safetensors");
        writeBytes(sharded + "/model.safetensors.index.json", "{\"weight_map\": " + junk + "}");
        check(rawErrorOf([&] { e.loadTarget(sharded); }), "model.safetensors.index.json");
        const std::string set = (d + "/set.jsonl").toStdString();
        writeBytes(set, "{\"prompt\": \"ok\"}\n{\"prompt\": " + junk + "}\n");
        check(rawErrorOf([&] { loadPromptSetFile(set); }), "line 2");
    }
};

QTEST_GUILESS_MAIN(TestIoPolicy)
#include "tst_io_policy.moc"
