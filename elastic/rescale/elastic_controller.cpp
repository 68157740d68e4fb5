#include "elastic/rescale/elastic_controller.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>

#include "common/check.h"
#include "common/clock.h"
#include "elastic/placement/layout_text.h"
#include "elastic/rescale/host_lookup.h"
#include "elastic/rescale/request_check.h"
#include "runtime/comm/json_collectives.h"

namespace tl::elastic {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Every boundary's broadcast: null (nothing changes) is one byte, a command for a few members
// fits too; a larger one costs a second broadcast.
const comm::JsonCollectiveOptions kBoundaryCollective{64, {}};

double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::vector<std::string> hostNames(const control::Request& r) {
  std::vector<std::string> names;
  for (const auto& h : r.hosts) names.push_back(h.host);
  return names;
}

}  // namespace

// A request on the lead, from the control channel to its answer.
struct ElasticController::Pending {
  control::PendingRequest request;
  int64_t arrivedAfter = 0;             // the step the job had done when the lead took it off the channel
  std::unique_ptr<HostLookup> lookup;   // its --hosts, resolving off the training thread
  bool checked = false;
  LayoutCommand command;                // once checked
};

ElasticController::ElasticController(Membership& membership, CheckpointPolicy& policy, ElasticSettings settings,
                                     train::MetricsLog* metrics)
    : membership_(membership), policy_(policy), settings_(std::move(settings)), metrics_(metrics) {
  const char* times = std::getenv("TL_RESCALE_STEP_TIMES");
  timeStepsWanted_ = times && std::string(times) == "1";
}

ElasticController::~ElasticController() {
  if (grow_) grow_->cancel("the job ended");
}

void ElasticController::survivorsWentOn(est::EstExecutor& executor) {
  if (grow_) grow_->cancel("members of the job were lost");
  grow_.reset();
  if (pending_) refusePending(control::Outcome::Failed, "members of the job were lost; the survivors went on in place");
  members_ = gatherMembers(executor.comm(), membership_);
  if (membersChanged_) membersChanged_(members_);
  updateStatus(executor.stepsDone(), executor);
}

void ElasticController::startControl(est::EstExecutor& executor) {
  members_ = gatherMembers(executor.comm(), membership_);
  updateStatus(executor.stepsDone(), executor);
  if (lead()) listen();
}

void ElasticController::takeOverLead(est::EstExecutor& executor, train::MetricsLog* metrics) {
  metrics_ = metrics;
  updateStatus(executor.stepsDone(), executor);
  try {
    listen();
  } catch (const std::exception& e) {
    spdlog::warn("the lead was lost, and its control channel could not be started again here: {}", e.what());
  }
}

void ElasticController::listen() {
  if (settings_.controlBind.empty() || settings_.offer.job.outputDir.empty()) return;
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
  if (pending_) refusePending(control::Outcome::Refused, why);
  for (auto& p : queue_) p->request.reply({control::Outcome::Refused, why, ""});
  queue_.clear();
  if (server_) {
    while (auto r = server_->take()) r->reply({control::Outcome::Refused, why, ""});
    server_.reset();
  }
}

void ElasticController::refusePending(control::Outcome outcome, const std::string& why) {
  pending_->request.reply({outcome, why, ""});
  pending_.reset();
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
  status_["hosts"] = members_.hosts;
  status_["devices"] = members_.devices;  // device index per member: its local rank on its host
  status_["pids"] = members_.pids;        // process id per member, by rank (which process to signal)
  status_["logical_workers"] = executor.placement().logicalWorkers();
  status_["rescales"] = rescales_;
  if (!status_.contains("last_rescale")) status_["last_rescale"] = "none";
  status_["pending"] = pending_ ? control::describe(pending_->request.request()) : "none";
  status_["queued"] = queue_.size();
  status_["requests_received"] = requestsReceived_;
  if (autoPlacer_ && autoPlacer_->options().enabled) status_["plan"] = autoPlacer_->statusJson();
}

// Whether the pending request applies at the boundary after `stepsDone` (--at-step).
bool ElasticController::dueAt(int64_t stepsDone) const {
  const int64_t at = pending_->request.request().atStep;
  return at == 0 || stepsDone >= at;
}

