#include "elastic/rescale/elastic_job.h"

#include <netdb.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <set>

#include "common/check.h"
#include "est/executor_builder.h"
#include "elastic/placement/layout_text.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/nccl/nccl_communicator.h"

namespace tl::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using elastic::countsOf;
using elastic::joinInts;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// The lead's answer to a request that names a layout, or the reason it cannot be had.
std::optional<std::string> checkCounts(const std::vector<int>& counts, int logicalWorkers, int processes,
                                       const std::string& what) {
  if (int(counts.size()) != processes)
    return str(what, " ", joinInts(counts), " has ", counts.size(), " entries for ", processes, " processes");
  for (int c : counts) {
    if (c < 1) return str(what, " ", joinInts(counts), ": every process needs at least one logical worker");
  }
  const int sum = std::accumulate(counts.begin(), counts.end(), 0);
  if (sum != logicalWorkers)
    return str(what, " ", joinInts(counts), " sums to ", sum, " but the job has ", logicalWorkers,
               " logical workers");
  return std::nullopt;
}

std::vector<int> evenCounts(int logicalWorkers, int processes) {
  std::vector<int> c(size_t(processes), logicalWorkers / processes);
  for (int r = 0; r < logicalWorkers % processes; ++r) ++c[size_t(r)];
  return c;
}

// One forward and backward pass of a batch of zeros, so that the first real step of a process
// that joins does not pay for first-use allocations and kernel set-up inside the job's pause.
// It leaves nothing behind: model parameters and buffers are replaced by the job's at the join,
// gradients are dropped here, the optimizer is not stepped, and each EST installs its own
// generator states when it runs.
void warmUp(est::EstExecutor& executor) {
  const JobConfig& job = executor.config();
  models::Model& model = executor.model();
  const auto parameters = model.parameters();
  if (parameters.empty() || model.returnsLoss()) return;  // (no targets to give a loss-returning module)
  at::Tensor x = at::zeros({job.batch, job.model.inChannels, job.model.imageSize, job.model.imageSize},
                           at::TensorOptions().device(parameters.front().device()));
  model.forward(x).sum().backward();
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
}

// The command travels as int64s: a fixed header, then the lists.
constexpr int kHeader = 6;

}  // namespace

json toJson(const JoinOffer& o) {
  return {{"job", toJson(o.job)},
          {"gpu_comm", o.gpuComm},
          {"checkpoint_dir", o.checkpointDir},
          {"checkpoint_every", o.checkpointEvery},
          {"stop_at_step", o.stopAtStep},
          {"recovery_dir", o.recoveryDir},
          {"auto_placement", toJson(o.autoPlacement)}};
}

JoinOffer joinOfferFromJson(const json& j) {
  JoinOffer o;
  o.job = jobConfigFromJson(j.at("job"));
  o.gpuComm = j.at("gpu_comm").get<std::string>();
  o.checkpointDir = j.at("checkpoint_dir").get<std::string>();
  o.checkpointEvery = j.at("checkpoint_every").get<int64_t>();
  o.stopAtStep = j.at("stop_at_step").get<int64_t>();
  o.recoveryDir = j.value("recovery_dir", std::string());
  o.autoPlacement = elastic::autoPlacementFromJson(j.at("auto_placement"));
  return o;
}

json commandJson(const LayoutCommand& c, const std::vector<int>& current) {
  return {{"kind", int64_t(c.kind)}, {"joiners", c.joiners}, {"target", c.target},
          {"leave", c.leave},        {"current", current},   {"checkpoint", c.checkpoint}};
}

// The request being carried out, on the lead.
struct ElasticController::Pending {
  control::PendingRequest request;
  LayoutCommand command;
  int64_t arrivedAfter = 0;  // the step the job had done when the lead took it off the channel
};

// Processes being started for a grow, on the lead: a helper thread starts them one by one
// (each its own MPI job, so each can later leave alone) and sends each its offer; the training
// thread then waits, one poll per step, until every one is ready.
struct ElasticController::Grow {
  std::thread thread;
  std::atomic<bool> started{false};  // the thread is done (successfully or not)
  std::string error;                  // why starting failed (written by the thread before `started`)
  std::vector<std::unique_ptr<comm::SpawnedProcess>> processes;
  std::vector<bool> ready;
  Clock::time_point begin = Clock::now();
  double startSeconds = 0;  // until every process was ready

