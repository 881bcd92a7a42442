#include "drafter_comparison.h"

#include <algorithm>

#include <QDir>
#include <QFileInfo>
#include <QObject>

namespace draftscope {

std::vector<DecidingDraft> decidingDrafts(const RunResult& run) {
    std::vector<DecidingDraft> out(run.outputIds.size());
    for (std::size_t s = 0; s < run.steps.size(); ++s) {
        const auto& st = run.steps[s];
        for (int j = 1; j <= st.acceptedCount + 1; ++j) {
            const auto pos = static_cast<std::size_t>(st.start + j);
            if (pos >= out.size()) break;
            auto& d = out[pos];
            d.step = static_cast<int>(s);
            d.blockPosition = j;
            d.drafted = j - 1 < static_cast<int>(st.drafted.size()) ? st.drafted[static_cast<std::size_t>(j - 1)] : -1;
            d.accepted = j <= st.acceptedCount;
        }
    }
    return out;
}

std::vector<AcceptedBy> acceptedBy(const RunResult& a, const RunResult& b) {
    const auto da = decidingDrafts(a), db = decidingDrafts(b);
    std::vector<AcceptedBy> out(da.size(), AcceptedBy::Prompt);
    for (std::size_t p = 0; p < da.size(); ++p) {
        if (da[p].step < 0) continue;
        const bool inA = da[p].accepted;
        const bool inB = p < db.size() && db[p].step >= 0 && db[p].accepted;
        out[p] = inA && inB ? AcceptedBy::Both : inA ? AcceptedBy::AOnly : inB ? AcceptedBy::BOnly : AcceptedBy::Neither;
    }
    return out;
}

QColor colorOf(AcceptedBy o) {
    switch (o) {
        case AcceptedBy::Prompt: return QColor(0xe4, 0xe4, 0xe4);
        case AcceptedBy::Both: return QColor(0xb7, 0xe4, 0xb0);
        case AcceptedBy::AOnly: return QColor(0xa8, 0xcb, 0xee);
        case AcceptedBy::BOnly: return QColor(0xfd, 0xc0, 0x86);
        case AcceptedBy::Neither: return QColor(0xff, 0xf2, 0xb3);
    }
    return Qt::white;
}

QString nameOf(AcceptedBy o) {
    switch (o) {
        case AcceptedBy::Prompt: return QObject::tr("prompt");
        case AcceptedBy::Both: return QObject::tr("A and B");
        case AcceptedBy::AOnly: return QObject::tr("A only");
        case AcceptedBy::BOnly: return QObject::tr("B only");
        case AcceptedBy::Neither: return QObject::tr("neither (bonus)");
    }
    return {};
}

int partingPosition(const RunResult& run, const RunResult& other, int step) {
    if (step < 0 || step >= static_cast<int>(run.steps.size())) return 0;
    const auto& st = run.steps[static_cast<std::size_t>(step)];
    const auto it = std::find_if(other.steps.begin(), other.steps.end(), [&](const VerifyStep& o) { return o.start == st.start; });
    if (it == other.steps.end() || it->acceptedCount == st.acceptedCount) return 0;
    // The same input: the committed tokens up to and including the anchor agree.
    const auto upTo = static_cast<std::size_t>(st.start) + 1;
    if (run.outputIds.size() < upTo || other.outputIds.size() < upTo ||
        !std::equal(run.outputIds.begin(), run.outputIds.begin() + static_cast<std::ptrdiff_t>(upTo), other.outputIds.begin()))
        return 0;
    const int j = std::min(st.acceptedCount, it->acceptedCount) + 1;
    return j < run.blockSize ? j : 0;
}

bool cellDiffers(const RunResult& run, const RunResult& other, int step, int j) {
    return j >= 1 && j == partingPosition(run, other, step);
}

int chainStepCovering(const RunResult& run, std::int64_t position) {
    int best = run.steps.empty() ? -1 : 0;
    for (std::size_t s = 0; s < run.steps.size(); ++s) {
        const auto& st = run.steps[s];
        if (st.start <= position) best = static_cast<int>(s);
        if (st.start <= position && position < st.start + st.acceptanceLength()) return static_cast<int>(s);
    }
    return best;
}

std::pair<QString, QString> drafterNames(const QString& dirA, const QString& dirB) {
    auto last = [](const QString& d, int n) {
        const QStringList parts = QDir::cleanPath(d).split('/', Qt::SkipEmptyParts);
        return parts.mid(std::max<qsizetype>(0, parts.size() - n)).join('/');
    };
    QString a = last(dirA, 1), b = last(dirB, 1);
    if (a == b) {
        a = last(dirA, 2);
        b = last(dirB, 2);
    }
    return {a, b};
}

QColor drafterColor(int which) { return which == 0 ? QColor(0x1f, 0x77, 0xb4) : QColor(0xff, 0x7f, 0x0e); }

}  // namespace draftscope
