#include "runtime/train/evaluate.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <mutex>

#include "common/check.h"
#include "dataload/loader.h"
#include "runtime/train/model_loss.h"

namespace tl::train {

BatchStats evaluate(models::Model& model, std::shared_ptr<const data::SampleSource> test,
                    comm::Communicator& comm, const EvalOptions& options) {
  const int64_t n = test->size();
  const int rank = comm.rank(), size = comm.size();
  auto next = std::make_shared<int64_t>(rank);
  data::Loader::Plan plan = [next, n, size, batch = options.batch]() -> std::optional<data::BatchRequest> {
    if (*next >= n) return std::nullopt;
    data::BatchRequest r;
    for (int64_t i = 0; i < batch && *next < n; ++i, *next += size) r.indices.push_back(*next);
    return r;
  };
  data::Loader loader(test, plan, data::LoaderOptions{options.workers, 2});

  BatchStats local;
  model.eval();
  {
    at::NoGradGuard noGrad;
    while (auto b = loader.next()) {
      at::Tensor images = b->images.to(options.device);
      at::Tensor labels = b->labels.to(options.device);
      ScoredBatch scored = scoreBatch(model, images, labels, /*sum=*/true);
      local.lossSum += scored.loss.item<double>();
      if (scored.logits.defined()) local.correct += scored.logits.argmax(1).eq(labels).sum().item<int64_t>();
      local.samples += labels.size(0);
    }
  }
  model.train();
  return allreduceStats(local, comm);
}

std::vector<double> evaluateBatchLosses(models::Model& model, std::shared_ptr<const data::SampleSource> test,
                                        comm::Communicator& comm, int64_t batches, int64_t batchSize,
                                        const EvalOptions& options) {
  TL_CHECK(batches >= 1 && batchSize >= 1 && batches * batchSize <= test->size(),
           "evaluateBatchLosses: ", batches, " batches of ", batchSize, " from ", test->size(), " samples");
  const int rank = comm.rank(), size = comm.size();
  auto next = std::make_shared<int64_t>(rank);
  data::Loader::Plan plan = [next, batches, size, batchSize]() -> std::optional<data::BatchRequest> {
    if (*next >= batches) return std::nullopt;
    data::BatchRequest r;
    r.tag = *next;
    for (int64_t i = 0; i < batchSize; ++i) r.indices.push_back(*next * batchSize + i);
    *next += size;
    return r;
  };
  data::Loader loader(test, plan, data::LoaderOptions{options.workers, 2});

  // Row r of the gathered [P, batches] holds rank r's batches (NaN elsewhere).
  at::Tensor mine = at::full({batches}, std::nan(""), at::kDouble);
  const bool wasTraining = model.is_training();
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  at::Tensor rngState;
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    rngState = cpu.get_state();
  }
  model.eval();
  try {
    at::NoGradGuard noGrad;
    while (auto b = loader.next()) {
      at::Tensor inputs = b->images.to(options.device);
      at::Tensor labels = b->labels.to(options.device);
      ScoredBatch scored = scoreBatch(model, inputs, labels, /*sum=*/false);
      mine[b->request.tag] = scored.loss.item<double>();
    }
  } catch (...) {
    model.train(wasTraining);
    throw;
  }
  model.train(wasTraining);
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(rngState);
  }
  const at::Tensor all = comm.allgather(mine).reshape({size, batches});
  std::vector<double> losses(static_cast<size_t>(batches));
  for (int64_t b = 0; b < batches; ++b) losses[size_t(b)] = all[b % size][b].item<double>();
  return losses;
}

double meanInOrder(const std::vector<double>& losses) {
  double sum = 0;
  for (double l : losses) sum += l;
  return losses.empty() ? 0.0 : sum / double(losses.size());
}

}  // namespace tl::train
