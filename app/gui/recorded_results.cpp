#include "gui/recorded_results.h"

#include "draftscope/errors.h"
#include "draftscope/sha256.h"

#include <QDir>
#include <QFileInfo>
#include <QPointer>
#include <QThread>

namespace draftscope {

RunBundlePtr bundleFromResults(const ResultsFile& r, std::size_t prompt, int drafter, quint64 requestId) {
    if (prompt >= r.prompts.size())
        throw Error("results file has no prompt " + std::to_string(prompt) + " (" + std::to_string(r.prompts.size()) +
                    " prompts)");
    if (drafter < 0 || drafter >= static_cast<int>(r.drafters.size()))
        throw Error("results file has no drafter " + std::to_string(drafter));
    const auto& p = r.prompts[prompt];
    if (!p.error.empty()) throw Error("prompt '" + p.id + "' failed during the evaluation: " + p.error);
    if (p.drafters.size() <= static_cast<std::size_t>(drafter))
        throw Error("prompt '" + p.id + "' has no result for drafter " + std::to_string(drafter));
    const auto& dr = p.drafters[static_cast<std::size_t>(drafter)];
    auto b = std::make_shared<RunBundle>();
    b->requestId = requestId;
    b->prompt = p.prompt;
    b->promptLabel = promptLabelOf(p.prompt, QString::fromStdString(p.id));
    b->run = dr.run;
    // "Load recorded models" loads the shown drafter alone, as engine drafter 0.
    b->run.settings.drafter = 0;
    b->treeRuns = dr.trees;
    b->hiddenStats = dr.hiddenStats;
    for (const auto& [id, piece] : r.tokenPieces) b->tokenPieces.emplace(id, QString::fromStdString(piece));
    b->pieces.reserve(b->run.outputIds.size());
    for (auto id : b->run.outputIds) b->pieces.push_back(b->pieceOf(id));
    b->target = r.target.summary;
    b->drafter = r.drafters[static_cast<std::size_t>(drafter)].summary;
    return b;
}

QString recordedModelsMissingReason(const ResultsFile& r, int drafter) {
    if (drafter < 0 || drafter >= static_cast<int>(r.drafters.size())) return QObject::tr("no such drafter");
    for (const ResultsModel* m : {&r.target, &r.drafters[static_cast<std::size_t>(drafter)]}) {
        const QString dir = QString::fromStdString(m->summary.directory);
        // A drafter may be a .pt training checkpoint; its config.json sits beside it.
        const QFileInfo fi(dir);
        const QString config = fi.isDir() ? QDir(dir).filePath("config.json") : fi.dir().filePath("config.json");
        if (!fi.exists() || !QFileInfo::exists(config))
            return QObject::tr("recorded on another machine: model directory %1 not found here").arg(dir);
        if (!m->configSha256.empty()) {
            try {
                if (sha256File(config.toStdString()) != m->configSha256)
                    return QObject::tr("the model at %1 is not the recorded one: its config.json differs (SHA-256)")
                        .arg(dir);
            } catch (const std::exception& e) {
                return QString::fromStdString(e.what());
            }
        }
    }
    return {};
}

QString recordedDrafterLabel(const ResultsFile& r, int d) {
    if (d < 0 || d >= static_cast<int>(r.drafters.size())) return {};
    const QString letter = d < 26 ? QString(QChar('A' + d)) : QString::number(d + 1);
    return QStringLiteral("%1: %2").arg(letter, QFileInfo(QString::fromStdString(r.drafters[static_cast<std::size_t>(d)]
                                                                                      .summary.directory)).fileName());
}

ResultsReader::ResultsReader(QObject* parent) : QObject(parent) {
    static const int registered = qRegisterMetaType<ResultsFilePtr>();
    Q_UNUSED(registered);
}

ResultsReader::~ResultsReader() {
    for (auto* t : threads_) {
        t->wait();
        delete t;
    }
}

ResultsFilePtr ResultsReader::readNow(const QString& path, QString* error) {
    try {
        return std::make_shared<const ResultsFile>(readResultsFile(path.toStdString()));
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return nullptr;
    }
}

void ResultsReader::read(const QString& path) {
    // Drop threads that are done.
    for (auto it = threads_.begin(); it != threads_.end();) {
        if ((*it)->isFinished()) {
            delete *it;
            it = threads_.erase(it);
        } else {
            ++it;
        }
    }
    const quint64 gen = ++generation_;
    QPointer<ResultsReader> self(this);
    QThread* t = QThread::create([this, self, path, gen] {
        QString error;
        ResultsFilePtr results = readNow(path, &error);
        // Queued to the reader's (GUI) thread; dropped if the reader is gone or superseded.
        QMetaObject::invokeMethod(
            this,
            [self, path, gen, results, error] {
                if (self && gen == self->generation_) emit self->finished(path, results, error);
            },
            Qt::QueuedConnection);
    });
    threads_.push_back(t);
    t->start();
}

}  // namespace draftscope