// The lead decides what happens at this boundary.
LayoutCommand ElasticController::nextCommand(int64_t stepsDone, est::EstExecutor& executor) {
  if (!server_) return {};
  // Requests line up in arrival order; one is carried out at a time. Host names are resolved
  // from the moment a request is taken, on a thread of their own.
  while (auto request = server_->take()) {
    auto p = std::make_unique<Pending>(Pending{std::move(*request), stepsDone, nullptr, false, {}});
    if (!p->request.request().hosts.empty()) p->lookup = std::make_unique<HostLookup>(hostNames(p->request.request()));
    queue_.push_back(std::move(p));
    ++requestsReceived_;
  }
  if (!pending_) {
    if (queue_.empty()) return {};
    pending_ = std::move(queue_.front());
    queue_.pop_front();
    spdlog::info("control: {} (at step {})", control::describe(pending_->request.request()), stepsDone);
  }
  if (!pending_->checked) return checkPending(stepsDone, executor).value_or(LayoutCommand());
  if (grow_) return growProgress(stepsDone, executor).value_or(LayoutCommand());
  return dueAt(stepsDone) ? pending_->command : LayoutCommand();
}

// Checks the pending request once its host names are resolved: refuses it, starts its grow, or
// returns its command when it is due.
std::optional<LayoutCommand> ElasticController::checkPending(int64_t stepsDone, est::EstExecutor& executor) {
  if (pending_->lookup && !pending_->lookup->done()) return std::nullopt;  // the others train on
  pending_->checked = true;
  TakenRequest taken{pending_->request.request(), pending_->arrivedAfter,
                     pending_->lookup ? pending_->lookup->unreachable() : UnreachableHosts()};
  JobLayout layout{executor.placement().logicalWorkers(), countsOf(executor.placement()), stepsDone,
                   executor.plan().totalSteps, !settings_.offer.checkpointDir.empty()};
  ProcessSlots slots{!settings_.program.empty(), settings_.slots, settings_.oversubscribe,
                     settings_.startedWithTheJob, members_.startedByGrows};
  const RequestVerdict verdict = checkRequest(taken, layout, slots);
  if (!verdict.accepted()) {
    spdlog::warn("control: refused {}: {}", control::describe(taken.request), verdict.refusal);
    refusePending(control::Outcome::Refused, verdict.refusal);
    return std::nullopt;
  }
  pending_->command = verdict.command;
  if (pending_->command.joiners > 0) {
    spdlog::info("control: starting {} process(es) while the job trains", pending_->command.joiners);
    JoinOffer offer = settings_.offer;
    if (const char* warm = std::getenv("TL_JOIN_WARMUP")) offer.warmUp = std::atoi(warm);
    grow_ = std::make_unique<Grow>(settings_.program, int(pending_->command.joiners), taken.request.hosts, members_,
                                   offer);
    return std::nullopt;
  }
  return dueAt(stepsDone) ? std::optional<LayoutCommand>(pending_->command) : std::nullopt;
}

// A grow in progress: its processes say when they are ready (or why not).
std::optional<LayoutCommand> ElasticController::growProgress(int64_t stepsDone, est::EstExecutor& executor) {
  if (auto failure = grow_->poll(settings_.joinTimeoutSeconds)) {
    const std::string why = str("grow failed, the job goes on with ", executor.placement().processes(),
                                " processes: ", *failure);
    spdlog::error("control: {}", why);
    grow_->cancel(why);
    grow_.reset();
    refusePending(control::Outcome::Failed, why);
    return std::nullopt;
  }
  if (!grow_->ready() || !dueAt(stepsDone)) return std::nullopt;
  return pending_->command;
}

est::StepAction ElasticController::afterStep(int64_t stepsDone, est::EstExecutor& executor) {
  if (stepTimes_.on) timeStep(stepsDone, executor);
  const est::StepAction action = boundary(stepsDone, executor);
  if (stepTimes_.on) {  // the next step starts here (the change itself is not part of it)
    stepTimes_.start = Clock::now();
    stepTimes_.cpuStart = processCpuSeconds();
  }
  return action;
}

// A step after a timed change (LayoutCommand::timeSteps) ended: this member's wall and CPU
// seconds for it; two steps after the change, one allgather (the same boundary on every member)
// and the lead writes them all.
void ElasticController::timeStep(int64_t stepsDone, est::EstExecutor& executor) {
  StepTimes& t = stepTimes_;
  if (stepsDone <= t.changedAt) return;
  t.wall.push_back(secondsSince(t.start));
  t.cpu.push_back(processCpuSeconds() - t.cpuStart);
  const est::EstExecutor::StepSplit& split = executor.lastStepSplit();
  t.startRound.push_back(split.startRound);
  t.dataWait.push_back(split.dataWait);
  t.compute.push_back(split.compute);
  t.exchange.push_back(split.comm);
  if (stepsDone < t.changedAt + 2) return;
  t.on = false;
  const json mine = {{"rank", executor.comm().rank()}, {"joined", t.joined},     {"wall_s", t.wall},
                     {"cpu_s", t.cpu},                {"start_round_s", t.startRound}, {"data_wait_s", t.dataWait},
                     {"compute_s", t.compute},        {"exchange_s", t.exchange}};
  const std::vector<json> all = comm::allgatherJson(executor.comm(), mine);
  json record = {{"type", "rescale_steps"}, {"step", t.changedAt}, {"processes", all}};
  if (t.replicaBytes > 0) {
    const double link = linkSeconds(t.replicaBytes, executor);
    record["link_bytes"] = t.replicaBytes;
    record["link_s"] = link;
  }
  if (lead() && metrics_ && metrics_->enabled()) metrics_->write(record);
}

