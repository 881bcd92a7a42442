#pragma once
// The selection every view follows: a verify step and a block position in it.

#include <QObject>

namespace draftscope {

/// Shared "selected verify step / block position" of the linked views. A view calls
/// select() when the user clicks; every view listens to changed(). step = -1 means none;
/// position is a block position 0..B-1 (0 = anchor) or -1.
class StepSelection : public QObject {
    Q_OBJECT
public:
    explicit StepSelection(QObject* parent = nullptr) : QObject(parent) {}
    int step() const { return step_; }
    int position() const { return position_; }

public slots:
    /// Selects (step, position); emits changed() only if it differs from the current one.
    void select(int step, int position) {
        if (step == step_ && position == position_) return;
        step_ = step;
        position_ = position;
        emit changed(step_, position_);
    }
    void clear() { select(-1, -1); }

signals:
    void changed(int step, int position);

private:
    int step_ = -1;
    int position_ = -1;
};

}  // namespace draftscope
