#include "launcher/usage_recording.h"

#include <unistd.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

#include "runtime/usage/counting_communicator.h"

namespace tl::launcher {
namespace {

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

nlohmann::json orNull(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

usage::UsageOptions usageOptionsFor(const JobConfig& job) {
  usage::UsageOptions o;
  o.computeThreads = job.computeThreads > 0 ? job.computeThreads : at::get_num_threads();
  o.gpu = job.device.isCuda();
  o.deviceIndex = job.deviceIndex;
  return o;
}

std::vector<std::string> allgatherText(comm::Communicator& c, const std::string& mine) {
  at::Tensor lengths = c.allgather(at::full({1}, int64_t(mine.size()), at::kLong)).contiguous().view({-1});
  const int64_t width = std::max<int64_t>(1, lengths.max().item<int64_t>());
  at::Tensor padded = at::zeros({width}, at::kByte);
  std::memcpy(padded.data_ptr<uint8_t>(), mine.data(), mine.size());
  at::Tensor all = c.allgather(padded).contiguous();
  std::vector<std::string> out;
  const auto* bytes = reinterpret_cast<const char*>(all.data_ptr<uint8_t>());
  for (int64_t r = 0; r < all.size(0); ++r) out.emplace_back(bytes + r * width, size_t(lengths[r].item<int64_t>()));
  return out;
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
  const auto all = allgatherText(host, leaving ? report(rank, stepsDone).dump() : std::string());
  if (leaving) windows_.clear();
  if (rank != 0) return;
  for (size_t r = 0; r < all.size(); ++r) {
    if (leave.at(r) != 0) departed_.push_back(publish(nlohmann::json::parse(all[r])));
  }
}

nlohmann::json UsageRecording::gather(comm::Communicator& host) {
  const int rank = host.rank();
  const auto all = allgatherText(host, report(rank, std::nullopt).dump());
  windows_.clear();
  nlohmann::json out = nlohmann::json::array();
  if (rank != 0) return out;
  for (const std::string& text : all) out.push_back(publish(nlohmann::json::parse(text)));
  for (const auto& d : departed_) out.push_back(d);
  return out;
}

est::StepAction UsageObserver::afterStep(int64_t stepsDone, est::EstExecutor& executor) {
  recording_.markStep(stepsDone, executor.comm().rank());
  return inner_ ? inner_->afterStep(stepsDone, executor) : est::StepAction::Continue;
}

}  // namespace tl::launcher