  ~Grow() {
    if (thread.joinable()) thread.join();
  }
  // Tells every started process that it will not join (it then exits on its own).
  void cancel(const std::string& why) {
    if (thread.joinable()) thread.join();
    for (auto& p : processes) {
      if (!p) continue;  // it reported a failure and is gone
      try {
        p->send(json{{"cancel", why}}.dump());
      } catch (const std::exception&) {
      }
    }
    processes.clear();
  }
};

ElasticController::ElasticController(Membership& membership, elastic::CheckpointPolicy& policy,
                                     ElasticSettings settings, train::MetricsLog* metrics)
    : membership_(membership), policy_(policy), settings_(std::move(settings)), metrics_(metrics) {}

ElasticController::~ElasticController() {
  if (grow_) grow_->cancel("the job ended");
}

void ElasticController::startControl(est::EstExecutor& executor) {
  gatherHosts(executor);
  updateStatus(executor.stepsDone(), executor);
  if (!lead() || settings_.controlBind.empty() || settings_.offer.job.outputDir.empty()) return;
  control::ServerOptions o;
  o.jobDir = settings_.offer.job.outputDir;
  o.bind = settings_.controlBind;
  o.port = settings_.controlPort;
  o.status = [this] { return statusJson(); };
  server_ = std::make_unique<control::ControlServer>(o);
  spdlog::info("control channel on {} (tl-ctl status {})", server_->address(), o.jobDir);
}

void ElasticController::finish(const std::string& why) {
  if (grow_) {
    grow_->cancel(why);
    grow_.reset();
  }
  if (pending_) {
    pending_->request.reply({control::Outcome::Refused, why, ""});
    pending_.reset();
  }
  for (auto& p : queue_) p->request.reply({control::Outcome::Refused, why, ""});
  queue_.clear();
  if (server_) {
    while (auto r = server_->take()) r->reply({control::Outcome::Refused, why, ""});
    server_.reset();
  }
}

void ElasticController::annotateStatus(const std::string& key, nlohmann::json value) {
  std::lock_guard<std::mutex> lock(statusMutex_);
  status_[key] = std::move(value);
}

std::string ElasticController::statusJson() const {
  std::lock_guard<std::mutex> lock(statusMutex_);
  return status_.dump();
}

void ElasticController::updateStatus(int64_t stepsDone, est::EstExecutor& executor) {
  if (!lead()) return;
  const double now = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  const auto& plan = executor.plan();
  const double images = double(executor.config().batch) * executor.placement().logicalWorkers();
  std::lock_guard<std::mutex> lock(statusMutex_);
  if (lastStepTime_ > 0 && now > lastStepTime_) {
    const double ips = images / (now - lastStepTime_);
    const double old = status_.value("images_per_second", 0.0);
    status_["images_per_second"] = old > 0 ? 0.8 * old + 0.2 * ips : ips;
  }
  lastStepTime_ = now;
  status_["step"] = stepsDone;
  status_["total_steps"] = plan.totalSteps;
  status_["epoch"] = plan.stepsPerEpoch > 0 ? stepsDone / plan.stepsPerEpoch : 0;
  status_["processes"] = executor.placement().processes();
  status_["placement"] = executor.placement().toString();
  status_["hosts"] = memberHosts_;
  status_["devices"] = memberDevices_;  // device index per member: its local rank on its host
  status_["logical_workers"] = executor.placement().logicalWorkers();
  status_["rescales"] = rescales_;
  if (!status_.contains("last_rescale")) status_["last_rescale"] = "none";
  status_["pending"] = pending_ ? control::describe(pending_->request.request()) : "none";
  status_["queued"] = queue_.size();
  status_["requests_received"] = requestsReceived_;
  if (autoPlacer_ && autoPlacer_->options().enabled) status_["plan"] = autoPlacer_->statusJson();
}

