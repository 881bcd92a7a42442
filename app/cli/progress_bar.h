#pragma once
// Progress of long CLI work on stderr: a redrawn bar with percentage and ETA on a terminal,
// or plain lines (at most one per `plainEverySeconds`, plus every start of an item) when
// stderr is not a terminal (logs, pipes, nohup over SSH).

#include <chrono>
#include <ostream>
#include <string>

namespace draftscope {

class ProgressBar {
public:
    /// `tty`: redraw one line in place; otherwise print plain lines.
    ProgressBar(std::ostream& out, bool tty, double plainEverySeconds = 30.0);

    /// Reports `fraction` (0..1) of the work done; `label` says what runs now (e.g.
    /// "3/80 mt-81 run 2/3"). `newItem` forces a plain line when not on a terminal.
    void update(double fraction, const std::string& label, bool newItem = false);
    /// Erases the bar line (terminal only) so other output can be printed; the next
    /// update() draws it again.
    void clear();
    /// Seconds since construction.
    double elapsedSeconds() const;
    /// "1:02:03", "4:05" or "12 s" for a duration in seconds; "?" if negative or not finite.
    static std::string formatDuration(double seconds);

private:
    std::ostream& out_;
    bool tty_;
    double plainEvery_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_, lastDraw_, lastPlain_;
};

}  // namespace draftscope
