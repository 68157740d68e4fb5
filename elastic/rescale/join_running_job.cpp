#include "elastic/rescale/join_running_job.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/files.h"
#include "dataload/batch_tensors.h"
#include "est/executor_builder.h"
#include "runtime/models/model.h"
#include "runtime/optim/optimizer.h"
#include "runtime/train/step.h"
#include "runtime/comm/mpi/mpi_communicator.h"

namespace tl::elastic {
namespace {

using nlohmann::json;

// One forward and backward pass of a batch of zeros (built-in models only): the warm-up before
// issue 43 (JoinOffer::warmUp 1, kept to measure against).
void forwardBackwardOfZeros(est::EstExecutor& executor) {
  const JobConfig& job = executor.config();
  models::Model& model = executor.model();
  const auto parameters = model.parameters();
  if (parameters.empty() || !job.model.file.empty()) return;
  at::Tensor x = at::zeros({job.batch, job.model.inChannels, job.model.imageSize, job.model.imageSize},
                           at::TensorOptions().device(parameters.front().device()));
  model.forward(x).sum().backward();
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
}

// Restores the default generators (CPU, and the replica's CUDA device) when the scope ends.
class KeepGenerators {
 public:
  explicit KeepGenerators(c10::Device device) : cpu_(at::detail::getDefaultCPUGenerator()), cpuState_(cpu_.get_state()) {
    if (device.is_cuda() && at::globalContext().hasCUDA()) {
      cuda_ = at::globalContext().defaultGenerator(device);
      cudaState_ = cuda_.get_state();
    }
  }
  ~KeepGenerators() {
    cpu_.set_state(cpuState_);
    if (cuda_.defined()) cuda_.set_state(cudaState_);
  }
  KeepGenerators(const KeepGenerators&) = delete;
  KeepGenerators& operator=(const KeepGenerators&) = delete;

 private:
  at::Generator cpu_, cuda_;
  at::Tensor cpuState_, cudaState_;
};

// The first `batch` samples of the training data as the job's loader gives them (epoch 0),
// built-in model or TorchScript module alike: what the model takes, whatever the data are.
std::pair<at::Tensor, at::Tensor> trialBatch(const train::JobData& data, int64_t batch, c10::Device device) {
  const data::SampleSource& train = *data.train;
  const int64_t n = std::max<int64_t>(1, std::min<int64_t>(batch, train.size()));
  const data::SampleSpec in = train.inputSpec(), tg = train.targetSpec();
  at::Tensor inputs = at::empty(data::batchShape(n, in), data::scalarType(in.dtype));
  at::Tensor targets = at::empty(data::batchShape(n, tg), data::scalarType(tg.dtype));
  std::vector<uint8_t> scratch;
  for (int64_t i = 0; i < n; ++i)
    train.loadSample(0, i % train.size(), static_cast<uint8_t*>(inputs.data_ptr()) + i * in.bytes(),
                     static_cast<uint8_t*>(targets.data_ptr()) + i * tg.bytes(), scratch);
  return {inputs.to(device), targets.to(device)};
}

// The warm-up's passes (warmUpForJoin); the caller restores the state.
void warmUpPasses(est::EstExecutor& executor, const std::vector<at::Tensor>& parameters, c10::Device device) {
  const auto [inputs, targets] = trialBatch(executor.data(), executor.config().batch, device);
  // Twice: the second pass accumulates into the gradients the first allocated, as every
  // later EST does, and the allocator's sizes settle.
  for (int pass = 0; pass < 2; ++pass) train::forwardBackward(executor.model(), inputs, targets);
  // The update's shape: the job's optimizer on copies of the parameters with their gradients.
  std::vector<at::Tensor> copies;
  for (const at::Tensor& p : parameters) {
    at::Tensor c = p.detach().clone();
    c.set_requires_grad(p.requires_grad());
    if (p.grad().defined()) c.mutable_grad() = p.grad().detach().clone();
    copies.push_back(std::move(c));
  }
  auto optimizer = optim::createOptimizer(executor.config().optimizer, copies);
  optimizer->step(executor.config().optimizer.lr);
}

}  // namespace

// Nothing that defines the job's bits is left changed:
//  - parameters and buffers (batch-norm statistics move in a forward) are put back as they
//    were (they are replaced by the job's at the join anyway);
//  - the default generators (dropout) are restored; each EST installs its own when it runs;
//  - the job's optimizer is not stepped (a throwaway one is) and is loaded at the join;
//  - the data loader is untouched (the trial batch is read from the dataset, not the ESTs'
//    streams) and the ESTs come with the join;
//  - the gradients stay allocated, zeroed and detached, as zero_grad leaves them on every
//    member after its first step: every EST's backward zeroes them before it accumulates.
void warmUpForJoin(est::EstExecutor& executor) {
  models::Model& model = executor.model();
  const auto parameters = model.parameters();
  if (parameters.empty()) return;
  const c10::Device device = parameters.front().device();
  KeepGenerators keep(device);
  std::vector<at::Tensor> saved;
  {
    at::NoGradGuard noGrad;
    for (const auto& [name, t] : models::stateDict(model)) saved.push_back(t.detach().clone());
  }
  try {
    warmUpPasses(executor, parameters, device);
  } catch (const std::exception& e) {
    spdlog::warn("warm-up before the join failed, joining without it: {}", e.what());
  }
  at::NoGradGuard noGrad;
  const auto now = models::stateDict(model);
  TL_CHECK_EQ(now.size(), saved.size(), "warm-up: the model's state changed shape");
  for (size_t i = 0; i < now.size(); ++i) now[i].second.copy_(saved[i]);
  for (at::Tensor p : parameters) {
    at::Tensor& grad = p.mutable_grad();
    if (!grad.defined()) continue;
    grad.detach_();
    grad.zero_();
  }
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
    const auto began = std::chrono::steady_clock::now();
    if (!o.job.device.isSimulated() && o.warmUp >= 2) {
      warmUpForJoin(*joined->executor);
    } else if (!o.job.device.isSimulated() && o.warmUp == 1) {
      forwardBackwardOfZeros(*joined->executor);
    }
    spdlog::info("ready to join: warm-up {} in {:.2f} s", o.warmUp >= 2 ? "done" : o.warmUp == 1 ? "forward-backward only" : "off",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
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
