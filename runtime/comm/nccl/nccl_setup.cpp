// Bringing an NCCL communicator up: device checks, agreement, unique id over the bootstrap.
#include <cstring>

#include <ATen/ATen.h>

#include "runtime/comm/nccl/nccl_detail.h"

namespace tl::comm::detail {

void throwCudaError(cudaError_t code, const char* call, const char* file, int line) {
  throw Error(str(file, ":", line, ": ", call, " failed with CUDA error ", static_cast<int>(code),
                  " (", cudaGetErrorName(code), "): ", cudaGetErrorString(code)));
}

void throwNcclError(ncclResult_t code, const char* call, const char* file, int line) {
  std::string message = str(file, ":", line, ": ", call, " failed with NCCL error ",
                            static_cast<int>(code), ": ", ncclGetErrorString(code));
#if NCCL_VERSION_CODE >= 21300
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && detail[0] != '\0') message += str(" (", detail, ")");
#endif
  throw Error(message);
}

namespace {

void selectDevice(int device) {
  int count = 0;
  TL_CUDA_CHECK(cudaGetDeviceCount(&count));
  TL_CHECK(device >= 0 && device < count, "CUDA device ", device, " does not exist (", count,
           " visible)");
  TL_CUDA_CHECK(cudaSetDevice(device));
}

}  // namespace

std::unique_ptr<Communicator> setUpNcclCommunicator(Communicator& bootstrap, int device,
                                                    std::unique_ptr<Communicator> ownedBootstrap) {
  // Every member prepares locally, then all agree before anyone enters ncclCommInitRank: a
  // member whose device is bad must not leave the others waiting there for a peer that never
  // comes.
  ncclUniqueId id{};
  std::string localProblem;
  try {
    selectDevice(device);
    if (bootstrap.rank() == 0) TL_NCCL_CHECK(ncclGetUniqueId(&id));
  } catch (const Error& e) {
    localProblem = e.what();
  }
  at::Tensor problems = at::full({1}, localProblem.empty() ? 0 : 1, at::kInt);
  bootstrap.allreduce(problems, ReduceOp::Max);
  TL_CHECK(localProblem.empty(), "cannot create an NCCL communicator on rank ", bootstrap.rank(),
           ": ", localProblem);
  TL_CHECK(problems.item<int>() == 0, "cannot create an NCCL communicator: another member of "
           "the bootstrap communicator could not set up its CUDA device (see its error)");

  // An owning tensor, not a view of `id`: should the broadcast time out, the MPI backend keeps
  // its buffer alive for a late writer, which must not be this stack frame.
  at::Tensor idBytes = at::empty({static_cast<std::int64_t>(sizeof id)}, at::kByte);
  std::memcpy(idBytes.data_ptr(), &id, sizeof id);
  bootstrap.broadcast(idBytes, 0);
  std::memcpy(&id, idBytes.data_ptr(), sizeof id);

  ncclComm_t comm = nullptr;
  TL_NCCL_CHECK(ncclCommInitRank(&comm, bootstrap.size(), id, bootstrap.rank()));
  return wrapNcclCommunicator(comm, device, std::move(ownedBootstrap));
}

}  // namespace tl::comm::detail
