#pragma once
// Loading one engine per replica (`eval` and `track --replicas`): each on its own thread,
// with its device group and CPU threads (replicaLoadOptions, draftscope/evaluation.h).

#include "draftscope/engine.h"

#include <memory>
#include <string>
#include <vector>

namespace draftscope::cli {

/// One engine per replica with the target `targetDir` and the drafters `drafterDirs` (none
/// for `track`, which loads each checkpoint itself), logging to stderr (prefixed "replica N: "
/// with several; drafter warnings once). Rethrows the first loading error, naming the replica
/// and its devices when there are several; an InvalidSetting as the command line spells it.
std::vector<std::unique_ptr<Engine>> loadReplicas(const std::string& targetDir, const std::vector<std::string>& drafterDirs,
                                                  const LoadOptions& loadOptions, int replicas);

}  // namespace draftscope::cli
