#pragma once
// Results files (draftscope-cli eval --out) in the GUI: reading them off the GUI thread,
// turning one prompt x drafter into the RunBundle every view shows, and deciding whether
// the recorded models are available here for the drafter-attention view. Torch-free.

#include "draftscope/results_file.h"
#include "gui/run_bundle.h"

#include <QObject>
#include <QString>

#include <memory>
#include <vector>

class QThread;

namespace draftscope {

using ResultsFilePtr = std::shared_ptr<const ResultsFile>;

/// Request ids of recorded bundles have this bit set, so they never collide with the ids of
/// live analyses (AnalysisController counts from 1).
inline constexpr quint64 kRecordedRequestBit = quint64(1) << 62;

/// The RunBundle of prompt `prompt` (index into results.prompts) and drafter `drafter`,
/// filled from the file as a finished live analysis would be (docs/RESULTS_FORMAT.md "What
/// the GUI shows from a file"). Throws Error for indices out of range or a failed prompt.
RunBundlePtr bundleFromResults(const ResultsFile& results, std::size_t prompt, int drafter, quint64 requestId);

/// Why the drafter-attention view cannot recompute attention for drafter `drafter` of
/// `results` on this machine: a model directory that does not exist here or whose
/// config.json differs from the recorded one. Empty if both directories are present and match.
QString recordedModelsMissingReason(const ResultsFile& results, int drafter);

/// Short human-readable name of drafter `drafter`: "A: <directory name>".
QString recordedDrafterLabel(const ResultsFile& results, int drafter);

/// Reads results files on a worker thread (a 500-prompt file takes a while) and delivers the
/// result on the GUI thread. A newer read() supersedes an older one still running.
class ResultsReader : public QObject {
    Q_OBJECT
public:
    explicit ResultsReader(QObject* parent = nullptr);
    ~ResultsReader() override;  ///< waits for reads still running

    /// Starts reading `path`; finished() follows.
    void read(const QString& path);
    /// Reads `path` on the calling thread; returns null and sets *error (the reader's
    /// message) on failure.
    static ResultsFilePtr readNow(const QString& path, QString* error);

signals:
    /// `results` is null and `error` the reader's message on failure.
    void finished(const QString& path, const draftscope::ResultsFilePtr& results, const QString& error);

private:
    quint64 generation_ = 0;
    std::vector<QThread*> threads_;
};

}  // namespace draftscope

Q_DECLARE_METATYPE(draftscope::ResultsFilePtr)
