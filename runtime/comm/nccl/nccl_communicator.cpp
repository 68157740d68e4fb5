// The NCCL backend's public face. Always compiled: without TL_HAVE_NCCL it says so clearly.
#include "runtime/comm/nccl/nccl_communicator.h"

#include "common/check.h"

#if TL_HAVE_NCCL
#include "runtime/comm/nccl/nccl_detail.h"
#endif

namespace tl::comm {

#if TL_HAVE_NCCL

bool ncclAvailable() { return true; }

int ncclVisibleDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error for this question
    return 0;
  }
  return count;
}

std::unique_ptr<Communicator> createNcclCommunicator(Communicator& bootstrap, int device) {
#if TL_NCCL_HAS_COMM_SPLIT
  std::unique_ptr<Communicator> nccl = detail::setUpNcclCommunicator(bootstrap, device, nullptr);
#else
  // Splitting will need a bootstrap of our own, one the caller cannot destroy under us.
  std::unique_ptr<Communicator> own = bootstrap.split(0, bootstrap.rank());
  Communicator& ownRef = *own;
  std::unique_ptr<Communicator> nccl = detail::setUpNcclCommunicator(ownRef, device, std::move(own));
#endif
  nccl->setTimeout(bootstrap.timeout());
  return nccl;
}

void abandonNcclCommunicator(Communicator& nccl) { detail::abandonNccl(nccl); }

#else  // !TL_HAVE_NCCL

bool ncclAvailable() { return false; }

int ncclVisibleDeviceCount() { return 0; }

std::unique_ptr<Communicator> createNcclCommunicator(Communicator& bootstrap, int device) {
  throw Error(str("tl was built without NCCL (TL_WITH_NCCL=OFF, or CUDA/NCCL not found with "
                  "TL_WITH_NCCL=AUTO); cannot create an NCCL communicator for device ",
                  device, ". Rebuild with -DTL_WITH_NCCL=ON, or use the MPI backend."));
}

void abandonNcclCommunicator(Communicator& nccl) {
  throw Error(str("tl was built without NCCL: there is no NCCL communicator to abandon (given a '",
                  nccl.backend(), "' one)"));
}

#endif

}  // namespace tl::comm
