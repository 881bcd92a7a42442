#pragma once
// Follows a run index (track.json, draftscope-cli track) while `track --watch` rewrites it:
// reads it when it changes (the writer replaces it atomically, so the directory is watched
// too) and hands the new index to the Training run dock. The reads are small and quick; a
// half-renamed or unreadable file keeps the last good index and is reported once.

#include "draftscope/training_run.h"

#include <QObject>
#include <QString>

#include <memory>

class QFileSystemWatcher;
class QTimer;

namespace draftscope {

class TrainingRunWatcher : public QObject {
    Q_OBJECT
public:
    explicit TrainingRunWatcher(QObject* parent = nullptr);

    /// Starts following `dir`: a track output directory or a run directory holding
    /// draftscope-track/ (trackIndexPathOf). Reads it now; returns false and sets *error
    /// (naming the directory or the index's problem) if there is no readable index.
    bool open(const QString& dir, QString* error);
    void close();
    QString indexPath() const { return path_; }
    const std::shared_ptr<const TrackIndex>& index() const { return index_; }
    /// Reads the index again now (what a change notification does after a short delay).
    void reload();

signals:
    void indexChanged(const std::shared_ptr<const draftscope::TrackIndex>& index);
    void readFailed(const QString& message);

private:
    QFileSystemWatcher* watcher_;
    QTimer* debounce_;
    QString path_;
    QString lastError_;
    std::shared_ptr<const TrackIndex> index_;
};

}  // namespace draftscope
