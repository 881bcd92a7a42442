#include "cli/run_report.h"

#include "draftscope/placement.h"
#include "draftscope/tokenizer.h"

#include <cstdio>
#include <iomanip>
#include <sstream>

namespace draftscope {

namespace {
const char* kGreen = "\033[32m";
const char* kRed = "\033[31m";
const char* kDim = "\033[2m";
const char* kReset = "\033[0m";
}  // namespace

std::string displayPiece(const Tokenizer* tok, std::int64_t id) {
    if (!tok) return std::string("#").append(std::to_string(id));  // not "#" + ...: GCC 12 false -Wrestrict
    std::string raw = tok->tokenPiece(id), s;
    for (char c : raw) {
        if (c == '\n') s += "\\n";
        else if (c == '\t') s += "\\t";
        else if (c == '\r') s += "\\r";
        else s += c;
    }
    return "'" + s + "'";
}

void printRunReport(std::ostream& out, const RunResult& run, const Tokenizer* tok, const ReportOptions& opt) {
    auto paint = [&](const char* c, const std::string& s) { return opt.color ? std::string(c) + s + kReset : s; };
    out << "Per verify step: drafted tokens vs the target's; '|' marks where the accepted prefix ends.\n";
    for (std::size_t i = 0; i < run.steps.size(); ++i) {
        const auto& s = run.steps[i];
        const int D = static_cast<int>(s.drafted.size());
        out << "step " << std::setw(3) << (i + 1) << "  pos " << std::setw(5) << s.start << "  accepted "
            << std::setw(2) << s.acceptedCount << "/" << D << "  len " << s.acceptanceLength()
            << "  anchor " << displayPiece(tok, s.anchor) << "\n";
        const int shown = std::min(D, s.acceptedCount + opt.maxPiecesAfterCut);
        std::ostringstream draft, target;
        for (int j = 0; j < shown; ++j) {
            if (j == s.acceptedCount) {
                draft << " |";
                target << " |";
            }
            const auto d = displayPiece(tok, s.drafted[static_cast<std::size_t>(j)]);
            const auto t = displayPiece(tok, s.targetTokens[static_cast<std::size_t>(j)]);
            const auto w = std::max(d.size(), t.size());
            const auto pad = [&](const std::string& x) { return x + std::string(w - x.size(), ' '); };
            const char* c = j < s.acceptedCount ? kGreen : (j == s.acceptedCount ? kRed : kDim);
            draft << ' ' << paint(c, pad(d));
            target << ' ' << pad(t);
        }
        if (shown == s.acceptedCount) {
            draft << " |";
            target << " |";
        }
        if (shown < D) draft << " ... (" << (D - shown) << " more)";
        out << "    draft :" << draft.str() << "\n";
        out << "    target:" << target.str() << "   bonus " << displayPiece(tok, s.bonusToken) << "\n";
    }
}

void printRunSummary(std::ostream& out, const RunResult& run) {
    const auto generated = static_cast<std::int64_t>(run.outputIds.size() - run.promptIds.size());
    out << std::fixed << std::setprecision(3);
    out << "prompt tokens " << run.promptIds.size() << ", generated " << generated << ", verify steps "
        << run.steps.size() << (run.stoppedAtEos ? " (stopped at a stop token)" : "") << "\n";
    out << "tau (mean acceptance length, bonus token included) = " << run.tau << "\n";
    long long committed = 0;
    for (int l : run.acceptanceLengths) committed += l;
    if (committed > generated - 1 && !run.stoppedAtEos)
        out << "(the steps committed " << committed + 1 << " tokens counting the first anchor; the output is cut at "
            << generated << " as the reference does, and tau counts every step whole)\n";
    out << "acceptance lengths:";
    for (int l : run.acceptanceLengths) out << ' ' << l;
    out << "\nacceptance-length histogram (length: steps):";
    for (std::size_t n = 1; n < run.acceptanceHistogram.size(); ++n)
        if (run.acceptanceHistogram[n]) out << "  " << n << ": " << run.acceptanceHistogram[n];
    out << "\nper-position acceptance (fraction of steps whose accepted prefix reaches block position j):\n ";
    for (std::size_t j = 1; j < run.perPositionAcceptance.size(); ++j)
        out << " j" << j << "=" << std::setprecision(2) << run.perPositionAcceptance[j];
    out << std::setprecision(1) << "\ntiming: prefill " << run.timing.prefillMs << " ms, decode "
        << run.timing.decodeMs << " ms, total " << run.timing.totalMs << " ms (" << run.device << ", "
        << run.dtype << ")";
    if (run.timing.peakPerDevice.size() > 1) {
        out << ", peak memory per device:";
        for (const auto& p : run.timing.peakPerDevice)
            out << " " << p.device << " " << (p.bytes >= 0 ? formatBytes(static_cast<std::uint64_t>(p.bytes)) : "n/a");
    } else if (run.timing.peakDeviceBytes >= 0) {
        out << ", peak device memory " << static_cast<double>(run.timing.peakDeviceBytes) / (1 << 20) << " MiB";
    }
    out << "\n";
    out.unsetf(std::ios::floatfield);
}

}  // namespace draftscope
