#include "elastic/rescale/join_running_job.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include "common/check.h"
#include "common/files.h"
#include "est/executor_builder.h"
#include "runtime/comm/mpi/mpi_communicator.h"

namespace tl::elastic {
namespace {

using nlohmann::json;

// One forward and backward pass of a batch of zeros, so that the first real step of a process
// that joins does not pay for first-use allocations and kernel set-up inside the job's pause.
// It leaves nothing behind: model parameters and buffers are replaced by the job's at the join,
// gradients are dropped here, the optimizer is not stepped, and each EST installs its own
// generator states when it runs.
void warmUp(est::EstExecutor& executor) {
  const JobConfig& job = executor.config();
  models::Model& model = executor.model();
  const auto parameters = model.parameters();
  // A TorchScript module (--model-file) takes whatever its data gives, not a batch of images.
  if (parameters.empty() || !job.model.file.empty()) return;
  at::Tensor x = at::zeros({job.batch, job.model.inChannels, job.model.imageSize, job.model.imageSize},
                           at::TensorOptions().device(parameters.front().device()));
  model.forward(x).sum().backward();
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
}

}  // namespace

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
  joined->command = layoutCommandFromJson(join.at("command"));
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

}  // namespace tl::elastic
