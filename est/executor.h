// The per-process EST executor: runs this process's share of the job's N logical workers as
// fibers over one model replica and one optimizer state, so the job trains exactly as DDP
// with N processes would (with --reduction exact, to the bit, whatever the placement).
//
// Threading: one training thread. run(), captureState(), restore() and changeLayout() are
// called on it, the last three only at a step boundary (from StepObserver::afterStep, or
// outside run()). Collective calls are named in each method's comment; every member of the
// job's host communicator makes them in the same order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dataload/loader.h"
#include "est/est_context.h"
#include "est/loader_tuner.h"
#include "est/placement.h"
#include "est/replica.h"
#include "est/step_backend.h"
#include "runtime/comm/communicator.h"
#include "runtime/job_config.h"
#include "runtime/train/data_setup.h"
#include "runtime/train/metrics.h"
#include "runtime/train/trainer_result.h"

namespace c10 {
struct Event;
}
namespace tl::train {
class StepTrace;
}

namespace tl::est {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Everything later steps depend on, at a step boundary. Model, optimizer and reducer state are
// the same on every process; `contexts` holds all N ESTs' contexts (on the gathering rank).
struct JobState {
  int64_t stepsDone = 0;
  NamedTensors model;      // state-dict order
  NamedTensors optimizer;
  NamedTensors reducer;
  std::vector<EstContext> contexts;  // by logical rank
};

// What a step changes outside its optimizer update, as of one step boundary: the model's
// buffers (forward moves BatchNorm's statistics), the reducer's state (a reduction may rescale
// the exact reducer) and all N EST contexts (generators, data cursors). Together with the live
// parameters and optimizer state, which only the update changes, it is the whole job at that
// boundary (EstExecutor::stateAt). Buffers and reducer state stay on the replica's device.
struct BoundarySnapshot {
  int64_t stepsDone = -1;
  NamedTensors buffers;  // state-dict names
  NamedTensors reducer;
  std::vector<EstContext> contexts;  // by logical rank, all N
  bool empty() const { return contexts.empty(); }
};

// What the caller wants after a step.
enum class StepAction { Continue, Stop };

// Told about every step on every process. afterStep: after the optimizer update, at the step
// boundary (all ESTs parked, all generator states saved); it must make the same decision on
// every process. beforeUpdate: once every exchange of the step is done (reductions, rank 0's
// buffers, statistics) and before the update; it may make collective calls. runUpdate: runs
// the update, which changes only this process's parameters and optimizer state and needs no
// peer.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual StepAction afterStep(int64_t stepsDone, class EstExecutor& executor) = 0;
  virtual void beforeUpdate(class EstExecutor&) {}
  virtual void runUpdate(class EstExecutor&, const std::function<void()>& update) { update(); }
};

class LocalRound;
class LoaderTuningWindow;
class RunRecorder;

class EstExecutor {
 public:
  // What ExecutorBuilder assembles (est/executor_builder.h).
  struct Parts {
    // The two parts that have no empty value; the builder fills in the rest.
    Parts(JobConfig config, Placement placement)
        : config(std::move(config)), placement(std::move(placement)) {}
    JobConfig config;
    Placement placement;
    comm::Communicator* host = nullptr;  // metadata, contexts, stats; its ranks index `placement`
    train::JobData data;
    std::unique_ptr<Replica> replica;  // the backend holds on to it
    std::unique_ptr<StepBackend> backend;
    train::StepPlan plan;
    std::vector<EstContext> local;  // this process's ESTs, in logical-rank order
  };
  explicit EstExecutor(Parts parts);
  // Shorthand for ExecutorBuilder(config).layout(placement, comm, deviceComm).build(): builds
  // data, model, optimizer and reducer. No collective calls, so bad input can be reported by
  // every rank before the job starts.
  EstExecutor(JobConfig config, Placement placement, comm::Communicator& comm,
              comm::Communicator& deviceComm);
  ~EstExecutor();

