#include "launcher/usage_recording.h"

#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>  // at::get_num_threads (ATen.h no longer brings it in libtorch 2.x)

#include "common/files.h"
#include "runtime/comm/json_collectives.h"
#include "runtime/usage/counting_communicator.h"

namespace tl::launcher {
namespace {

nlohmann::json orNull(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

usage::UsageOptions usageOptionsFor(const JobConfig& job) {
  usage::UsageOptions o;
  o.computeThreads = job.computeThreads > 0 ? job.computeThreads : at::get_num_threads();
  o.gpu = job.device.isCuda();
  o.deviceIndex = job.deviceIndex;
  return o;
}

UsageRecording::UsageRecording(usage::UsageRecorder& recorder, train::MetricsLog& metrics, bool startedByGrow)
    : recorder_(recorder), metrics_(metrics), host_(hostName()), pid_(int64_t(::getpid())), startedByGrow_(startedByGrow) {}

void UsageRecording::joinedAt(int64_t stepsDone) {
  joinedAtStep_ = stepsDone;
  recorder_.start();
  recorder_.markStep(stepsDone);  // the first boundary: its steady state starts here
}

void UsageRecording::markStep(int64_t stepsDone, int rank) {
  auto window = recorder_.markStep(stepsDone);
  if (!window) return;
  (*window)["rank"] = rank;
  (*window)["host"] = host_;
  (*window)["pid"] = pid_;
  if (rank == 0) metrics_.write(*window);
  else windows_.push_back(std::move(*window));
}

std::unique_ptr<comm::Communicator> UsageRecording::view(comm::Communicator& raw) {
  return usage::countTraffic(raw, recorder_.traffic());
}

nlohmann::json UsageRecording::report(int rank, std::optional<int64_t> leftAtStep) const {
  nlohmann::json r = recorder_.steadyFigures();
  r["rank"] = rank;
  r["host"] = host_;
  r["pid"] = pid_;
  r["started_by_grow"] = startedByGrow_;
  r["joined_at_step"] = orNull(joinedAtStep_);
  r["left_at_step"] = orNull(leftAtStep);
  r["recorded"] = recorder_.started();
  r["windows"] = windows_;
  return r;
}

nlohmann::json UsageRecording::publish(nlohmann::json report) {
  for (const auto& w : report["windows"]) metrics_.write(w);
  report.erase("windows");
  return report;
}

void UsageRecording::beforeLeave(comm::Communicator& host, const std::vector<int>& leave, int64_t stepsDone) {
  const int rank = host.rank();
  const bool leaving = leave.at(size_t(rank)) != 0;
  const auto all = comm::allgatherJson(host, leaving ? report(rank, stepsDone) : nlohmann::json());
  if (leaving) windows_.clear();
  if (rank != 0) return;
  for (size_t r = 0; r < all.size(); ++r) {
    if (leave.at(r) != 0) departed_.push_back(publish(all[r]));
  }
}

nlohmann::json UsageRecording::gather(comm::Communicator& host) {
  const int rank = host.rank();
  const auto all = comm::allgatherJson(host, report(rank, std::nullopt));
  windows_.clear();
  nlohmann::json out = nlohmann::json::array();
  if (rank != 0) return out;
  for (const nlohmann::json& theirs : all) out.push_back(publish(theirs));
  for (const auto& d : departed_) out.push_back(d);
  return out;
}

est::StepAction UsageObserver::afterStep(int64_t stepsDone, est::EstExecutor& executor) {
  recording_.markStep(stepsDone, executor.comm().rank());
  return inner_ ? inner_->afterStep(stepsDone, executor) : est::StepAction::Continue;
}

}  // namespace tl::launcher
