#include "cli/eval_command.h"

#include "cli/eval_report.h"
#include "cli/replicas.h"
#include "cli/progress_bar.h"
#include "draftscope/errors.h"
#include "draftscope/evaluation.h"
#include "draftscope/file_io.h"
#include "draftscope/prompt_set.h"
#include "draftscope/sha256.h"
#include "draftscope/version.h"

#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace draftscope {


int evalCommand(const EvalArgs& args, const std::atomic<bool>* cancel) {
    // Bad input fails before the models load: the paths, then the prompt set.
    std::vector<cli::InputPath> inputs{{"--prompts", args.promptsPath, PathKind::File},
                                       {"--target", args.targetDir, PathKind::Directory}};
    for (const auto& d : args.drafterDirs) inputs.push_back({"--drafter", d, PathKind::FileOrDirectory});
    cli::checkPaths(inputs, {{"--out", args.outPath}, {"--json", args.jsonOut}});
    const auto entries = loadPromptSetFile(args.promptsPath);
    const std::size_t items = plannedItems(entries, args.settings, args.shard);

    const auto engines = cli::loadReplicas(args.targetDir, args.drafterDirs, args.load, args.replicas);
    std::vector<Engine*> replicas;
    for (const auto& e : engines) replicas.push_back(e.get());
    const int runsPerItem = static_cast<int>(args.drafterDirs.size()) * (1 + static_cast<int>(args.settings.ddtreeBudgets.size()));
    std::cerr << "prompt set " << args.promptsPath << ": " << entries.size() << " line(s), running " << items
              << " prompt(s)" << (args.settings.allTurns ? " (every turn)" : "")
              << (args.shard.count > 1 ? " of shard " + std::to_string(args.shard.index) + "/" + std::to_string(args.shard.count) : "")
              << (replicas.size() > 1 ? " on " + std::to_string(replicas.size()) + " replicas" : "") << ", " << runsPerItem
              << " run(s) each, at most " << args.settings.run.maxNewTokens << " new tokens per run\n";

    const bool tty = ::isatty(STDERR_FILENO);
    ProgressBar bar(std::cerr, tty);
    EvalCallbacks cb;
    cb.progress = [&](const EvalProgress& p) {
        const std::string label = (replicas.size() > 1 ? "r" + std::to_string(p.replica) + " " : "") +
                                  std::to_string(p.item + 1) + "/" + std::to_string(p.items) + " " + p.id + "  run " +
                                  std::to_string(std::min(p.run + 1, p.runsPerItem)) + "/" + std::to_string(p.runsPerItem);
        bar.update(p.fraction(), label, p.run == 0 && p.tokensTotal == 0);
    };
    cb.itemDone = [&](const PromptResult& p, std::size_t index, std::size_t total) {
        bar.clear();
        printPromptLine(std::cout, args.settings.ddtreeBudgets, p, index, total);
        std::cout << std::flush;
    };

    ResultsFile results = runEvaluation(replicas, entries, args.settings, args.shard, cb, cancel);
    bar.clear();
    results.producer = "draftscope-cli eval " DRAFTSCOPE_VERSION;
    std::error_code ec;
    const auto absPrompts = std::filesystem::absolute(args.promptsPath, ec);
    results.promptSetPath = ec ? args.promptsPath : absPrompts.lexically_normal().string();
    results.promptSetSha256 = sha256File(args.promptsPath);

    writeResultsFile(args.outPath, results);
    printEvalSummary(std::cout, results);
    std::cout << std::flush;
    std::cerr << "\nwrote " << args.outPath << " (" << results.prompts.size() << " prompt(s), "
              << std::filesystem::file_size(args.outPath) / 1024 << " KiB; open it with: draftscope " << args.outPath
              << ")\n";
    if (!args.jsonOut.empty()) {
        writeFileAtomically(args.jsonOut, evalSummaryJson(results, args.outPath)
                                               .dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        std::cerr << "wrote " << args.jsonOut << "\n";
    }
    std::size_t failed = 0;
    for (const auto& p : results.prompts) failed += !p.error.empty();
    if (!results.complete) {
        std::cerr << "interrupted: " << results.prompts.size() << " of " << items
                  << " prompt(s) finished and are in the results file\n";
        return 130;
    }
    if (failed) {
        std::cerr << "error: " << failed << " of " << results.prompts.size()
                  << " prompt(s) failed (their errors are in the results file and above)\n";
        return 1;
    }
    return 0;
}

namespace cli {

void EvalCommand::add(CLI::App& app) {
    auto* eval = command = app.add_subcommand("eval", "run a prompt set (JSONL) and write one results file the GUI opens");
    eval->add_option("--target", args.targetDir, "target model directory (HF layout)")->required();
    eval->add_option("--drafter", args.drafterDirs, "DFlash drafter directory (repeatable: compare drafters)")
        ->required()->take_all();
    eval->add_option("--prompts", args.promptsPath,
                     "prompt set, JSONL: {\"prompt\": TEXT} or {\"turns\": [...]} or {\"messages\": [...]}, optional id")
        ->required();
    eval->add_option("--out", args.outPath, "results file to write (e.g. results.dsresults)")->required();
    eval->add_option("--json", args.jsonOut, "also write a JSON summary (macro_tau, per-prompt tau, rates, histogram)");
    eval->add_option("--max-new", args.settings.run.maxNewTokens, "tokens to generate per prompt")
        ->capture_default_str();
    eval->add_option("--limit", args.settings.limit, "use only the first N lines of the prompt set (0 = all)")
        ->capture_default_str()
        ->check(CLI::Validator(
            [](std::string& v) {
                const bool digits = !v.empty() && v.size() <= 18 &&
                                    v.find_first_not_of("0123456789") == std::string::npos;
                return digits ? std::string()
                              : "expected an integer >= 0 (0 = all), found '" + escapeNonPrintable(v) + "'";
            },
            "", "limit"));
    budgets.add(*eval);
    eval->add_option("--turns", turns, "chat prompts: 'first' user turn only, or 'all' turns (each turn sees the model's "
                                       "earlier answers, as the DFlash benchmark)")
        ->capture_default_str()->check(CLI::IsMember({"first", "all"}));
    eval->add_flag("--chat", args.settings.chatWrapRaw, "wrap raw 'prompt' texts as one ChatML user turn");
    eval->add_flag("--no-thinking", noThinking, "chat prompts: append Qwen3's empty <think></think> block");
    eval->add_flag("--ignore-eos", args.settings.run.ignoreEos, "do not stop at end-of-sequence tokens");
    loop.add(*eval, args.settings.run);
    device.add(*eval);
    eval->add_option("--replicas", args.replicas,
                     "engine replicas run in parallel, each taking prompts from a shared queue (1.." +
                         std::to_string(kMaxReplicas) + "). --device is cut into this many equal groups "
                         "(cuda:0,cuda:1,cuda:2,cuda:3 with 2: cuda:0,cuda:1 and cuda:2,cuda:3); a single device is "
                         "used by every replica. Replicas on the CPU share --threads (0 = all cores): each gets "
                         "threads / replicas, at least 1. The results file is the same as with one replica")
        ->capture_default_str();
    eval->add_option("--shard", shard,
                     "run part I of N of the prompt set (I/N, 0 <= I < N): line k (0-based, after --limit) when "
                     "k mod N = I, with all its turns; combine the N files with `draftscope-cli merge`");
}

int EvalCommand::run(const std::atomic<bool>& cancel) const {
    EvalArgs a = args;
    loop.apply(a.settings.run);
    a.settings.ddtreeBudgets = budgets.budgets(a.settings.run.temperature);
    a.load = device.load;
    a.settings.allTurns = turns == "all";
    a.settings.thinking = !noThinking;
    a.settings.device = device.load.device;
    a.settings.dtype = device.load.dtype;
    checkOptions([&] {  // each replica's device group, dtype and threads, as DeviceArgs::check for one
        if (device.gpuMemoryError) throw *device.gpuMemoryError;
        for (const auto& o : replicaLoadOptions(a.load, a.replicas)) validate(o);
        a.shard = shard.empty() ? ResultsShard{} : parseShard(shard);
    });
    return evalCommand(a, &cancel);
}

}  // namespace cli

}  // namespace draftscope
