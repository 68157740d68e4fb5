// tl-coordinator: the per-node loader-worker coordinator (coordinator/coordinator_server.h).
// Usually started on demand by the first job on the node (ensureCoordinator); it exits by
// itself once no job has been connected for --idle-exit-seconds. SIGTERM or SIGINT: stop now.
//
// Exit status: 0 after an idle exit or a stop signal; 2 for bad flags or when another
// coordinator already serves the run directory; 1 for an internal error.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "common/check.h"
#include "common/signals.h"
#include "coordinator/coordinator_server.h"
#include "common/cli/cli.h"

namespace {

constexpr const char* kProgram = "tl-coordinator";

tl::coordinator::CoordinatorServer* gServer = nullptr;

void onStopSignal(int) {
  if (gServer) gServer->requestStop();  // writes a pipe: async-signal-safe
}

// Room for many jobs' connections: the soft descriptor limit (often 1024) up to the hard one.
// The server still fits its connection limit to whatever limit holds.
void raiseDescriptorLimit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
  files.rlim_cur = files.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &files);
}

void installStopSignals() {
  tl::handleSignals({SIGTERM, SIGINT}, onStopSignal);
  signal(SIGPIPE, SIG_IGN);  // sends use MSG_NOSIGNAL already; this covers the log file too
}

int run(int argc, char** argv) {
  tl::coordinator::CoordinatorOptions options;
  options.runDir = tl::coordinator::defaultRunDir();
  auto app = tl::cli::makeApp(
      kProgram,
      "Splits this node's CPU cores among the loader-worker pools of the training jobs on it,\n"
      "so that their summed throughput is as high as their fitted models predict (and, for\n"
      "jobs with a dataset cache, the cache memory too). Jobs talk to\n"
      "it over <run-dir>/coordinator.sock; decisions are logged to <run-dir>/coordinator.log.");
  app->add_option("--run-dir", options.runDir, "directory of the socket, locks and log")
      ->capture_default_str();
  tl::cli::addInt(*app, "--loader-cores", &options.balancer.loaderCores,
                  "loader cores to split; 0: hardware cores minus the jobs' compute threads", 0);
  tl::cli::addDouble(*app, "--idle-exit-seconds", &options.idleExitSeconds,
                     "exit after this long without a job; 0: never", 0);
  tl::cli::addDouble(*app, "--min-gain", &options.balancer.minGain,
                     "move cores only when the predicted total grows by more than this share", 0,
                     1);
  double cacheMb = 0;
  tl::cli::addDouble(*app, "--cache-mb", &cacheMb,
                     "dataset-cache memory to split among jobs with --cache-mb (MiB); 0: the sum "
                     "of their own budgets",
                     0, 1 << 30);
  tl::cli::addInt(*app, "--hardware-cores", &options.balancer.hardwareCores,
                  "cores of the node; 0: detect", 0);
  tl::cli::addDouble(*app, "--register-timeout-seconds", &options.registerTimeoutSeconds,
                     "close a connection that has not registered by then; 0: never", 0);
  tl::cli::addInt(*app, "--max-connections", &options.maxConnections,
                  "most connections served at once (lowered to fit the descriptor limit)", 1);
  if (!tl::cli::parse(*app, argc, argv)) return tl::cli::kExitOk;
  options.balancer.cacheBytes = int64_t(cacheMb * 1024.0 * 1024.0);
  raiseDescriptorLimit();
  tl::coordinator::CoordinatorServer server(options);
  gServer = &server;
  installStopSignals();
  server.run();
  gServer = nullptr;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return run(argc, argv); });
}
