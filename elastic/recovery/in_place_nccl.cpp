#include "elastic/recovery/in_place_nccl.h"

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "runtime/comm/nccl/nccl_communicator.h"

namespace tl::elastic {

void abandonJobNccl(const JobNccl& nccl) {
  if (nccl.communicator != nullptr) comm::abandonNcclCommunicator(*nccl.communicator);
}

std::unique_ptr<comm::Communicator> ncclAmongSurvivors(comm::Communicator& survivors, const JobNccl& nccl) {
  if (nccl.communicator == nullptr) return nullptr;
  const double began = unixNow();
  std::unique_ptr<comm::Communicator> gpu = comm::createNcclCommunicator(survivors, nccl.deviceIndex);
  if (survivors.rank() == 0)
    spdlog::info("NCCL among the {} survivors set up in {:.3f} s", survivors.size(), unixNow() - began);
  return gpu;
}

}  // namespace tl::elastic
