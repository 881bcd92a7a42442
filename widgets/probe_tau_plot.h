#pragma once
// The convention probes of a diagnosis (DrafterDiagnosis::conventionProbes) as one figure:
// expected acceptance (the convention findings' statistic, perAnchorExpectedAcceptance) under
// every alternative convention, per drafter, with the 99% interval of the gain over the
// declared convention and the declared convention's value marked.

#include "draftscope/diagnosis.h"
#include "exportable_view.h"

#include <QStringList>
#include <QVector>
#include <QWidget>

class QCustomPlot;
class QStandardItemModel;

namespace draftscope {

/// One drafter's points: per probed alternative, its category (index into
/// ProbeTauData::categories), expected acceptance and its interval declaredTau + the paired
/// bootstrap interval of the gain (ConventionProbe::expectedDifference, kConventionConfidence).
struct ProbeTauSeries {
    QString name;        ///< e.g. "A: demo-drafter"
    int which = 0;       ///< 0 = drafter A, 1 = drafter B (its colour and marker)
    double declaredTau = 0;  ///< expected acceptance under the declared convention (same anchors)
    QVector<double> category, tau, lower, upper;
    QVector<bool> finding;   ///< the alternative raised a finding
};

/// The plot's data: categories "family: alternative" in first-seen order over the drafters
/// (the families' run order), and one series per drafter that probed any alternative.
struct ProbeTauData {
    QStringList categories;
    std::vector<ProbeTauSeries> series;
};

/// Builds the data of `report`: drafter i is report.drafters[i], named `names[i]` and
/// coloured as `which[i]` (0 = A, 1 = B; missing entries: i). Drafters without convention
/// probes (not loaded, probes skipped) have no series.
ProbeTauData probeTauData(const DiagnosisReport& report, const std::vector<int>& which, const QStringList& names);

/// QCustomPlot with the alternatives on the vertical axis (labels read horizontally, first
/// at the top) and expected acceptance on the horizontal one: a marker per drafter and alternative
/// (A blue discs, B orange squares, side by side), a horizontal error bar for its 99%
/// interval, a star on alternatives that raised a finding, and a dashed vertical line at
/// each drafter's declared value. The table (CSV/JSON) lists every point: drafter,
/// family, alternative, declared tau, tau, gain and its interval, finding.
class ProbeTauPlot : public QWidget, public ExportableView {
    Q_OBJECT
public:
    explicit ProbeTauPlot(QWidget* parent = nullptr);
    void setData(const ProbeTauData& data);
    void clear();
    const ProbeTauData& data() const { return data_; }
    QCustomPlot* plot() const { return plot_; }
    QStandardItemModel* table() const { return table_; }

    QString exportName() const override { return QStringLiteral("diagnose_convention_probes"); }
    QStringList exportAll(const QString& dir, QString* error) override;
    /// Writes the figure at width x height (0: on-screen size), the legend fitted to it.
    bool exportFigure(const QString& path, QString* error, int width, int height);

private:
    static constexpr int kLegendPerRow = 3;
    void redraw();
    /// Pixels the title, the axes and one row per alternative need (the legend comes on top).
    int contentHeight() const;
    QCustomPlot* plot_;
    QStandardItemModel* table_;
    ProbeTauData data_;
};

}  // namespace draftscope
