#include "cli/replicas.h"

#include "cli/cli_args.h"
#include "draftscope/errors.h"
#include "draftscope/evaluation.h"

#include <exception>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

namespace draftscope::cli {

namespace {

/// One replica's engine: the target and every drafter loaded with `options`; `log` prints a
/// line (drafter warnings only when `warn`, once for all replicas).
std::unique_ptr<Engine> loadReplica(const std::string& targetDir, const std::vector<std::string>& drafterDirs,
                                    const LoadOptions& options, int replicas, bool warn,
                                    const std::function<void(const std::string&)>& log) {
    auto engine = std::make_unique<Engine>();
    log("loading target " + targetDir + " (" + options.device + ", " + options.dtype +
        (replicas > 1 && options.threads > 0 ? ", " + std::to_string(options.threads) + " CPU threads" : "") + ")");
    engine->loadTarget(targetDir, options);
    for (const auto& dir : drafterDirs) {
        log("loading drafter " + dir);
        const auto d = engine->loadDrafter(dir);
        if (warn)
            for (const auto& w : d.warnings) log("warning: drafter " + dir + ": " + w);
    }
    return engine;
}

}  // namespace

/// One engine per replica (replicaLoadOptions: its device group and CPU threads), each
/// loaded on its own thread. Rethrows the first loading error, naming the replica when
/// there are several.
std::vector<std::unique_ptr<Engine>> loadReplicas(const std::string& targetDir, const std::vector<std::string>& drafterDirs,
                                                  const LoadOptions& loadOptions, int replicas) {
    const auto options = replicaLoadOptions(loadOptions, replicas);
    const bool many = options.size() > 1;
    std::vector<std::unique_ptr<Engine>> engines(options.size());
    std::vector<std::exception_ptr> errors(options.size());
    std::mutex logMutex;
    auto load = [&](std::size_t r) {
        const std::string who = many ? "replica " + std::to_string(r) : std::string();
        try {
            engines[r] = loadReplica(targetDir, drafterDirs, options[r], replicas, r == 0, [&](const std::string& line) {
                std::lock_guard lock(logMutex);
                std::cerr << (many ? who + ": " : "") << line << "\n";
            });
        } catch (const InvalidSetting& e) {  // an option the engine refuses while loading: as typed
            const auto named = spelledAsTyped(e);
            errors[r] = many ? std::make_exception_ptr(Error(who + " (" + options[r].device + "): " + named.what()))
                             : std::make_exception_ptr(named);
        } catch (const Error& e) {
            errors[r] = many ? std::make_exception_ptr(Error(who + " (" + options[r].device + "): " + e.what()))
                             : std::current_exception();
        } catch (...) {
            errors[r] = std::current_exception();
        }
    };
    {
        std::vector<std::jthread> threads;
        for (std::size_t r = 1; r < options.size(); ++r) threads.emplace_back(load, r);
        load(0);
    }
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
    return engines;
}


}  // namespace draftscope::cli
