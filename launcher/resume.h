// Resuming a checkpointed job: the checkpoint's definition wins; flags that would change it are
// refused, flags about where and how it runs (processes, placement, loader threads, folders)
// are taken from the new launch.
#pragma once

#include "launcher/launch_options.h"
#include "runtime/job_config.h"

namespace tl::launcher {

// The config a resumed launch runs with. InputError naming each flag that would change the
// job's definition, with both values.
JobConfig resumedConfig(const JobConfig& saved, int savedLogicalWorkers, const LaunchOptions& cli);

}  // namespace tl::launcher
