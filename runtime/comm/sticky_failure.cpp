#include "runtime/comm/sticky_failure.h"

#include <utility>

#include "common/check.h"
#include "runtime/comm/collective_timeout.h"

namespace tl::comm::detail {

StickyFailure::StickyFailure(std::string backend, std::function<void()> release)
    : backend_(std::move(backend)), release_(std::move(release)), epoch_(collectivesEpoch()) {}

bool StickyFailure::abandoned() const { return collectivesEpoch() != epoch_; }

void StickyFailure::check(const std::function<std::string()>& operation, int rank, int size) {
  if (!failure_ && abandoned()) {
    fail(std::make_exception_ptr(MembersLost(str(backend_, " ", operation(), " on rank ", rank, " of ", size,
                                                 ": abandoned, members of the job were lost"))));
  }
  if (failure_) std::rethrow_exception(failure_);
}

void StickyFailure::check(const char* operation, int rank, int size) {
  check([operation] { return std::string(operation); }, rank, size);
}

void StickyFailure::fail(std::exception_ptr error) {
  if (failure_) return;
  failure_ = std::move(error);
  if (release_) std::exchange(release_, nullptr)();
}

}  // namespace tl::comm::detail
