#include "est/executor.h"

#include <c10/core/Event.h>

#include <cstdlib>
#include <string>

#include "common/check.h"
#include "est/executor_builder.h"
#include "est/loader_tuning.h"
#include "est/local_round.h"
#include "runtime/train/step_trace.h"

namespace tl::est {
namespace {

// TL_TEST_UPDATE_DELAY_MS: a test hook. Every optimizer update holds on this long after it
// changed the parameters, so that tests can land a signal inside it, and keep a short job
// running while they send it commands. Timing only: the bits do not change.
int updateDelayFromEnvironment() {
  const char* value = std::getenv("TL_TEST_UPDATE_DELAY_MS");
  if (!value || !*value) return 0;
  char* end = nullptr;
  const long ms = std::strtol(value, &end, 10);
  if (*end != '\0' || ms < 0 || ms > 60000)
    throw InputError(str("TL_TEST_UPDATE_DELAY_MS: '", value,
                         "' is not a whole number of milliseconds from 0 to 60000"));
  return int(ms);
}

}  // namespace

EstExecutor::EstExecutor(Parts parts)
    : config_(std::move(parts.config)),
      placement_(std::move(parts.placement)),
      host_(parts.host),
      data_(std::move(parts.data)),
      replica_(std::move(parts.replica)),
      backend_(std::move(parts.backend)),
      plan_(std::move(parts.plan)),
      local_(std::move(parts.local)),
      updateDelayMs_(updateDelayFromEnvironment()) {}

EstExecutor::EstExecutor(JobConfig config, Placement placement, comm::Communicator& comm,
                         comm::Communicator& deviceComm)
    : EstExecutor(ExecutorBuilder(std::move(config)).layout(std::move(placement), comm, deviceComm).parts()) {}

EstExecutor::~EstExecutor() = default;

comm::Communicator& EstExecutor::comm() {
  TL_CHECK(host_ != nullptr, "this process left the job: it has no communicator");
  return *host_;
}

}  // namespace tl::est
