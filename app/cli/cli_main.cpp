// draftscope-cli: run a target and a DFlash drafter on a prompt, evaluate a prompt set into a
// results file, or dump a target forward. This file only registers the subcommands and
// dispatches; each lives in its own <name>_command.cpp.
// Exit codes: 0 success, 1 bad input or failed work (message on stderr), 2 usage error,
// 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).

#include "cli/compare_command.h"
#include "cli/diagnose_command.h"
#include "cli/eval_command.h"
#include "cli/forward_command.h"
#include "cli/inspect_command.h"
#include "cli/merge_command.h"
#include "cli/run_command.h"
#include "cli/track_command.h"
#include "draftscope/errors.h"
#include "draftscope/file_io.h"
#include "draftscope/settings_validation.h"
#include "draftscope/version.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string_view>

using namespace draftscope;
using namespace draftscope::cli;

namespace {

std::atomic<bool> g_cancel{false};
/// First Ctrl-C: stop after the current verify step, keeping what finished. Second: exit now
/// (loading and prefill are not interruptible otherwise), removing any output file being
/// written (no partial file remains).
extern "C" void onSigint(int) {
    if (g_cancel.exchange(true)) {
        removePendingOutputFiles();
        std::_Exit(130);
    }
}

/// SIGTERM: exit now, removing any output file being written.
extern "C" void onSigterm(int) {
    removePendingOutputFiles();
    std::_Exit(143);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"draftscope-cli: run DFlash drafters against their target and see where drafts go wrong"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "draftscope " DRAFTSCOPE_VERSION);

    RunCommand run;
    run.add(app);
    ForwardCommand forward;
    forward.add(app);
    DiagnoseCommand diagnose;
    diagnose.add(app);
    InspectCommand inspect;
    inspect.add(app);
    CompareDraftersCommand compare;
    compare.add(app);
    CompareTargetsCommand compareTargets;
    compareTargets.add(app);
    EvalCommand eval;
    eval.add(app);
    MergeCommand merge;
    merge.add(app);
    TrackCommand track;
    track.add(app);

    // An empty value ("--temperature ''") is refused by name, never read as 0 or as not given.
    const CLI::Validator nonEmpty(
        [](std::string& v) { return v.empty() ? std::string("expected a value, found an empty string") : std::string(); },
        "", "non-empty");
    for (auto* sub : app.get_subcommands([](CLI::App*) { return true; }))
        for (auto* opt : sub->get_options())
            if (opt->get_type_size_max() > 0) opt->check(nonEmpty);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // "draftscope-cli bogus", "draftscope-cli --bogus", "draftscope-cli -- bogus": CLI11
        // would say only that a subcommand is required; name the word instead.
        const auto every = app.get_subcommands([](CLI::App*) { return true; });  // not only the parsed ones
        const int first = argc > 1 && std::string_view(argv[1]) == "--" ? 2 : 1;
        const bool helpOrVersion = e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success);
        if (!helpOrVersion && argc > first &&
            std::none_of(every.begin(), every.end(), [&](CLI::App* s) { return s->check_name(argv[first]); })) {
            std::string names;
            for (const auto* sub : every) names += (names.empty() ? "" : ", ") + sub->get_name();
            const bool option = first == 1 && argv[1][0] == '-';
            std::cerr << "error: " << (option ? "unknown option '" : "unknown subcommand '") << escapeForDisplay(argv[first])
                      << (option ? "' before the subcommand" : "'") << ": expected one of " << names
                      << (option ? " (a subcommand's options follow it: draftscope-cli run --help)" : "")
                      << "\nRun with --help for more information.\n";
            return 2;
        }
        const int code = app.exit(e);  // prints help, version or the usage error
        return code == 0 ? 0 : 2;
    }
    std::signal(SIGINT, onSigint);
    std::signal(SIGTERM, onSigterm);
    try {
        if (*run.command) return run.run(g_cancel);
        if (*forward.command) return forward.run();
        if (*diagnose.command) return diagnose.run(g_cancel);
        if (*inspect.command) return inspect.run();
        if (*compare.command) return compare.run(g_cancel);
        if (*compareTargets.command) return compareTargets.run();
        if (*eval.command) return eval.run(g_cancel);
        if (*merge.command) return merge.run();
        if (*track.command) return track.run(g_cancel);
    } catch (const Cancelled&) {
        std::cerr << "\ninterrupted\n";
        return 130;
    } catch (const InvalidSetting& e) {
        // The engine's own checks (while loading) name options as the backend does
        // ("cuda-graphs"): shown as the subcommand spells them where it has that option.
        const auto subcommands = app.get_subcommands();
        const auto shown = subcommands.empty() ? e : cli::spelledAsTyped(e, subcommands.front());
        std::cerr << "error: " << escapeForDisplay(shown.what()) << "\n";
        return 1;
    } catch (const Error& e) {
        std::cerr << "error: " << escapeForDisplay(e.what()) << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "error: internal failure: " << escapeForDisplay(e.what()) << "\n";
        return 1;
    }
    return 2;
}
