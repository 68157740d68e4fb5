#include "common/check.h"
#include "runtime/reduce/gradient_reducer.h"

namespace tl::reduce {

std::unique_ptr<GradientReducer> createReducer(Reduction mode, comm::Communicator& comm,
                                               const std::vector<at::Tensor>& params,
                                               std::vector<std::string> paramNames, int64_t bucketBytes) {
  // The one place that maps a reduction mode to its implementation.
  switch (mode) {
    case Reduction::Exact:
      return createExactReducer(comm, params, std::move(paramNames), bucketBytes);
    case Reduction::Fp32:
      return createFp32Reducer(comm, params, bucketBytes);
  }
  TL_CHECK(false, "unknown reduction mode ", int(mode));
  return nullptr;
}

}  // namespace tl::reduce