// Every member's host name and device index, on the lead (for status and for the device a
// started process takes). Collective over the members.
void ElasticController::gatherHosts(est::EstExecutor& executor) {
  // A row per member: host name (NUL-padded), device index, started by a grow (0/1).
  constexpr int kWidth = 256;
  constexpr int kName = kWidth - 8;
  std::string me = hostName();
  me.resize(kName, '\0');
  at::Tensor mine = at::zeros({kWidth}, at::kByte);
  auto* bytes = static_cast<uint8_t*>(mine.data_ptr());
  std::memcpy(bytes, me.data(), kName - 1);
  const int32_t ints[2] = {membership_.deviceIndex, membership_.startedWithTheJob ? 0 : 1};
  std::memcpy(bytes + kName, ints, sizeof ints);
  at::Tensor all = executor.comm().allgather(mine).contiguous();
  memberHosts_.clear();
  memberDevices_.clear();
  startedSince_ = 0;
  for (int r = 0; r < all.size(0); ++r) {
    const auto* row = static_cast<const uint8_t*>(all[r].data_ptr());
    memberHosts_.emplace_back(reinterpret_cast<const char*>(row));
    int32_t theirs[2] = {0, 0};
    std::memcpy(theirs, row + kName, sizeof theirs);
    memberDevices_.push_back(theirs[0]);
    startedSince_ += theirs[1];
  }
}

std::optional<std::string> ElasticController::check(const control::Request& r, const est::EstExecutor& executor,
                                                    LayoutCommand& c) const {
  const int n = executor.placement().logicalWorkers();
  const int p = executor.placement().processes();
  using control::Command;
  switch (r.command) {
    case Command::Placement: {
      if (auto why = checkCounts(r.placement, n, p, "placement")) return why;
      c.kind = LayoutCommand::Placement;
      c.target = r.placement;
      c.leave.assign(size_t(p), 0);
      return std::nullopt;
    }
    case Command::Checkpoint:
      if (settings_.offer.checkpointDir.empty())
        return std::string("the job has no checkpoint folder (start it with --checkpoint-dir or --output-dir)");
      c.kind = LayoutCommand::Checkpoint;
      return std::nullopt;
    case Command::Stop:
      if (r.checkpoint && settings_.offer.checkpointDir.empty())
        return std::string("stop --checkpoint: the job has no checkpoint folder (start it with --checkpoint-dir or --output-dir)");
      c.kind = LayoutCommand::Stop;
      c.checkpoint = r.checkpoint;
      return std::nullopt;
    case Command::Rescale: break;
    default: return std::string("unknown command");
  }
  std::set<int> removed;
  for (int rank : r.removeRanks) {
    if (rank < 0 || rank >= p) return str("--remove-ranks: the job has ranks 0 to ", p - 1, ", not ", rank);
    if (rank == 0)
      return std::string("--remove-ranks: rank 0 is the job's lead (control channel, logs) and stays; remove other ranks");
    removed.insert(rank);
  }
  int processes = r.processes > 0 ? r.processes : p - int(removed.size());
  if (processes < 1) return str("--processes ", processes, ": a job needs at least one process");
  if (processes > n)
    return str("--processes ", processes, ": the job has ", n, " logical workers, so at most ", n, " processes");
  // Without --remove-ranks a shrink gives back the highest ranks.
  if (removed.empty() && processes < p) {
    for (int rank = processes; rank < p; ++rank) removed.insert(rank);
  }
  const int kept = p - int(removed.size());
  if (kept > processes)
    return str("--processes ", processes, " with --remove-ranks ", joinInts(r.removeRanks), " would keep ", kept,
               " processes; remove more ranks or ask for more processes");
  const int joiners = processes - kept;
  int hostSlots = 0;
  for (const auto& h : r.hosts) hostSlots += h.count;
  if (!r.hosts.empty() && hostSlots != joiners)
    return str("--hosts names ", hostSlots, " new processes but the rescale starts ", joiners);
  if (!r.placement.empty()) {
    if (auto why = checkCounts(r.placement, n, processes, "--placement")) return why;
  }
  if (joiners > 0 && settings_.program.empty()) return std::string("this job cannot start processes");
  // Open MPI 4.1's mpirun never exits after a spawn it could not place, so a grow that cannot
  // fit is refused here: processes started with the job live (idle, once they leave) until it
  // ends; those started by grows exit when they leave.
  const int inUse = settings_.startedWithTheJob + startedSince_;
  if (joiners > 0 && !settings_.oversubscribe && settings_.slots > 0 && inUse + joiners > settings_.slots)
    return str("more processes than there are slots: mpirun's allocation has ", settings_.slots, " slots and ",
               inUse, " are in use (", settings_.startedWithTheJob, " started with the job, ", startedSince_,
               " by grows); give mpirun more slots (--host, --hostfile) or --oversubscribe");
  for (const auto& h : r.hosts) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(h.host.c_str(), nullptr, &hints, &found);
    if (found) ::freeaddrinfo(found);
    if (rc != 0) return str("--hosts: host '", h.host, "' cannot be reached: ", ::gai_strerror(rc));
  }
  c.kind = LayoutCommand::Rescale;
  c.joiners = joiners;
  c.target = r.placement.empty() ? evenCounts(n, processes) : r.placement;
  c.leave.assign(size_t(p + joiners), 0);
  for (int rank : removed) c.leave[size_t(rank)] = 1;
  if (joiners == 0 && removed.empty() && c.target == countsOf(executor.placement()))
    return str("the job already runs on ", p, " processes with placement ", joinInts(c.target));
  return std::nullopt;
}