// What the link itself carries, for the transfer to be measured against: one broadcast of
// `bytes` (one copy of the replica, already paged in) from rank 0 to the members that joined,
// over a communicator split from the job's as the transfer's was; the slowest member's
// seconds. Collective over the job (every member knows whether it joined).
double ElasticController::linkSeconds(int64_t bytes, est::EstExecutor& executor) {
  comm::Communicator& job = executor.comm();
  const bool inParty = job.rank() == 0 || stepTimes_.joined;
  auto party = job.split(inParty ? 0 : -1, job.rank());
  at::Tensor seconds = at::zeros({1}, at::kDouble);
  if (party) {
    at::Tensor buffer = at::zeros({bytes}, at::kByte);
    party->barrier();
    const auto t0 = Clock::now();
    party->broadcast(buffer, 0);
    seconds.fill_(secondsSince(t0));
  }
  job.allreduce(seconds, comm::ReduceOp::Max);
  return seconds.item<double>();
}

est::StepAction ElasticController::boundary(int64_t stepsDone, est::EstExecutor& executor) {
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
  if (command.kind == LayoutCommand::Placement || command.kind == LayoutCommand::Rescale)
    command.timeSteps = timeStepsWanted_;
  // One broadcast from the lead: what changes at this boundary (almost always nothing: null).
  const json sent = lead() && command.kind != LayoutCommand::None ? toJson(command) : json(nullptr);
  const json received = comm::broadcastJson(executor.comm(), sent, 0, kBoundaryCollective);
  if (received.is_null()) return est::StepAction::Continue;
  command = layoutCommandFromJson(received);
  lastBoundary_ = secondsSince(t0);
  if (command.kind == LayoutCommand::Checkpoint || command.kind == LayoutCommand::Stop)
    return checkpointOrStop(command, stepsDone, executor);

  const std::string from = executor.placement().toString();
  const int fromProcesses = executor.placement().processes();
  if (!apply(command, executor, nullptr)) return est::StepAction::Stop;
  const double pause = secondsSince(t0);
  ++rescales_;
  maxPause_ = std::max(maxPause_, pause);
  if (lead()) reportRescale(command, stepsDone, executor, from, fromProcesses, pause, autoMove);
  return est::StepAction::Continue;
}

est::StepAction ElasticController::checkpointOrStop(const LayoutCommand& command, int64_t stepsDone,
                                                    est::EstExecutor& executor) {
  const bool write = command.kind == LayoutCommand::Checkpoint || command.checkpoint;
  if (write) checkpointNow(executor, settings_.offer.checkpointDir);
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

void ElasticController::reportRescale(const LayoutCommand& command, int64_t stepsDone, est::EstExecutor& executor,
                                      const std::string& from, int fromProcesses, double pause, bool autoMove) {
  const double startup = grow_ ? grow_->startSeconds() : 0;
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
                     {"boundary_s", lastBoundary_},
                     {"communicators_s", lastChange_.communicators},
                     {"layout_change_s", lastChange_.layout},
                     {"transfer_s", lastChange_.transfer},
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

bool ElasticController::apply(const LayoutCommand& command, est::EstExecutor& executor, comm::ParentLink* joining) {
  const JoinerLink joinerLink = [this, &command](int64_t j, const std::vector<int>& current) {
    return grow_->join(j, command, current);
  };
  if (!changeMembers(membership_, command, executor, joining, lead(), joinerLink, lastChange_)) return false;
  if (command.joiners > 0 ||
      std::any_of(command.leave.begin(), command.leave.end(), [](int x) { return x != 0; })) {
    members_ = gatherMembers(executor.comm(), membership_);
    if (membersChanged_) membersChanged_(members_);
  }
  stepTimes_ = StepTimes();
  if (command.timeSteps) {
    stepTimes_.on = true;
    stepTimes_.joined = joining != nullptr;
    stepTimes_.changedAt = executor.stepsDone();
    stepTimes_.start = Clock::now();
    stepTimes_.cpuStart = processCpuSeconds();
    stepTimes_.replicaBytes = executor.lastReplicaBytes();
  }
  return true;
}

}  // namespace tl::elastic
