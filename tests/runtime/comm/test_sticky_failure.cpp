// The NCCL backend's rules for giving a communicator up (runtime/comm/sticky_failure.h), without
// a device: members lost (abandonCollectives) -> the communicator is released (aborted) once, on
// its own thread, and every call throws MembersLost; a failure kept before stays the failure;
// one made after the abandonment goes on. abandonCollectives is process-wide, but each test's
// StickyFailure is made after the previous tests' calls, so they do not see each other.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/check.h"
#include "runtime/comm/collective_timeout.h"
#include "runtime/comm/collective_wait.h"
#include "runtime/comm/sticky_failure.h"

namespace tl::comm::detail {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// The message of the exception `call` throws, after checking that it is a MembersLost.
template <typename Call>
std::string membersLostMessage(Call&& call) {
  try {
    call();
  } catch (const MembersLost& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another error than MembersLost: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

TEST(StickyFailure, LostMembersReleaseOnceAndEveryLaterCallThrowsMembersLost) {
  int releases = 0;
  StickyFailure failure("nccl", [&] { ++releases; });
  failure.check("allreduce", 1, 4);  // healthy: nothing thrown
  EXPECT_FALSE(failure.abandoned());

  abandonCollectives();
  EXPECT_TRUE(failure.abandoned());
  EXPECT_EQ(releases, 0) << "the release (ncclCommAbort) belongs to the communicator's own thread, at its next call";
  EXPECT_EQ(membersLostMessage([&] { failure.check("allreduce", 1, 4); }),
            "nccl allreduce on rank 1 of 4: abandoned, members of the job were lost");
  EXPECT_EQ(releases, 1);
  EXPECT_TRUE(failure.failed());
  // Later calls: the same failure, no second release (no double abort or destroy).
  EXPECT_THAT(membersLostMessage([&] { failure.check("barrier", 1, 4); }), HasSubstr("nccl allreduce on rank 1"));
  EXPECT_EQ(releases, 1);
  failure.fail(std::make_exception_ptr(Error("a later error")));
  EXPECT_EQ(releases, 1);
  EXPECT_THAT(membersLostMessage([&] { failure.check("barrier", 1, 4); }), HasSubstr("abandoned"));
}

TEST(StickyFailure, MadeAfterTheAbandonmentItGoesOnUntilTheNext) {
  abandonCollectives();
  int releases = 0;
  StickyFailure failure("nccl", [&] { ++releases; });  // the survivors' new communicator
  EXPECT_FALSE(failure.abandoned());
  failure.check("allreduce", 0, 3);
  EXPECT_EQ(releases, 0);
  EXPECT_FALSE(failure.failed());

  abandonCollectives();  // a second loss
  EXPECT_THAT(membersLostMessage([&] { failure.check("allreduce", 0, 3); }), HasSubstr("rank 0 of 3"));
  EXPECT_EQ(releases, 1);
}

TEST(StickyFailure, AFailureKeptBeforeTheLossStaysTheFailure) {
  int releases = 0;
  StickyFailure failure("nccl", [&] { ++releases; });
  failure.fail(std::make_exception_ptr(TimeoutError("nccl barrier timed out")));
  EXPECT_EQ(releases, 1);
  abandonCollectives();
  try {
    failure.check("allreduce", 0, 2);
    FAIL() << "a failed communicator did not throw";
  } catch (const MembersLost& e) {
    FAIL() << "the timeout was replaced by " << e.what();
  } catch (const TimeoutError& e) {
    EXPECT_STREQ(e.what(), "nccl barrier timed out");
  }
  EXPECT_EQ(releases, 1);
}

TEST(StickyFailure, DescribesTheOperationOnlyWhenItFails) {
  int described = 0;
  const auto describe = [&] {
    ++described;
    return std::string("allreduce(sum, 10 float32 elements on cuda:0)");
  };
  StickyFailure failure("nccl", nullptr);  // no release given: nothing to call
  for (int i = 0; i < 100; ++i) failure.check(describe, 0, 2);  // a polled wait asks this often
  EXPECT_EQ(described, 0);
  abandonCollectives();
  EXPECT_THAT(membersLostMessage([&] { failure.check(describe, 0, 2); }),
              HasSubstr("nccl allreduce(sum, 10 float32 elements on cuda:0) on rank 0 of 2"));
  EXPECT_EQ(described, 1);
}

// The recovery guard's watcher abandons from its own thread while the training thread polls a
// collective that will never complete (its peer is dead): the poll throws soon after, and the
// release runs on the polling thread.
TEST(StickyFailure, APolledWaitSeesAnAbandonmentFromAnotherThread) {
  std::atomic<int> releases{0};
  std::thread::id releasedOn;
  StickyFailure failure("nccl", [&] {
    releasedOn = std::this_thread::get_id();
    ++releases;
  });
  std::thread watcher([] {
    std::this_thread::sleep_for(50ms);
    abandonCollectives();
  });
  const Clock::time_point start = Clock::now();
  const std::string message = membersLostMessage([&] {
    pollUntil([&] {
      failure.check("allreduce", 1, 2);
      return false;  // the dead peer's part never comes
    }, start + 20s);
  });
  const auto waited = Clock::now() - start;
  watcher.join();
  EXPECT_THAT(message, HasSubstr("members of the job were lost"));
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 5s) << "the wait ran on past the abandonment";
  EXPECT_EQ(releases.load(), 1);
  EXPECT_EQ(releasedOn, std::this_thread::get_id());
}

}  // namespace
}  // namespace tl::comm::detail
