#include "diagnosis_findings_model.h"

#include <QColor>
#include <QFileInfo>

#include <algorithm>
#include <stdexcept>

namespace draftscope {

FindingView viewForFinding(const std::string& id) {
    if (id == "context-leak") return FindingView::MaskDiff;
    for (const char* m : {"convention-block-causal", "convention-window", "causal-keys-disagree", "sliding-window-dropped",
                          "window-shorter-than-context"})
        if (id == m) return FindingView::Masks;
    if (id == "convention-tap-offset" || id.rfind("tapped-", 0) == 0) return FindingView::HiddenStates;
    for (const char* g : {"convention-position-offset", "label-shift", "draft-repetition", "low-acceptance", "acceptance"})
        if (id == g) return FindingView::BlockGrid;
    return FindingView::None;
}

FindingTarget findingTarget(const DrafterDiagnosis& d, const Finding& f) {
    FindingTarget t;
    t.view = viewForFinding(f.id);
    const auto& layout = d.summary.layout;
    switch (t.view) {
        case FindingView::Masks: {
            // A convention finding: the first layer its probe's alternative changes.
            const std::string family = f.id.rfind("convention-", 0) == 0 ? f.id.substr(11) : std::string();
            for (const auto& p : d.conventionProbes) {
                if (family.empty() || p.family != family || !p.finding) continue;
                const auto& c = p.convention;
                const std::size_t n = std::max(c.blockAttention.size(), c.window.size());
                for (std::size_t i = 0; i < n && t.layer < 0; ++i)
                    if ((i < c.blockAttention.size() && c.blockAttention[i] != ProbeConvention::BlockAttention::Declared) ||
                        (i < c.window.size() && c.window[i].kind != ProbeConvention::Window::Kind::Declared))
                        t.layer = static_cast<int>(i);
                if (t.layer >= 0) break;
            }
            // A configuration check about windows: the first sliding-window layer.
            if (t.layer < 0)
                for (std::size_t i = 0; i < layout.size() && t.layer < 0; ++i)
                    if (layout[i].window) t.layer = static_cast<int>(i);
            break;
        }
        case FindingView::HiddenStates: {
            const auto& ids = d.summary.targetLayerIds;
            if (!ids.empty()) t.tappedLayer = f.id == "tapped-last-layer" ? ids.back() : ids.front();
            break;
        }
        case FindingView::BlockGrid: t.firstRejectedStep = true; break;
        default: break;
    }
    return t;
}

QString evidenceText(const Finding& finding) {
    QStringList parts;
    for (const auto& [name, value] : finding.evidence)
        parts << QStringLiteral("%1=%2").arg(QString::fromStdString(name), QString::number(value, 'g', 4));
    return parts.join(QStringLiteral(", "));
}

DiagnosisFindingsModel::DiagnosisFindingsModel(QObject* parent) : QAbstractTableModel(parent) {}

void DiagnosisFindingsModel::clear() {
    beginResetModel();
    rows_.clear();
    endResetModel();
}

void DiagnosisFindingsModel::setReport(const DiagnosisReport& report, const QStringList& drafterNames) {
    beginResetModel();
    rows_.clear();
    for (std::size_t i = 0; i < report.drafters.size(); ++i) {
        const auto& d = report.drafters[i];
        const QString name = static_cast<int>(i) < drafterNames.size()
                                 ? drafterNames[static_cast<int>(i)]
                                 : QStringLiteral("#%1 %2").arg(d.rank).arg(QFileInfo(QString::fromStdString(d.path)).fileName());
        for (const auto& f : d.findings) rows_.push_back({f, static_cast<int>(i), name});
    }
    // Most severe first; within a severity the drafters' rank order, then the backend's order.
    std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
        return static_cast<int>(a.finding.severity) > static_cast<int>(b.finding.severity);
    });
    endResetModel();
}

const Finding& DiagnosisFindingsModel::findingAt(int row) const {
    if (row < 0 || row >= static_cast<int>(rows_.size()))
        throw std::out_of_range("findingAt: row " + std::to_string(row) + " outside 0.." + std::to_string(rows_.size()));
    return rows_[static_cast<std::size_t>(row)].finding;
}

int DiagnosisFindingsModel::drafterOf(int row) const {
    findingAt(row);  // range check
    return rows_[static_cast<std::size_t>(row)].drafter;
}

int DiagnosisFindingsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DiagnosisFindingsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DiagnosisFindingsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
    const Row& r = rows_[static_cast<std::size_t>(index.row())];
    const Finding& f = r.finding;
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case SeverityColumn: return QString::fromLatin1(severityName(f.severity));
        case DrafterColumn: return r.drafterName;
        case IdColumn: return QString::fromStdString(f.id);
        case MessageColumn: return QString::fromStdString(f.message);
        case EvidenceColumn: return evidenceText(f);
        }
    } else if (role == Qt::ToolTipRole) {
        if (index.column() == MessageColumn) return QString::fromStdString(f.message);
        if (index.column() == EvidenceColumn) return evidenceText(f);
        if (index.column() == IdColumn && viewForFinding(f.id) != FindingView::None)
            return tr("Double-click (or Show) to open the view that shows it");
    } else if (role == Qt::ForegroundRole && index.column() == SeverityColumn) {
        switch (f.severity) {
        case Severity::Error: return QColor(0xc6, 0x28, 0x28);
        case Severity::Warning: return QColor(0xb2, 0x6a, 0x00);
        case Severity::Info: return QColor(0x61, 0x61, 0x61);
        }
    }
    return {};
}

QVariant DiagnosisFindingsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case SeverityColumn: return tr("severity");
    case DrafterColumn: return tr("drafter");
    case IdColumn: return tr("id");
    case MessageColumn: return tr("message");
    case EvidenceColumn: return tr("evidence");
    }
    return {};
}

}  // namespace draftscope
