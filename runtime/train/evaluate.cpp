#include "runtime/train/evaluate.h"

#include <ATen/ATen.h>

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

}  // namespace tl::train
