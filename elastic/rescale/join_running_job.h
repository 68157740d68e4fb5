// The grow protocol, the started process's side (grow.h has the lead's): receives the offer,
// builds its executor while the job trains, says it is ready, waits for its join, joins.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "elastic/rescale/grow.h"
#include "elastic/rescale/layout_command.h"
#include "elastic/rescale/membership.h"
#include "est/executor.h"
#include "runtime/comm/mpi/mpi_spawn.h"

namespace tl::elastic {

struct JoinedProcess {
  JoinOffer offer;
  Membership membership;
  std::vector<std::unique_ptr<comm::Communicator>> retired;  // until the first layout change is done
  std::unique_ptr<est::EstExecutor> executor;
  LayoutCommand command;  // to apply with the job's members (it carries their ESTs before it)
};

// Returns the executor, its membership and the command to apply with the job's members, or
// nullptr when the lead cancelled (the reason is logged). InputError/Error when building failed
// (already reported to the lead). `beforeBuild` is called with the job once the offer is in,
// before anything is built.
std::unique_ptr<JoinedProcess> joinRunningJob(comm::ParentLink& lead,
                                              const std::function<void(const JobConfig&)>& beforeBuild = {});

}  // namespace tl::elastic
