#include "launcher/usage_recording.h"

#include <ATen/ATen.h>

namespace tl::launcher {

usage::UsageOptions usageOptionsFor(const JobConfig& job) {
  usage::UsageOptions o;
  o.computeThreads = job.computeThreads > 0 ? job.computeThreads : at::get_num_threads();
  o.gpu = job.device.isCuda();
  o.deviceIndex = job.deviceIndex;
  return o;
}

est::StepAction UsageObserver::afterStep(int64_t stepsDone, est::EstExecutor& executor) {
  if (auto window = recorder_.markStep(stepsDone)) metrics_.write(*window);
  return inner_ ? inner_->afterStep(stepsDone, executor) : est::StepAction::Continue;
}

nlohmann::json gatherUsage(comm::Communicator& host, const usage::UsageRecorder* recorder) {
  constexpr int64_t kWidth = int64_t(usage::kMetricNames.size()) + 1;
  at::Tensor mine = at::zeros({kWidth}, at::kDouble);
  if (recorder) {
    const usage::TwelveMetrics m = recorder->twelve();
    for (size_t i = 0; i < m.size(); ++i) mine[int64_t(i)] = m[i];
    mine[kWidth - 1] = 1.0;
  }
  at::Tensor all = host.allgather(mine).contiguous();
  auto a = all.accessor<double, 2>();
  nlohmann::json out = nlohmann::json::array();
  for (int64_t r = 0; r < all.size(0); ++r) {
    nlohmann::json p = {{"rank", r}, {"recorded", a[r][kWidth - 1] > 0}};
    for (size_t i = 0; i < usage::kMetricNames.size(); ++i) p[usage::kMetricNames[i]] = a[r][int64_t(i)];
    out.push_back(p);
  }
  return out;
}

}  // namespace tl::launcher
