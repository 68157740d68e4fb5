#include "launcher/job_errors.h"

#include <ATen/ATen.h>

#include <cstdio>

#include "common/check.h"

namespace tl::launcher {

void printError(const std::string& program, const std::string& what) {
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), what.c_str());
  std::fflush(stderr);
}

int prepareOnAllRanks(comm::Communicator& world, const std::string& program,
                      const std::function<void()>& prepare) {
  int code = 0;
  std::string message;
  try {
    prepare();
  } catch (const InputError& e) {
    code = 2;
    message = e.what();
  } catch (const std::exception& e) {
    code = 1;
    message = e.what();
  }
  at::Tensor mine = at::full({1}, code, at::kInt);
  at::Tensor all = world.allgather(mine).view({-1});
  int firstFailed = -1, worst = 0;
  for (int r = 0; r < world.size(); ++r) {
    int c = all[r].item<int>();
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
