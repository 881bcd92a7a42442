#pragma once
// The findings of a diagnosis (draftscope::diagnoseDrafters) as a table: every drafter's
// findings, most severe first, and which view of the window shows what a finding is about.

#include "draftscope/diagnosis.h"

#include <QAbstractTableModel>
#include <QStringList>

#include <vector>

namespace draftscope {

/// The window view that shows what a finding is about.
enum class FindingView {
    None,          ///< no view shows it (configuration, acceptance numbers)
    Masks,         ///< the Masks tab: block causality and sliding windows (convention-block-causal, convention-window)
    HiddenStates,  ///< the hidden-state statistics of the tapped layers (convention-tap-offset)
    BlockGrid,     ///< the block agreement grid: positions of the block (convention-position-offset)
    /// The Masks tab's diff of the strict context (kv < anchor) against the inclusive one
    /// (kv <= anchor) at inference: the column a context-leak drafter learned to use.
    MaskDiff,
};

/// The view for finding `id` (docs/DIAGNOSE.md "Findings"): context-leak -> MaskDiff;
/// convention-block-causal, convention-window, causal-keys-disagree, sliding-window-dropped,
/// window-shorter-than-context -> Masks; convention-tap-offset and the tapped-* checks ->
/// HiddenStates; convention-position-offset, label-shift, draft-repetition, low-acceptance,
/// acceptance -> BlockGrid; the configuration checks without a view (fc-width, mask-token-*,
/// num-target-layers-mismatch, load-failed, probe-skipped) -> None.
FindingView viewForFinding(const std::string& id);

/// Where a finding's view should open: the view, and what to select in it.
struct FindingTarget {
    FindingView view = FindingView::None;
    /// Masks: the drafter layer the finding is about (the first layer whose causality or
    /// window the raising convention probe changes; for the configuration checks the first
    /// sliding-window layer); -1 keeps the selection.
    int layer = -1;
    /// HiddenStates: the tapped target layer id whose series to show (the last tapped layer
    /// for tapped-last-layer, else the first); -1 keeps the selection.
    std::int64_t tappedLayer = -1;
    /// BlockGrid: select the first verify step that rejected its first drafted token (the
    /// first place the bug shows), else the first step.
    bool firstRejectedStep = false;
};

/// The view of `finding` (viewForFinding()) and what to select in it, from the drafter's
/// diagnosis `d` (its convention probes and its summary's layout and tapped layers).
FindingTarget findingTarget(const DrafterDiagnosis& d, const Finding& finding);

/// "evidence name=value, ..." with values to 4 significant digits (as draftscope-cli diagnose prints them).
QString evidenceText(const Finding& finding);

/// Columns: severity, drafter, id, message, evidence. One row per finding of every drafter of
/// the report; rows sorted by severity (error, warning, info), then by the drafter's rank,
/// then in the order the backend raised them. The severity cell is coloured (red, amber,
/// grey). Export (CSV/JSON) writes the same cells; the message and evidence tooltips hold
/// the whole text.
class DiagnosisFindingsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { SeverityColumn, DrafterColumn, IdColumn, MessageColumn, EvidenceColumn, ColumnCount };

    explicit DiagnosisFindingsModel(QObject* parent = nullptr);

    /// Shows `report`'s findings; `drafterNames[i]` names report.drafters[i] in the drafter
    /// column (e.g. "A: demo-drafter"; missing names fall back to "#rank path").
    void setReport(const DiagnosisReport& report, const QStringList& drafterNames = {});
    void clear();

    /// The finding in row `row` (rows as shown, sorted) and the index into report.drafters of
    /// its drafter. Throws std::out_of_range for a row outside the model.
    const Finding& findingAt(int row) const;
    int drafterOf(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        Finding finding;
        int drafter = 0;
        QString drafterName;
    };
    std::vector<Row> rows_;
};

}  // namespace draftscope
