// The conformance suite, instantiated for each backend. NCCL's instance and MPI's instance on
// CUDA tensors (staged through host memory) are always compiled and skip themselves where they
// cannot run (no NCCL in the build, no CUDA device, a CPU-only libtorch), so the same binary
// runs the whole suite on a GPU machine.
#include <torch/cuda.h>

#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/nccl/nccl_communicator.h"
#include "tests/runtime/comm/communicator_conformance.h"
#include "tests/runtime/comm/mpi_test_world.h"

namespace tl::comm::testing {
namespace {

BackendUnderTest mpiBackend() {
  BackendUnderTest backend;
  backend.name = "mpi";
  backend.whyUnavailable = [] { return std::string(); };
  backend.create = [] { return createMpiWorldCommunicator(); };
  backend.device = [] { return at::Device(at::kCPU); };
  // A meta tensor: not CPU memory, and constructible without a GPU.
  backend.wrongDeviceTensor = [] { return at::empty({4}, at::TensorOptions().device(at::kMeta)); };
  return backend;
}

// Where this libtorch cannot make CUDA tensors, why; else empty.
std::string whyNoCuda() {
  if (!torch::cuda::is_available()) return "no CUDA device, or a libtorch without CUDA";
  return "";
}

// MPI on CUDA tensors: several ranks may share one GPU.
BackendUnderTest mpiOnCudaBackend() {
  BackendUnderTest backend = mpiBackend();
  backend.label = "mpi_cuda";
  backend.whyUnavailable = whyNoCuda;
  backend.device = [] {
    return at::Device(at::kCUDA, world().rank() % int(torch::cuda::device_count()));
  };
  return backend;
}

int ncclDeviceOfThisRank() { return world().rank() % std::max(1, ncclVisibleDeviceCount()); }

BackendUnderTest ncclBackend() {
  BackendUnderTest backend;
  backend.name = "nccl";
  backend.whyUnavailable = []() -> std::string {
    if (!ncclAvailable()) return "tl was built without NCCL";
    const int devices = ncclVisibleDeviceCount();
    if (devices == 0) return "no CUDA device is visible";
    if (std::string why = whyNoCuda(); !why.empty()) return why;
    if (devices < world().size())
      return "NCCL needs one CUDA device per rank: " + std::to_string(world().size()) +
             " ranks, " + std::to_string(devices) + " devices";
    return "";
  };
  backend.create = [] { return createNcclCommunicator(world(), ncclDeviceOfThisRank()); };
  backend.device = [] { return at::Device(at::kCUDA, ncclDeviceOfThisRank()); };
  backend.wrongDeviceTensor = [] { return at::ones({4}, at::kFloat); };
  return backend;
}

INSTANTIATE_TEST_SUITE_P(Backends, CommunicatorConformance,
                         ::testing::Values(mpiBackend(), mpiOnCudaBackend(), ncclBackend()),
                         [](const ::testing::TestParamInfo<BackendUnderTest>& info) {
                           return info.param.label.empty() ? info.param.name : info.param.label;
                         });

}  // namespace
}  // namespace tl::comm::testing
