#include "runtime/comm/mpi/mpi_roll_call.h"

#include <algorithm>
#include <cstring>

#include "runtime/comm/collective_wait.h"
#include "runtime/comm/mpi/mpi_detail.h"

namespace tl::comm::detail {
namespace {

constexpr int kAskTag = 1;
constexpr int kAnswerTag = 2;

struct MemberRecord {
  std::int32_t worldRank;
  char host[MPI_MAX_PROCESSOR_NAME];
};

// "2 s", "0.5 s"
std::string seconds(std::chrono::milliseconds timeout) {
  const auto ms = timeout.count();
  if (ms % 1000 == 0) return str(ms / 1000, " s");
  return str(double(ms) / 1000.0, " s");
}

}  // namespace

MpiRollCall::MpiRollCall(MPI_Comm comm) {
  TL_MPI_CHECK(MPI_Comm_dup(comm, &watch_));
  TL_MPI_CHECK(MPI_Comm_set_errhandler(watch_, MPI_ERRORS_RETURN));
  TL_MPI_CHECK(MPI_Comm_rank(watch_, &rank_));
  TL_MPI_CHECK(MPI_Comm_size(watch_, &size_));
  MemberRecord mine{};
  TL_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &mine.worldRank));
  int length = 0;
  TL_MPI_CHECK(MPI_Get_processor_name(mine.host, &length));
  std::vector<MemberRecord> all(static_cast<size_t>(size_));
  TL_MPI_CHECK(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, watch_));
  for (MemberRecord& member : all) {
    member.host[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    hosts_.emplace_back(member.host);
    worldRanks_.push_back(member.worldRank);
  }
  TL_MPI_CHECK(MPI_Irecv(&question_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kAskTag, watch_, &ask_));
}

MpiRollCall::~MpiRollCall() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (ask_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&ask_);
    MPI_Wait(&ask_, MPI_STATUS_IGNORE);
  }
  // Answers are 8 bytes, sent eagerly; MPI completes them after the request is freed.
  for (MPI_Request& send : sends_)
    if (send != MPI_REQUEST_NULL) MPI_Request_free(&send);
  MPI_Comm_free(&watch_);
}

void MpiRollCall::answer() {
  // Best effort: a failure here must not hide the collective's own outcome.
  while (ask_ != MPI_REQUEST_NULL) {
    int asked = 0;
    MPI_Status status;
    if (MPI_Test(&ask_, &asked, &status) != MPI_SUCCESS || !asked) return;
    sent_.push_back(entered_);
    sends_.push_back(MPI_REQUEST_NULL);
    MPI_Isend(&sent_.back(), 1, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag, watch_, &sends_.back());
    if (MPI_Irecv(&question_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kAskTag, watch_, &ask_) != MPI_SUCCESS)
      ask_ = MPI_REQUEST_NULL;
  }
}

std::vector<int> MpiRollCall::absentees(std::chrono::milliseconds grace) {
  const std::int64_t current = entered_;
  std::vector<std::int64_t> counts(static_cast<size_t>(size_), -1);
  std::vector<MPI_Request> answers(static_cast<size_t>(size_), MPI_REQUEST_NULL);
  sent_.push_back(current);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Irecv(&counts[size_t(r)], 1, MPI_INT64_T, r, kAnswerTag, watch_, &answers[size_t(r)]);
    sends_.push_back(MPI_REQUEST_NULL);
    MPI_Isend(&sent_.back(), 1, MPI_INT64_T, r, kAskTag, watch_, &sends_.back());
  }
  pollUntil(
      [&] {
        answer();  // others may be calling the roll at the same time
        bool all = true;
        for (MPI_Request& request : answers) {
          if (request == MPI_REQUEST_NULL) continue;
          int done = 0;
          if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) request = MPI_REQUEST_NULL;
          all = all && done;
        }
        return all;
      },
      deadlineAfter(grace));
  std::vector<int> absent;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request& request = answers[size_t(r)];
    if (request != MPI_REQUEST_NULL) {
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    if (counts[size_t(r)] < current) absent.push_back(r);
  }
  return absent;
}

std::string MpiRollCall::describeAbsentees(const std::vector<int>& absent,
                                           std::chrono::milliseconds timeout) const {
  if (absent.empty())
    return str("every member joined it, but it did not complete within ", seconds(timeout));
  std::string who;
  for (size_t i = 0; i < absent.size(); ++i) {
    const int r = absent[i];
    who += i == 0 ? "" : (i + 1 == absent.size() ? " and " : ", ");
    who += str("rank ", r, " (");
    if (worldRanks_[size_t(r)] != r) who += str("world rank ", worldRanks_[size_t(r)], ", ");
    who += str("host ", hosts_[size_t(r)], ")");
  }
  return str(who, " did not join it within ", seconds(timeout));
}

}  // namespace tl::comm::detail
