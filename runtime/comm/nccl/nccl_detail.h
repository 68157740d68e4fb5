// Internals of the NCCL backend shared by its files; includes the CUDA runtime and NCCL
// headers, so only compiled when TL_HAVE_NCCL.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>

#include "common/check.h"
#include "runtime/comm/communicator.h"

// ncclCommSplit arrived in NCCL 2.18; before it, split goes through the bootstrap. Defining
// TL_NCCL_HAS_COMM_SPLIT=0 forces that path (to compile-check it against a newer NCCL).
#ifndef TL_NCCL_HAS_COMM_SPLIT
#define TL_NCCL_HAS_COMM_SPLIT (NCCL_VERSION_CODE >= 21800)
#endif

namespace tl::comm::detail {

[[noreturn]] void throwCudaError(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void throwNcclError(ncclResult_t code, const char* call, const char* file, int line);

// Sets up NCCL over the members of `bootstrap` on `device`. `ownedBootstrap`, when given, is
// kept by the new communicator for splitting without ncclCommSplit (and may be `bootstrap`).
std::unique_ptr<Communicator> setUpNcclCommunicator(Communicator& bootstrap, int device,
                                                    std::unique_ptr<Communicator> ownedBootstrap);

// Wraps an initialised NCCL communicator on `device`; takes ownership of `comm`.
std::unique_ptr<Communicator> wrapNcclCommunicator(ncclComm_t comm, int device,
                                                   std::unique_ptr<Communicator> ownedBootstrap);

// abandonNcclCommunicator's work; tl::Error when `nccl` is not an NCCL communicator.
void abandonNccl(Communicator& nccl);

}  // namespace tl::comm::detail

#define TL_CUDA_CHECK(call)                                                      \
  do {                                                                           \
    const cudaError_t tl_cuda_rc_ = (call);                                      \
    if (tl_cuda_rc_ != cudaSuccess)                                              \
      ::tl::comm::detail::throwCudaError(tl_cuda_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define TL_NCCL_CHECK(call)                                                      \
  do {                                                                           \
    const ncclResult_t tl_nccl_rc_ = (call);                                     \
    if (tl_nccl_rc_ != ncclSuccess)                                              \
      ::tl::comm::detail::throwNcclError(tl_nccl_rc_, #call, __FILE__, __LINE__); \
  } while (0)
