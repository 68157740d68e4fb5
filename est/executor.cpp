#include "est/executor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>
#include <torch/utils.h>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <exception>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "dataload/loader.h"
#include "dataload/sampler.h"
#include "est/fiber_scheduler.h"
#include "est/step_timers.h"
#include "runtime/train/evaluate.h"
#include "runtime/train/step.h"

namespace tl::est {
namespace {

using Clock = std::chrono::steady_clock;

data::SamplerOptions samplerFor(const JobConfig& config, int64_t datasetSize, int logicalRank,
                                int logicalWorkers) {
  data::SamplerOptions so;
  so.datasetSize = datasetSize;
  so.numReplicas = logicalWorkers;
  so.rank = logicalRank;
  so.seed = config.seed;
  return so;
}

std::vector<at::Tensor> cloneAll(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

void copyInto(std::vector<at::Tensor> dst, const std::vector<at::Tensor>& src) {
  at::NoGradGuard noGrad;
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
}

}  // namespace

EstExecutor::EstExecutor(JobConfig config, Placement placement, comm::Communicator& comm,
                         comm::Communicator& deviceComm)
    : config_(std::move(config)),
      placement_(std::move(placement)),
      comm_(comm),
      deviceComm_(deviceComm),
      device_(c10::kCPU) {
  validate(config_);
  TL_CHECK_EQ(placement_.processes(), comm_.size(), "placement does not match the communicator");
  device_ = train::resolveDevice(config_);
  simRate_ = config_.device.simRate;
  at::set_num_threads(config_.computeThreads);
  data_ = train::openJobData(config_);
  train::adaptModelToData(config_, data_.train->dataset());

  torch::manual_seed(config_.seed);
  model_ = models::createModel(config_.model);
  model_->to(device_);
  model_->train();
  optimizer_ = optim::createOptimizer(config_.optimizer, model_->parameters());
  if (config_.reduction == Reduction::Exact) {
    std::vector<std::string> names;
    for (const auto& item : model_->named_parameters()) names.push_back(item.key());
    reducer_ = reduce::createExactReducer(deviceComm_, model_->parameters(), names, config_.bucketBytes);
  } else {
    reducer_ = reduce::createFp32Reducer(deviceComm_, model_->parameters(), config_.bucketBytes);
  }

  const int n = placement_.logicalWorkers();
  data::BatchStream probe(data::DistributedSampler(samplerFor(config_, data_.train->dataset().size(), 0, n)),
                          config_.batch, config_.dropLastBatch);
  plan_ = train::planSteps(config_, probe.batchesPerEpoch());
  for (int est : placement_.localEsts(comm_.rank())) {
    local_.push_back(initialContext(est, config_.seed, device_));
  }
}

EstExecutor::~EstExecutor() = default;

void EstExecutor::restore(const JobState& state) {
  TL_CHECK_EQ(int(state.contexts.size()), placement_.logicalWorkers(), "restore needs every EST's context");
  at::NoGradGuard noGrad;
  auto current = models::stateDict(*model_);
  TL_REQUIRE(current.size() == state.model.size(), "checkpoint holds ", state.model.size(),
             " model tensors but the model has ", current.size());
  for (size_t i = 0; i < current.size(); ++i) {
    TL_REQUIRE(current[i].first == state.model[i].first && current[i].second.sizes() == state.model[i].second.sizes(),
               "checkpoint tensor '", state.model[i].first, "' does not match the model's '", current[i].first, "'");
    current[i].second.copy_(state.model[i].second);
  }
  optimizer_->loadState(state.optimizer);
  reducer_->loadState(state.reducer);
  for (auto& c : local_) {
    const EstContext& saved = state.contexts.at(c.logicalRank);
    TL_CHECK_EQ(saved.logicalRank, c.logicalRank);
    c = saved;
    if (!device_.is_cuda()) c.deviceRngState = at::Tensor();
  }
  stepsDone_ = state.stepsDone;
}

JobState EstExecutor::captureState(int root) {
  JobState s;
  s.stepsDone = stepsDone_;
  for (auto& [name, t] : models::stateDict(*model_)) s.model.emplace_back(name, t.detach().to(at::kCPU).clone());
  for (auto& [name, t] : optimizer_->state()) s.optimizer.emplace_back(name, t.to(at::kCPU).clone());
  for (auto& [name, t] : reducer_->state()) s.reducer.emplace_back(name, t.to(at::kCPU).clone());

  // Gather every EST's context: fixed-size records, padded to the largest local count.
  std::vector<std::vector<uint8_t>> packed;
  size_t recordBytes = 0;
  for (const auto& c : local_) {
    packed.push_back(packContext(c));
    recordBytes = std::max(recordBytes, packed.back().size());
  }
  at::Tensor sizes = at::full({1}, int64_t(recordBytes), at::kLong);
  comm_.allreduce(sizes, comm::ReduceOp::Max);
  recordBytes = size_t(sizes.item<int64_t>());
  int maxLocal = 0;
  for (int r = 0; r < placement_.processes(); ++r) maxLocal = std::max(maxLocal, placement_.count(r));
  const int64_t stride = int64_t(recordBytes) + 8;
  at::Tensor mine = at::zeros({maxLocal * stride}, at::kByte);
  uint8_t* p = mine.data_ptr<uint8_t>();
  for (size_t i = 0; i < packed.size(); ++i) {
    int64_t len = int64_t(packed[i].size());
    std::memcpy(p + i * stride, &len, 8);
    std::memcpy(p + i * stride + 8, packed[i].data(), packed[i].size());
  }
  at::Tensor all = comm_.allgather(mine);
  if (comm_.rank() == root) {
    s.contexts.resize(placement_.logicalWorkers());
    const uint8_t* a = all.data_ptr<uint8_t>();
    for (int r = 0; r < placement_.processes(); ++r) {
      for (int i = 0; i < placement_.count(r); ++i) {
        const uint8_t* rec = a + (int64_t(r) * maxLocal + i) * stride;
        int64_t len;
        std::memcpy(&len, rec, 8);
        EstContext c = unpackContext(rec + 8, size_t(len));
        TL_CHECK_EQ(c.logicalRank, placement_.first(r) + i);
        s.contexts[c.logicalRank] = std::move(c);
      }
    }
  }
  return s;
}

}  // namespace tl::est
