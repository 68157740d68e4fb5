// tl-coordinator: the per-node loader-worker coordinator (dataload/tuning/coordinator_server.h).
// Usually started on demand by the first job on the node (ensureCoordinator); it exits by
// itself once no job has been connected for --idle-exit-seconds. SIGTERM or SIGINT: stop now.
//
// Exit status: 0 after an idle exit or a stop signal; 2 for bad flags or when another
// coordinator already serves the run directory; 1 for an internal error.
#include <signal.h>

#include <cstdio>
#include <string>

#include "common/check.h"
#include "common/signals.h"
#include "dataload/tuning/coordinator_server.h"
#include "launcher/flags.h"

namespace {

constexpr const char* kProgram = "tl-coordinator";

tl::tuning::CoordinatorServer* gServer = nullptr;

void onStopSignal(int) {
  if (gServer) gServer->requestStop();  // writes a pipe: async-signal-safe
}

void installStopSignals() {
  tl::handleSignals({SIGTERM, SIGINT}, onStopSignal);
  signal(SIGPIPE, SIG_IGN);  // sends use MSG_NOSIGNAL already; this covers the log file too
}

int run(int argc, char** argv) {
  tl::tuning::CoordinatorOptions options;
  options.runDir = tl::tuning::defaultRunDir();
  tl::launcher::FlagSet flags(
      kProgram,
      "Splits this node's CPU cores among the loader-worker pools of the training jobs on it,\n"
      "so that their summed throughput is as high as their fitted models predict. Jobs talk to\n"
      "it over <run-dir>/coordinator.sock; decisions are logged to <run-dir>/coordinator.log.");
  flags.addString("run-dir", &options.runDir, "directory of the socket, locks and log");
  flags.addInt("loader-cores", &options.balancer.loaderCores,
               "loader cores to split; 0: hardware cores minus the jobs' compute threads", 0);
  flags.addDouble("idle-exit-seconds", &options.idleExitSeconds,
                  "exit after this long without a job; 0: never", 0);
  flags.addDouble("min-gain", &options.balancer.minGain,
                  "move cores only when the predicted total grows by more than this share", 0, 1);
  flags.addInt("hardware-cores", &options.balancer.hardwareCores, "cores of the node; 0: detect",
               0);
  if (!flags.parse(argc, argv)) {
    std::fputs(flags.usage().c_str(), stdout);
    return 0;
  }
  tl::tuning::CoordinatorServer server(options);
  gServer = &server;
  installStopSignals();
  server.run();
  gServer = nullptr;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const tl::InputError& e) {
    // FlagSet's messages may already start with the program name.
    std::string message = e.what();
    const std::string prefix = std::string(kProgram) + ": ";
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", kProgram, e.what());
    return 1;
  }
}