void ElasticController::startGrow(int count, const std::vector<control::HostSlots>& hosts) {
  grow_ = std::make_unique<Grow>();
  std::vector<std::string> where;
  for (const auto& h : hosts)
    for (int i = 0; i < h.count; ++i) where.push_back(h.host);
  where.resize(size_t(count));
  // Devices in use per host: a started process takes the lowest free index on its host.
  std::vector<std::pair<std::string, int>> used;
  for (size_t r = 0; r < memberHosts_.size(); ++r) used.emplace_back(memberHosts_[r], memberDevices_[r]);
  JoinOffer offer = settings_.offer;
  Grow* g = grow_.get();
  const std::string program = settings_.program;
  g->thread = std::thread([g, where, used, offer, program]() mutable {
    try {
      for (const std::string& host : where) {
        auto process = comm::SpawnedProcess::start(program, {"--joining-running-job"}, host);
        const json hello = json::parse(process->receive());
        const std::string itsHost = hello.at("hello").get<std::string>();
        int device = 0;
        while (std::any_of(used.begin(), used.end(), [&](const auto& u) { return u.first == itsHost && u.second == device; }))
          ++device;
        used.emplace_back(itsHost, device);
        offer.job.deviceIndex = device;
        process->send(toJson(offer).dump());
        g->processes.push_back(std::move(process));
        g->ready.push_back(false);
      }
    } catch (const std::exception& e) {
      g->error = e.what();
    }
    g->started.store(true);
  });
}

// Whether the pending request applies at the boundary after `stepsDone` (--at-step).
bool ElasticController::dueAt(int64_t stepsDone) const {
  const int64_t at = pending_->request.request().atStep;
  return at == 0 || stepsDone >= at;
}

// The lead decides what happens at this boundary.
LayoutCommand ElasticController::nextCommand(int64_t stepsDone, est::EstExecutor& executor) {
  LayoutCommand none;
  if (!server_) return none;
  // Requests line up in arrival order; one is carried out at a time.
  while (auto request = server_->take()) {
    queue_.push_back(std::make_unique<Pending>(Pending{std::move(*request), {}, stepsDone}));
    ++requestsReceived_;
  }
  if (!pending_) {
    if (queue_.empty()) return none;
    pending_ = std::move(queue_.front());
    queue_.pop_front();
    const control::Request& r = pending_->request.request();
    spdlog::info("control: {} (at step {})", control::describe(r), stepsDone);
    if (stepsDone >= executor.plan().totalSteps) {
      pending_->request.reply({control::Outcome::Refused, "the job has finished", ""});
      pending_.reset();
      return none;
    }
    // A step is "passed" if it was when the request arrived; one that waited behind others
    // applies at the first boundary it can.
    if (r.atStep > 0 && r.atStep < pending_->arrivedAfter) {
      pending_->request.reply({control::Outcome::Refused,
                               str("--at-step ", r.atStep, " has passed: the job was after step ",
                                   pending_->arrivedAfter, " when the request arrived"),
                               ""});
      pending_.reset();
      return none;
    }
    if (r.atStep >= executor.plan().totalSteps) {
      pending_->request.reply({control::Outcome::Refused,
                               str("--at-step ", r.atStep, ": the job ends after step ", executor.plan().totalSteps),
                               ""});
      pending_.reset();
      return none;
    }
    if (auto why = check(r, executor, pending_->command)) {
      spdlog::warn("control: refused {}: {}", control::describe(r), *why);
      pending_->request.reply({control::Outcome::Refused, *why, ""});
      pending_.reset();
      return none;
    }
    if (pending_->command.joiners > 0) {
      spdlog::info("control: starting {} process(es) while the job trains", pending_->command.joiners);
      startGrow(int(pending_->command.joiners), r.hosts);
      return none;
    }
  }
  if (!grow_) return dueAt(stepsDone) ? pending_->command : none;
  // A grow in progress: its processes say when they are ready (or why not).
  if (!grow_ || !grow_->started.load()) return none;
  std::string failure = grow_->error;
  for (size_t i = 0; failure.empty() && i < grow_->processes.size(); ++i) {
    if (grow_->ready[i]) continue;
    if (auto message = grow_->processes[i]->poll()) {
      const json m = json::parse(*message);
      if (m.contains("ready")) {
        grow_->ready[i] = true;
      } else {
        failure = m.value("failed", std::string("the started process failed"));
        grow_->processes[i].reset();
      }
    }
  }
  if (failure.empty() && secondsSince(grow_->begin) > settings_.joinTimeoutSeconds)
    failure = str("the started processes were not ready within --join-timeout ", settings_.joinTimeoutSeconds, " s");
  if (!failure.empty()) {
    const std::string why = str("grow failed, the job goes on with ", executor.placement().processes(),
                                " processes: ", failure);
    spdlog::error("control: {}", why);
    grow_->cancel(why);
    grow_.reset();
    pending_->request.reply({control::Outcome::Failed, why, ""});
    pending_.reset();
    return none;
  }
  if (!std::all_of(grow_->ready.begin(), grow_->ready.end(), [](bool b) { return b; })) return none;
  if (grow_->startSeconds == 0) grow_->startSeconds = secondsSince(grow_->begin);
  if (!dueAt(stepsDone)) return none;
  return pending_->command;
}

