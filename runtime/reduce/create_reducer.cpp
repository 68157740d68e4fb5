#include "common/check.h"
#include "runtime/reduce/gradient_reducer.h"

namespace tl::reduce {

std::unique_ptr<GradientReducer> createReducer(const std::string& mode, comm::Communicator& comm,
                                               const std::vector<at::Tensor>& params,
                                               std::vector<std::string> paramNames, int64_t bucketBytes) {
  // The one place that maps a reduction mode's name to its implementation.
  if (mode == "exact") return createExactReducer(comm, params, std::move(paramNames), bucketBytes);
  TL_REQUIRE(mode == "fp32", "--reduction: unknown mode '", mode, "' (expected exact or fp32)");
  return createFp32Reducer(comm, params, bucketBytes);
}

}  // namespace tl::reduce
