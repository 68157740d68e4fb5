// tl-launch's flags: how argv becomes a JobConfig.
#pragma once

#include <string>
#include <vector>

#include "runtime/job_config.h"

namespace tl::launcher {

struct LaunchOptions {
  JobConfig job;
  bool help = false;
  std::string usage;  // filled when help is true
};

// Parses tl-launch's arguments (argv[0] excluded). Throws InputError naming the flag.
LaunchOptions parseLaunchOptions(const std::vector<std::string>& args);

// Where the embedded default dataset lives (Debian's dataset-fashion-mnist).
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace tl::launcher
