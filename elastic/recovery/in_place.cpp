#include "elastic/recovery/in_place.h"

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <ATen/ATen.h>

#include "common/check.h"
#include "common/clock.h"
#include "elastic/recovery/in_place_nccl.h"
#include "est/context_exchange.h"
#include "runtime/comm/json_collectives.h"
#include "runtime/comm/mpi/mpi_communicator.h"

namespace tl::elastic {
namespace {

std::atomic<bool> gRecovered{false};

// The exit status of a survivor that wrote its copy for a restart (as after mpirun's SIGTERM).
constexpr int kExitForRestart = 75;
// Losses that come within this of the first are recovered from together (two ranks killed at once).
constexpr auto kSettle = std::chrono::milliseconds(200);

[[noreturn]] void fallBack(RecoveryGuard& guard, const std::string& why, const std::vector<int>& lost) {
  std::fprintf(stderr, "tl-launch: rank %d: in-place recovery is not possible (%s); writing the job for a restart\n",
               guard.rank(), why.c_str());
  std::fflush(stderr);
  guard.writeCandidate({"in place not possible: " + why, false, lost});
  std::fflush(stdout);
  std::fflush(stderr);
  spdlog::default_logger()->flush();
  ::_exit(kExitForRestart);
}

// Falls back from its own thread unless disarmed in time: a survivor lost during the agreement
// leaves the others blocked in MPI_Comm_create_group, which has no deadline of its own.
class Watchdog {
 public:
  Watchdog(RecoveryGuard& guard, std::chrono::milliseconds limit, std::vector<int> lost)
      : thread_([this, &guard, limit, lost] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (cv_.wait_for(lock, limit, [this] { return disarmed_; })) return;
          fallBack(guard, "the survivors did not agree within the collective timeout (another loss during the agreement?)",
                   lost);
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      disarmed_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

// The whole state at the newest boundary, from the lowest-ranked survivor that holds it.
est::JobState broadcastState(comm::Communicator& comm, int root, const est::JobState& mine) {
  est::JobState got;
  got.model = est::broadcastNamedTensors(comm, mine.model, root);
  got.optimizer = est::broadcastNamedTensors(comm, mine.optimizer, root);
  got.reducer = est::broadcastNamedTensors(comm, mine.reducer, root);
  est::NamedTensors packed;
  for (const est::EstContext& c : mine.contexts) {
    const std::vector<uint8_t> bytes = est::packContext(c);
    at::Tensor t = at::empty({int64_t(bytes.size())}, at::kByte);
    std::copy(bytes.begin(), bytes.end(), t.data_ptr<uint8_t>());
    packed.emplace_back(std::to_string(c.logicalRank), t);
  }
  for (const auto& [name, t] : est::broadcastNamedTensors(comm, packed, root)) {
    const at::Tensor c = t.contiguous();
    got.contexts.push_back(est::unpackContext(c.data_ptr<uint8_t>(), size_t(c.numel())));
  }
  at::Tensor steps = at::full({1}, mine.stepsDone, at::kLong);
  comm.broadcast(steps, root);
  got.stepsDone = steps.item<int64_t>();
  return got;
}

}  // namespace

bool recoveredInPlace() { return gRecovered.load(); }

void noteExitStatus(const char* path, int status) {
  if (status == 0 || path == nullptr || *path == 0) return;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line = std::to_string(status) + "\n";
  [[maybe_unused]] ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

WentOnInPlace recoverInPlace(RecoveryGuard& guard, comm::Communicator& oldHost, est::EstExecutor& executor,
                             const AdoptSurvivors& adopt, const JobNccl& nccl) {
  gRecovered.store(true);  // from the first loss on, MPI_Finalize would wait for the lost member
  // The watcher saw the loss before abandoning the collectives; take what comes with it.
  RecoveryGuard::Losses losses = guard.losses();
  const double settleUntil = losses.firstAt + std::chrono::duration<double>(kSettle).count();
  while (unixNow() < settleUntil) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  losses = guard.losses();
  const std::vector<int> lost = losses.ranks;
  if (lost.empty()) fallBack(guard, "collectives were abandoned but no lost member was found", lost);
  abandonJobNccl(nccl);  // now: its kernels waiting for the lost member hold the GPU stream
  const int before = oldHost.size();
  if (int(lost.size()) >= before) fallBack(guard, "no survivors", lost);

  const double agreementBegan = unixNow();
  std::unique_ptr<comm::Communicator> survivors;
  std::unique_ptr<comm::Communicator> survivorsGpu;
  est::JobState state;
  int64_t boundary = 0;
  {
    Watchdog watchdog(guard, oldHost.timeout(), lost);
    try {
      survivors = comm::createSurvivorsCommunicator(oldHost, lost);
      // Tests: TL_TEST_AGREEMENT_DELAY_MS holds the agreement open, so that a second loss can
      // come during it (timing only).
      if (const char* delay = std::getenv("TL_TEST_AGREEMENT_DELAY_MS"))
        std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(delay)));
      const int64_t mine = guard.currentStep();
      const nlohmann::json view{{"lost", lost}, {"step", mine}};
      const auto views = comm::allgatherJson(*survivors, view);
      int root = -1;
      boundary = mine;
      for (const auto& v : views) {
        if (v.at("lost").get<std::vector<int>>() != lost)
          fallBack(guard, "the survivors saw different losses (" + nlohmann::json(views).dump() + ")", lost);
        boundary = std::max(boundary, v.at("step").get<int64_t>());
      }
      bool allAtBoundary = true;
      for (size_t r = 0; r < views.size(); ++r) {
        const bool at = views[r].at("step").get<int64_t>() == boundary;
        if (at && root < 0) root = int(r);
        allAtBoundary &= at;
      }
      if (allAtBoundary) {
        state = guard.currentState();  // every survivor holds the same job at this boundary
      } else {
        // One began update k+1 (its exchanges of k+1 were complete); the others take k+1 from it.
        const est::JobState own = survivors->rank() == root ? guard.currentState() : est::JobState{};
        state = broadcastState(*survivors, root, own);
      }
    } catch (const std::exception& e) {
      fallBack(guard, std::string("the survivors' agreement failed: ") + e.what(), lost);
    }
    try {
      survivorsGpu = ncclAmongSurvivors(*survivors, nccl);
    } catch (const std::exception& e) {
      fallBack(guard, std::string("NCCL could not be set up among the survivors: ") + e.what(), lost);
    }
  }
  const int after = survivors->size();
  const est::Placement placement = est::Placement::even(executor.placement().logicalWorkers(), after);
  const ExecutorCommunicators given = adopt({std::move(survivors), std::move(survivorsGpu)});
  comm::Communicator& host = given.host;
  executor.recoverOnSurvivors(state, placement, host, given.device);
  const double resumedAt = unixNow();

  FailureRecord failure;
  failure.mode = "in-place";
  failure.lostRanks = lost;
  failure.lostHosts = losses.hosts;
  failure.detectedBy = guard.endedHungMembers() ? "hang-timeout" : "member-watcher";
  failure.reason = guard.endedHungMembers() ? "member process(es) stopped for the hang timeout, then ended"
                                            : "member process(es) ended";
  failure.boundaryStep = boundary;
  failure.stepsRecomputed = 0;
  failure.processesBefore = before;
  failure.processesAfter = after;
  failure.failedAt = losses.firstAt;  // the detection: the kill itself is not seen in-process
  failure.agreementSeconds = resumedAt - agreementBegan;
  failure.resumedAt = resumedAt;
  guard.resumedInPlace(executor, failure);
  if (host.rank() == 0) {
    spdlog::info("lost rank(s) {}; the {} survivors go on in place from step {} ({:.3f} s after the detection, "
                 "agreement {:.3f} s, placement {})",
                 nlohmann::json(lost).dump(), after, boundary, unixNow() - losses.firstAt,
                 resumedAt - agreementBegan, placement.toString());
  }
  return {lost, boundary};
}

}  // namespace tl::elastic