  // Continues from a saved state instead of the job's start (every process passes the same
  // state, with all N contexts). No collectives.
  void restore(const JobState& state);

  // Lets `tuner` size the loader pool while running (nullptr: the configured size throughout).
  void setLoaderTuner(LoaderTuner* tuner) { tuner_ = tuner; }

  // Trains until the planned number of steps, until the observer says Stop, or until this
  // process leaves the job (changeLayout; then inJob() is false). Collective over the job.
  train::TrainResult run(train::MetricsLog& metrics, StepObserver* observer = nullptr);

  // Collective over the host communicator: gathers the job state at the current step boundary
  // onto rank `root` (contexts are empty elsewhere).
  JobState captureState(int root = 0);
  // Collective (host communicator): the state outside the optimizer update that the boundary
  // after step `stepsDone` will have (est/executor_state.cpp); called between a step's last
  // exchange and its update, or at a boundary.
  BoundarySnapshot snapshotBoundary(int64_t stepsDone);
  // The whole job at `snapshot`'s boundary, on the CPU: the live parameters and optimizer state
  // with the snapshot. Any thread, while the training thread is not in an update and the
  // parameters are those of that boundary. On a GPU it copies on a side stream that waits only
  // for the last update (markUpdated), not for collectives queued after it.
  JobState stateAt(const BoundarySnapshot& snapshot) const;
  // Training thread, right after an update: on a GPU, the point stateAt's copies wait for.
  void markUpdated();

  // Adopts a new layout at a step boundary: which processes take part and which ESTs each
  // holds. Collective over the CURRENT host communicator's members, who all pass the same
  // `placement`; `host`/`device` are the communicators of the new members (made from the
  // current one, e.g. with split; ranks index `placement`), nullptr on a member that leaves.
  // New members are current members: a process joins by being a member that holds no EST
  // (Placement::withIdleMembers) and is given some.
  //  - EST contexts (generators, data cursors: what captureState gathers) move from their old
  //    owners to their new ones; streams and loader are rebuilt from the cursors.
  //  - Model, optimizer and reducer state are identical on all members at a step boundary; a
  //    member that held no EST receives them from the owner of EST 0 all the same.
  //  - The reducer moves to the new device communicator, keeping its state.
  //  - Data, the buffer root (owner of EST 0) and the lead (rank 0) follow the new placement.
  // A member that leaves keeps the model as of this boundary and holds no EST; run() returns.
  // Callable from StepObserver::afterStep or outside run(); never from an EST's fiber.
  void changeLayout(Placement placement, comm::Communicator* host, comm::Communicator* device);

  // Widens the job to the members of `host` before a changeLayout gives new members ESTs: its
  // first current.size() ranks are the current members in order (`current`: ESTs per member
  // now), the rest are new members that hold no EST yet. A process that was not in the job (one
  // built on its own with a one-process layout to join a running job) drops the ESTs it was
  // built with. No collectives; every member of `host` calls it, then changeLayout over `host`.
  void admit(const std::vector<int>& current, comm::Communicator& host, comm::Communicator& device);

  // In-place recovery after members were lost (elastic/recovery/in_place.h): the job goes on
  // at `state`'s boundary over the survivors' communicators `host` and `device` with
  // `placement` (ranks index it). Everything is taken from `state` — model, optimizer and
  // reducer state and all N contexts, which every survivor holds whole — so nothing needs the
  // lost members or the old communicators (whose collectives were abandoned). No collectives;
  // every survivor calls it with the same arguments. Outside run() (after it threw
  // comm::MembersLost), never from an EST's fiber.
  void recoverOnSurvivors(const JobState& state, Placement placement, comm::Communicator& host,
                          comm::Communicator& device);

