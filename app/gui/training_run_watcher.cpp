#include "gui/training_run_watcher.h"

#include "draftscope/errors.h"

#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QTimer>

namespace draftscope {

TrainingRunWatcher::TrainingRunWatcher(QObject* parent)
    : QObject(parent), watcher_(new QFileSystemWatcher(this)), debounce_(new QTimer(this)) {
    debounce_->setSingleShot(true);
    debounce_->setInterval(250);
    connect(debounce_, &QTimer::timeout, this, &TrainingRunWatcher::reload);
    connect(watcher_, &QFileSystemWatcher::fileChanged, debounce_, qOverload<>(&QTimer::start));
    connect(watcher_, &QFileSystemWatcher::directoryChanged, debounce_, qOverload<>(&QTimer::start));
}

bool TrainingRunWatcher::open(const QString& dir, QString* error) {
    const auto path = QString::fromStdString(trackIndexPathOf(dir.toStdString()));
    if (path.isEmpty()) {
        if (error)
            *error = tr("'%1' holds no run index: expected track.json there or in its draftscope-track/ "
                        "(written by draftscope-cli track)").arg(dir);
        return false;
    }
    std::shared_ptr<const TrackIndex> index;
    try {
        index = std::make_shared<const TrackIndex>(readTrackIndex(path.toStdString()));
    } catch (const Error& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
    close();
    path_ = path;
    index_ = index;
    lastError_.clear();
    watcher_->addPath(path_);
    watcher_->addPath(QFileInfo(path_).absolutePath());
    emit indexChanged(index_);
    return true;
}

void TrainingRunWatcher::close() {
    if (!watcher_->files().isEmpty()) watcher_->removePaths(watcher_->files());
    if (!watcher_->directories().isEmpty()) watcher_->removePaths(watcher_->directories());
    path_.clear();
    index_.reset();
}

void TrainingRunWatcher::reload() {
    if (path_.isEmpty()) return;
    if (!watcher_->files().contains(path_) && QFileInfo::exists(path_)) watcher_->addPath(path_);  // replaced by rename
    if (!QFileInfo::exists(path_)) return;  // between the writer's unlink and rename: wait for the next change
    try {
        auto index = std::make_shared<const TrackIndex>(readTrackIndex(path_.toStdString()));
        lastError_.clear();
        if (index_ && index->updatedUtc == index_->updatedUtc && index->checkpoints.size() == index_->checkpoints.size())
            return;
        index_ = std::move(index);
        emit indexChanged(index_);
    } catch (const Error& e) {
        const auto message = QString::fromStdString(e.what());
        if (message != lastError_) emit readFailed(message);
        lastError_ = message;
    }
}

}  // namespace draftscope
