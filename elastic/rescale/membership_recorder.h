// What resource recording (launcher/usage_recording.h) needs from an in-place rescale
// (elastic/rescale/membership.h), without the rescale knowing about recording: the communicators the
// executor is given are the recorder's views of the raw ones (counting their traffic), and the
// members that leave hand their figures to the lead before they go.
#pragma once

#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"

namespace tl::elastic {

class MembershipRecorder {
 public:
  virtual ~MembershipRecorder() = default;
  // The communicator the executor uses in place of `raw` (which outlives it).
  virtual std::unique_ptr<comm::Communicator> view(comm::Communicator& raw) = 0;
  // Collective over `host` (the members before the change, raw: not counted), at the step
  // boundary where the members marked 1 in `leave` (by rank of `host`) leave the job.
  virtual void beforeLeave(comm::Communicator& host, const std::vector<int>& leave, int64_t stepsDone) = 0;
};

}  // namespace tl::elastic
