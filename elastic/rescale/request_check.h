// The lead's answer to a tl-ctl request: the layout command that carries it out, or the reason
// it cannot be had. A pure function of the request (with what was learnt about it off the
// training thread), the job's layout at the boundary and the process slots, so that every rule
// is tested as a table (tests/elastic/test_request_check.cpp). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/control_protocol.h"
#include "elastic/rescale/host_lookup.h"
#include "elastic/rescale/layout_command.h"

namespace tl::elastic {

// A request as the lead took it off the control channel.
struct TakenRequest {
  control::Request request;
  int64_t arrivedAfter = 0;            // the step the job had done when it was taken
  UnreachableHosts unreachableHosts;   // of request.hosts (HostLookup)
};

// The job at the boundary where the request is checked.
struct JobLayout {
  int logicalWorkers = 0;
  std::vector<int> counts;       // ESTs per member, by rank
  int64_t stepsDone = 0;
  int64_t totalSteps = 0;
  bool checkpointFolder = false;  // --checkpoint-dir or --output-dir
};

// Where processes a grow starts can run. Open MPI 4.1's mpirun never exits after a spawn it
// could not place, so a grow past the slots is refused before it reaches mpirun.
struct ProcessSlots {
  bool canStartProcesses = false;  // the job knows its own executable
  int slots = 0;                   // processes mpirun may run at once (MPI universe size); 0: unknown
  bool oversubscribe = false;      // mpirun --oversubscribe: no limit
  int startedWithTheJob = 0;       // they live (idle, once they leave) until the job ends
  int startedByGrows = 0;          // members now that a grow started (they exit when they leave)
};

struct RequestVerdict {
  LayoutCommand command;  // when accepted
  std::string refusal;    // empty: accepted
  bool accepted() const { return refusal.empty(); }
};

RequestVerdict checkRequest(const TakenRequest& taken, const JobLayout& layout, const ProcessSlots& slots);

// ESTs per process when none are named: as even as can be, the first ones one more.
std::vector<int> evenCounts(int logicalWorkers, int processes);

}  // namespace tl::elastic
