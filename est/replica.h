// The one model replica of a process and what updates it. At every step boundary it is the
// same, bit for bit, on every member of the job, whatever ESTs the member holds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <c10/core/Device.h>

#include "runtime/comm/communicator.h"
#include "runtime/models/model.h"
#include "runtime/optim/optimizer.h"
#include "runtime/reduce/gradient_reducer.h"

namespace tl::est {

struct Replica {
  c10::Device device{c10::kCPU};
  std::shared_ptr<models::Model> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  // Over `deviceComm`; rebuilt (keeping its state) when the job's members change.
  std::unique_ptr<reduce::GradientReducer> reducer;
  comm::Communicator* deviceComm = nullptr;  // gradients, buffers; null outside the job

  // Reduces over `device` from now on (reduction mode `mode`), keeping the current reducer's
  // state when there is one.
  void useReducer(Reduction mode, comm::Communicator& device, int64_t bucketBytes);
};

}  // namespace tl::est
