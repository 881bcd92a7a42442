#pragma once
// The one interface through which the Workbench shows a run (live or recorded) in its views,
// after RenderDoc's ICaptureViewer: the window fans every result out through it, so adding a
// view is one registration line (Workbench::addView / addDetailView).

#include "gui/run_bundle.h"

#include <QString>

#include <functional>

namespace draftscope {

/// What the views show: a bundle (drafter A, with drafter B as bundle->comparison when two
/// are compared) and how the window names it.
struct ShownRun {
    RunBundlePtr bundle;
    /// The bundle the detail views (DDTree, hidden states, masks, attention) show: `bundle`,
    /// or bundle->comparison when drafter B is chosen. Filled in by the Workbench.
    RunBundlePtr detail;
    /// "Live analysis 3" or "Recorded, not live: R.dsresults prompt 'p3'" (grid captions).
    QString label;
    /// False while more runs of the analysis are to come (a partial result).
    bool complete = true;
    /// Why drafter A's attention cannot be recomputed for this run (empty: it can); a
    /// recorded run's models may be missing or not loaded.
    QString attentionUnavailable;
    /// Display names of drafters A and B (directory names, told apart); set when comparing.
    QString nameA, nameB;

    const RunBundle& a() const { return *bundle; }
    /// Drafter B's bundle, or null when one drafter is shown.
    const RunBundle* b() const { return bundle ? bundle->comparison.get() : nullptr; }
    bool detailIsB() const { return detail && detail != bundle; }
};

/// A view of the shown run. showBundle() replaces what it showed; clearBundle() empties it.
class BundleView {
public:
    virtual ~BundleView() = default;
    virtual void showBundle(const ShownRun& run) = 0;
    virtual void clearBundle() = 0;
};

/// A BundleView made of two functions: how a view adapts its own API (setRun, setStats, ...).
class BundleViewFunctions final : public BundleView {
public:
    BundleViewFunctions(std::function<void(const ShownRun&)> show, std::function<void()> clear)
        : show_(std::move(show)), clear_(std::move(clear)) {}
    void showBundle(const ShownRun& run) override { show_(run); }
    void clearBundle() override { clear_(); }

private:
    std::function<void(const ShownRun&)> show_;
    std::function<void()> clear_;
};

}  // namespace draftscope