est::StepAction ElasticController::afterStep(int64_t stepsDone, est::EstExecutor& executor) {
  const auto t0 = Clock::now();
  if (policy_.afterStep(stepsDone, executor) == est::StepAction::Stop) {
    finish("the job stopped");
    return est::StepAction::Stop;
  }
  updateStatus(stepsDone, executor);
  std::optional<std::vector<int>> replan;
  if (autoPlacer_) replan = autoPlacer_->afterStep(stepsDone, executor, lead() && (pending_ || !queue_.empty()));
  LayoutCommand command;
  if (lead()) command = nextCommand(stepsDone, executor);
  const bool autoMove = lead() && command.kind == LayoutCommand::None && !pending_ && replan;
  if (autoMove) {  // an internal placement request
    command.kind = LayoutCommand::Placement;
    command.target = *replan;
    command.leave.assign(replan->size(), 0);
  }
  // One broadcast from the lead: what changes at this boundary (almost always nothing).
  comm::Communicator& host = executor.comm();
  at::Tensor header = at::zeros({kHeader}, at::kLong);
  auto* h = header.data_ptr<int64_t>();
  h[0] = command.kind;
  h[1] = command.joiners;
  h[2] = command.checkpoint;
  h[3] = int64_t(command.target.size());
  h[4] = int64_t(command.leave.size());
  host.broadcast(header, 0);
  if (h[0] == LayoutCommand::None) return est::StepAction::Continue;
  command.kind = LayoutCommand::Kind(h[0]);
  command.joiners = h[1];
  command.checkpoint = h[2] != 0;
  at::Tensor lists = at::zeros({h[3] + h[4] + 1}, at::kLong);
  if (lead()) {
    auto* l = lists.data_ptr<int64_t>();
    for (size_t i = 0; i < command.target.size(); ++i) l[i] = command.target[i];
    for (size_t i = 0; i < command.leave.size(); ++i) l[h[3] + int64_t(i)] = command.leave[i];
  }
  host.broadcast(lists, 0);
  const auto* l = lists.data_ptr<int64_t>();
  command.target.assign(l, l + h[3]);
  command.leave.assign(l + h[3], l + h[3] + h[4]);

  const std::string from = executor.placement().toString();
  const int fromProcesses = executor.placement().processes();
  if (command.kind == LayoutCommand::Checkpoint || command.kind == LayoutCommand::Stop) {
    const bool write = command.kind == LayoutCommand::Checkpoint || command.checkpoint;
    if (write) elastic::checkpointNow(executor, settings_.offer.checkpointDir);
    if (pending_) {
      pending_->request.reply({control::Outcome::Done,
                               command.kind == LayoutCommand::Checkpoint
                                   ? str("checkpoint at step ", stepsDone, " written to ", settings_.offer.checkpointDir)
                                   : str("stopping after step ", stepsDone,
                                         write ? " with a checkpoint in " + settings_.offer.checkpointDir : ""),
                               ""});
      pending_.reset();
    }
    if (command.kind == LayoutCommand::Checkpoint) return est::StepAction::Continue;
    finish("the job stopped");
    return est::StepAction::Stop;
  }

  const bool stays = apply(command, executor, nullptr);
  if (!stays) return est::StepAction::Stop;
  const double pause = secondsSince(t0);
  ++rescales_;
  maxPause_ = std::max(maxPause_, pause);
  if (lead()) {
    const double startup = grow_ ? grow_->startSeconds : 0;
    const std::string to = executor.placement().toString();
    const double mb = double(executor.lastLayoutBytes()) / 1e6;
    std::string message = str("rescaled from ", fromProcesses, " processes (", from, ") to ",
                              executor.placement().processes(), " (", to, ") at step ", stepsDone, ": ",
                              tl::str(int(pause * 1000)), " ms pause, ", mb, " MB moved");
    if (command.joiners > 0) message += str(", ", command.joiners, " process(es) started in ", startup, " s while the job trained");
    if (autoMove) autoPlacer_->moved(stepsDone);
    spdlog::info("{}{}", message, autoMove ? " (placement auto)" : "");
    if (metrics_ && metrics_->enabled()) {
      metrics_->write({{"type", "rescale"},
                       {"by", autoMove ? "placement auto" : "tl-ctl"},
                       {"step", stepsDone},
                       {"from", from},
                       {"to", to},
                       {"pause_s", pause},
                       {"bytes_moved", executor.lastLayoutBytes()},
                       {"started_processes", command.joiners},
                       {"startup_s", startup},
                       {"communicators_s", lastJoinSeconds_},
                       {"layout_change_s", lastLayoutSeconds_},
                       {"time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}});
    }
    {
      std::lock_guard<std::mutex> lock(statusMutex_);
      status_["last_rescale"] = str("step ", stepsDone, ": ", from, " -> ", to, " (", int(pause * 1000), " ms)");
    }
    grow_.reset();
    if (pending_) {
      pending_->request.reply({control::Outcome::Done, message, ""});
      pending_.reset();
    }
    updateStatus(stepsDone, executor);
  }
  return est::StepAction::Continue;
}

comm::Communicator& Membership::forExecutor(comm::Communicator& raw) {
  if (!recorder) return raw;
  std::unique_ptr<comm::Communicator>& view = views_[&raw];
  if (!view) view = recorder->view(raw);
  return *view;
}

void Membership::retire(std::unique_ptr<comm::Communicator> raw,
                        std::vector<std::unique_ptr<comm::Communicator>>& retired) {
  if (!raw) return;
  auto it = views_.find(raw.get());
  if (it != views_.end()) {
    retired.push_back(std::move(it->second));
    views_.erase(it);
  }
  retired.push_back(std::move(raw));
}

bool ElasticController::apply(const LayoutCommand& command, est::EstExecutor& executor, comm::ParentLink* joining) {
  // Communicators replaced here stay alive until the layout change is done.
  std::vector<std::unique_ptr<comm::Communicator>> retired;
  std::vector<int> current;
  const auto t0 = Clock::now();
  if (command.joiners > 0) {
    if (!joining) {
      current = countsOf(executor.placement());
      // Each started process joins in turn; the members keep their ranks.
      for (int64_t j = 0; j < command.joiners; ++j) {
        comm::SpawnedProcess* process = nullptr;
        if (lead()) {
          process = grow_->processes.at(size_t(j)).get();
          process->send(json{{"join", {{"index", j}, {"after", command.joiners - 1 - j},
                                       {"command", commandJson(command, current)}}}}
                            .dump());
        }
        auto widened = comm::admitProcess(*membership_.host, process);
        membership_.retire(std::move(membership_.host), retired);
        membership_.host = std::move(widened);
      }
    } else {
      current = command.current;
    }
    executor.admit(current, membership_.forExecutor(*membership_.host), membership_.forExecutor(membership_.device()));
  }
  comm::Communicator& host = *membership_.host;
  const bool leaving = !command.leave.empty() && command.leave.at(size_t(host.rank())) != 0;
  const bool anyLeave = std::any_of(command.leave.begin(), command.leave.end(), [](int x) { return x != 0; });
  if (anyLeave && membership_.recorder) membership_.recorder->beforeLeave(host, command.leave, executor.stepsDone());
  std::unique_ptr<comm::Communicator> newHost;
  if (anyLeave) newHost = host.split(leaving ? -1 : 0, host.rank());
  comm::Communicator* finalHost = leaving ? nullptr : (newHost ? newHost.get() : &host);
  std::unique_ptr<comm::Communicator> newGpu;
  const bool membersChange = anyLeave || command.joiners > 0;
  if (finalHost && membership_.useNccl && membersChange)
    newGpu = comm::createNcclCommunicator(*finalHost, membership_.deviceIndex);
  comm::Communicator* finalDevice = nullptr;
  if (finalHost) {
    if (newGpu) finalDevice = newGpu.get();
    else if (membership_.useNccl) finalDevice = membership_.gpu.get();
    else finalDevice = finalHost;
  }
  lastJoinSeconds_ = secondsSince(t0);
  const auto t1 = Clock::now();
  executor.changeLayout(est::Placement::withIdleMembers(command.target),
                        finalHost ? &membership_.forExecutor(*finalHost) : nullptr,
                        finalDevice ? &membership_.forExecutor(*finalDevice) : nullptr);
  lastLayoutSeconds_ = secondsSince(t1);
  if (leaving) {
    membership_.retire(std::move(membership_.host), retired);
    membership_.retire(std::move(membership_.gpu), retired);
    return false;
  }
  if (newHost) {
    membership_.retire(std::move(membership_.host), retired);
    membership_.host = std::move(newHost);
  }
  if (newGpu) {
    membership_.retire(std::move(membership_.gpu), retired);
    membership_.gpu = std::move(newGpu);
  }
  if (membersChange) gatherHosts(executor);
  return true;
}

std::unique_ptr<JoinedProcess> joinRunningJob(comm::ParentLink& lead,
                                              const std::function<void(const JobConfig&)>& beforeBuild) {
  auto joined = std::make_unique<JoinedProcess>();
  lead.send(json{{"hello", hostName()}}.dump());
  joined->offer = joinOfferFromJson(json::parse(lead.receive()));
  const JoinOffer& o = joined->offer;
  Membership& m = joined->membership;
  try {
    m.useNccl = o.job.device.isCuda() && o.gpuComm == "nccl";
    m.startedWithTheJob = false;
    m.deviceIndex = o.job.deviceIndex;
    if (beforeBuild) beforeBuild(o.job);
    // This process alone until it joins: it builds data, model, optimizer and reducer now,
    // while the job trains.
    m.host = comm::createMpiWorldCommunicator();
    m.host->setTimeout(collectiveTimeout(o.job));
    joined->executor = est::ExecutorBuilder(o.job)
                           .layout(est::Placement::even(o.job.logicalWorkers, 1), *m.host, *m.host)
                           .build();
    if (!o.job.device.isSimulated()) warmUp(*joined->executor);
  } catch (const std::exception& e) {
    lead.send(json{{"failed", str("the process started on ", hostName(), " could not get ready: ", e.what())}}.dump());
    throw;
  }
  lead.send(json{{"ready", true}}.dump());
  const json answer = json::parse(lead.receive());
  if (answer.contains("cancel")) {
    spdlog::info("not joining the job: {}", answer.at("cancel").get<std::string>());
    return nullptr;
  }
  const json& join = answer.at("join");
  const json& c = join.at("command");
  LayoutCommand& command = joined->command;
  command.kind = LayoutCommand::Kind(c.at("kind").get<int64_t>());
  command.joiners = c.at("joiners").get<int64_t>();
  command.target = c.at("target").get<std::vector<int>>();
  command.leave = c.at("leave").get<std::vector<int>>();
  command.current = c.at("current").get<std::vector<int>>();
  command.checkpoint = c.at("checkpoint").get<bool>();
  joined->retired.push_back(std::move(m.host));  // the executor still uses it until it is admitted
  m.host = comm::joinLead(lead);
  m.host->setTimeout(collectiveTimeout(o.job));
  // The processes started after this one join next; this one is a member by then.
  for (int64_t j = 0; j < join.at("after").get<int64_t>(); ++j) {
    auto widened = comm::admitProcess(*m.host, nullptr);
    joined->retired.push_back(std::move(m.host));
    m.host = std::move(widened);
  }
  return joined;
}

}  // namespace tl::launcher