  // Bytes the last changeLayout sent: the contexts of ESTs that changed process, and the
  // replica (model, optimizer and reducer state) for each member that joined.
  int64_t lastLayoutBytes() const { return lastLayoutBytes_; }
  // Seconds the last changeLayout spent moving the replica to joining members (on this
  // process; 0 when no member joined or this one took no part).
  double lastReplicaSeconds() const { return lastReplicaSeconds_; }
  // The bytes of one copy of the replica the last changeLayout sent (0: none sent).
  int64_t lastReplicaBytes() const { return lastReplicaBytes_; }

  // Speed measurements for placement planning (--placement auto): compute seconds per local
  // EST in the last step (forward + backward, no communication; replays included) and the
  // memory one more EST holds here (LocalRound::bytesPerEst). 0 before the first step.
  double lastComputePerEst() const { return lastComputePerEst_; }
  double bytesPerEst() const { return bytesPerEst_; }
  // Where the last step's wall time went on this process (seconds): building the ESTs' fibers
  // and loader (only in a step after a layout change or at the start), waiting for the loader,
  // computing (forward, backward, update) and exchanging (reduction, buffers, statistics).
  struct StepSplit {
    double startRound = 0, dataWait = 0, compute = 0, comm = 0, step = 0;
  };
  const StepSplit& lastStepSplit() const { return lastSplit_; }
  // --emulate-slowdown: this process's ESTs take `factor` times as long (timing only).
  void setEmulatedSlowdown(double factor);

  bool inJob() const { return host_ != nullptr; }
  const JobConfig& config() const { return config_; }
  const train::JobData& data() const { return data_; }
  const Placement& placement() const { return placement_; }
  models::Model& model() { return *replica_->model; }
  const train::StepPlan& plan() const { return plan_; }
  int64_t stepsDone() const { return stepsDone_; }
  // The job's host communicator; only while inJob().
  comm::Communicator& comm();
  const std::vector<EstContext>& localContexts() const { return local_; }

 private:
  bool lead() const { return host_ && host_->rank() == 0; }
  // The step's pieces, in the order of the consistency contract (executor_run.cpp).
  void startRound();
  void endRound();
  void reduceOrReplay(int64_t epoch, double& seconds, train::TrainResult& result);
  void applyRankZeroBuffers();
  StepAction stepBoundary(StepObserver* observer, double computeSeconds, int64_t consumed,
                          train::TrainResult& result);
  data::LoaderStats loaderStats() const;
  // Model, optimizer and reducer state, without contexts (executor_state.cpp); `copies` false:
  // the live CPU tensors themselves (to be read before the next update).
  JobState captureReplica(bool copies = true) const;
  void loadReplicaState(const JobState& state);

  JobConfig config_;
  Placement placement_;
  comm::Communicator* host_;
  train::JobData data_;
  std::unique_ptr<Replica> replica_;
  std::unique_ptr<StepBackend> backend_;
  train::StepPlan plan_;
  std::vector<EstContext> local_;  // this process's ESTs, in logical-rank order
  int64_t stepsDone_ = 0;
  LoaderTuner* tuner_ = nullptr;
  // While run() is active: the local ESTs' fibers and loader, rebuilt after a layout change.
  std::unique_ptr<LocalRound> round_;
  std::unique_ptr<LoaderTuningWindow> tuning_;
  data::LoaderStats retiredLoaders_;  // loaders of this run already replaced
  int64_t lastLayoutBytes_ = 0;
  double lastReplicaSeconds_ = 0;
  int64_t lastReplicaBytes_ = 0;
  double lastComputePerEst_ = 0;
  StepSplit lastSplit_;
  double bytesPerEst_ = 0;
  double slowdown_ = 1.0;
  std::shared_ptr<c10::Event> updated_;  // GPU: recorded after the last update (markUpdated)
  int updateDelayMs_ = 0;                // TL_TEST_UPDATE_DELAY_MS (executor_run.cpp)
  std::unique_ptr<train::StepTrace> trace_;  // --trace-steps, from the run that reaches them
  bool traceReported_ = false;
};

}  // namespace tl::est
