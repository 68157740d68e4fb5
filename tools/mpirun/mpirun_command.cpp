#include "tools/mpirun/mpirun_command.h"

namespace tl::mpirun {

std::vector<std::string> argvOf(const LaunchCommand& c) {
  std::vector<std::string> a{c.mpirun};
  if (!c.hosts.empty()) a.insert(a.end(), {"--host", formatHostList(c.hosts)});
  if (c.oversubscribe) a.push_back("--oversubscribe");
  if (c.allowRunAsRoot) a.push_back("--allow-run-as-root");
  if (!c.bindTo.empty()) a.insert(a.end(), {"--bind-to", c.bindTo});
  a.insert(a.end(), {"-np", std::to_string(c.processes)});
  for (const auto& [name, value] : c.mca) a.insert(a.end(), {"--mca", name, value});
  for (const auto& name : c.exportEnv) a.insert(a.end(), {"-x", name});
  a.insert(a.end(), c.extraArgs.begin(), c.extraArgs.end());
  a.push_back(c.tlLaunch);
  a.insert(a.end(), c.launchFlags.begin(), c.launchFlags.end());
  return a;
}

}  // namespace tl::mpirun
