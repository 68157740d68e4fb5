#include "est/executor.h"

#include "common/check.h"
#include "est/executor_builder.h"
#include "est/loader_tuning.h"
#include "est/local_round.h"

namespace tl::est {

EstExecutor::EstExecutor(Parts parts)
    : config_(std::move(parts.config)),
      placement_(std::move(parts.placement)),
      host_(parts.host),
      data_(std::move(parts.data)),
      replica_(std::move(parts.replica)),
      backend_(std::move(parts.backend)),
      plan_(std::move(parts.plan)),
      local_(std::move(parts.local)) {}

EstExecutor::EstExecutor(JobConfig config, Placement placement, comm::Communicator& comm,
                         comm::Communicator& deviceComm)
    : EstExecutor(ExecutorBuilder(std::move(config)).layout(std::move(placement), comm, deviceComm).parts()) {}

EstExecutor::~EstExecutor() = default;

comm::Communicator& EstExecutor::comm() {
  TL_CHECK(host_ != nullptr, "this process left the job: it has no communicator");
  return *host_;
}

}  // namespace tl::est
