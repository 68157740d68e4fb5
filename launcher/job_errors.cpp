#include "launcher/job_errors.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "common/check.h"
#include "runtime/comm/json_collectives.h"
#include "runtime/train/out_of_memory.h"

namespace tl::launcher {

namespace {

// c10::Error::what() is the message, then "Exception raised from ..." or "frame #0: ..." lines.
std::string withoutBacktrace(const std::string& what) {
  size_t cut = std::string::npos;
  for (const char* marker : {"\nException raised from ", "\nframe #"})
    cut = std::min(cut, what.find(marker));
  return cut == std::string::npos ? what : what.substr(0, cut);
}

}  // namespace

void printError(const std::string& program, const std::string& what) {
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), withoutBacktrace(what).c_str());
  std::fflush(stderr);
}

std::string errorMessage(const std::exception& e, const std::string& during) {
  if (std::optional<size_t> bytes = train::outOfMemoryBytes(e)) {
    return tl::str("out of memory ", during, ": an allocation",
                   *bytes > 0 ? " of " + train::humanBytes(*bytes) : "", " failed");
  }
  if (const auto* c10Error = dynamic_cast<const c10::Error*>(&e))
    return c10Error->what_without_backtrace();
  return withoutBacktrace(e.what());
}

int exitCodeFor(const std::exception& e) {
  return dynamic_cast<const InputError*>(&e) || train::outOfMemoryBytes(e) ? 2 : 1;
}

int prepareOnAllRanks(comm::Communicator& world, const std::string& program,
                      const std::function<void()>& prepare) {
  int code = 0;
  std::string message;
  try {
    prepare();
  } catch (const std::exception& e) {
    code = exitCodeFor(e);
    message = errorMessage(e);
  }
  const auto all = comm::allgatherJson(world, code);
  int firstFailed = -1, worst = 0;
  for (int r = 0; r < world.size(); ++r) {
    const int c = all.at(size_t(r)).get<int>();
    if (c != 0 && firstFailed < 0) firstFailed = r;
    worst = std::max(worst, c);
  }
  if (worst == 0) return 0;
  if (world.rank() == firstFailed) {
    printError(program, world.size() > 1 && firstFailed != 0
                            ? tl::str("rank ", firstFailed, ": ", message)
                            : message);
  }
  return worst;
}

}  // namespace tl::launcher
