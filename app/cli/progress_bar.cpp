#include "cli/progress_bar.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace draftscope {

ProgressBar::ProgressBar(std::ostream& out, bool tty, double plainEverySeconds)
    : out_(out), tty_(tty), plainEvery_(plainEverySeconds), start_(std::chrono::steady_clock::now()),
      lastDraw_(start_ - std::chrono::hours(1)), lastPlain_(start_ - std::chrono::hours(1)) {}

double ProgressBar::elapsedSeconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string ProgressBar::formatDuration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const auto t = static_cast<long long>(std::llround(s));
    char buf[32];
    if (t < 60) std::snprintf(buf, sizeof buf, "%lld s", t);
    else if (t < 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld", t / 60, t % 60);
    else std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", t / 3600, (t / 60) % 60, t % 60);
    return buf;
}

void ProgressBar::update(double fraction, const std::string& label, bool newItem) {
    const auto now = std::chrono::steady_clock::now();
    fraction = std::clamp(fraction, 0.0, 1.0);
    const double elapsed = elapsedSeconds();
    // ETA from the average rate so far; unknown until some work is done.
    const std::string eta = fraction > 0.005 && elapsed > 1.0 ? formatDuration(elapsed * (1 - fraction) / fraction) : "?";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(fraction * 100));
    if (tty_) {
        if (!newItem && now - lastDraw_ < std::chrono::milliseconds(100)) return;
        lastDraw_ = now;
        constexpr int width = 24;
        const int filled = static_cast<int>(fraction * width);
        std::string bar = std::string("[").append(static_cast<std::size_t>(filled), '#') +
                          std::string(static_cast<std::size_t>(width - filled), '.') + "]";
        std::string line = bar + " " + pct + "  " + label + "  elapsed " + formatDuration(elapsed) + "  ETA " + eta;
        if (line.size() > 110) line = line.substr(0, 110);
        out_ << "\r\033[K" << line << std::flush;
        drawn_ = true;
        return;
    }
    if (!newItem && std::chrono::duration<double>(now - lastPlain_).count() < plainEvery_) return;
    lastPlain_ = now;
    out_ << "progress " << pct << "  " << label << "  elapsed " << formatDuration(elapsed) << "  ETA " << eta << "\n"
         << std::flush;
}

void ProgressBar::clear() {
    if (tty_ && drawn_) out_ << "\r\033[K" << std::flush;
    drawn_ = false;
}

}  // namespace draftscope
