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

// Issue 43: what a process that joins runs once its executor is built, before it says it is
// ready (while the job trains), so that its first step on the new layout is not a cold one:
// forward and backward of a trial batch read from the job's data (built-in models and
// TorchScript modules alike), twice, and an update of the job's optimizer kind on a throwaway
// copy of the parameters. It leaves every tensor that defines the job's bits as it found it
// (parameters, buffers, the optimizer and reducer state, the ESTs' contexts, the default
// generators); the gradients stay allocated and zeroed, as zero_grad leaves them. A failure is
// logged and the process joins cold (the state is restored all the same).
void warmUpForJoin(est::EstExecutor& executor);

// Returns the executor, its membership and the command to apply with the job's members, or
// nullptr when the lead cancelled (the reason is logged). InputError/Error when building failed
// (already reported to the lead). `beforeBuild` is called with the job once the offer is in,
// before anything is built.
std::unique_ptr<JoinedProcess> joinRunningJob(comm::ParentLink& lead,
                                              const std::function<void(const JobConfig&)>& beforeBuild = {});

}  // namespace tl::elastic
