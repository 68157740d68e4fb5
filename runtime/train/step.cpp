#include "runtime/train/step.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "common/check.h"
#include "common/sha256.h"
#include "runtime/foreach.h"
#include "runtime/train/model_loss.h"

namespace tl::train {

BatchStats forwardBackward(models::Model& model, const at::Tensor& images, const at::Tensor& labels) {
  return forwardBackward(model, images, labels, [](const at::Tensor& loss) { loss.backward(); });
}

BatchStats forwardBackward(models::Model& model, const at::Tensor& images, const at::Tensor& labels,
                           const std::function<void(const at::Tensor& loss)>& backward) {
  std::vector<at::Tensor> grads;
  for (auto& p : model.parameters()) {
    if (p.grad().defined()) grads.push_back(p.mutable_grad());
  }
  zeroEach(grads);
  ScoredBatch scored = scoreBatch(model, images, labels, /*sum=*/false);
  backward(scored.loss);
  BatchStats s;
  s.samples = labels.size(0);
  s.lossSum = scored.loss.item<double>() * double(s.samples);
  if (scored.logits.defined()) {
    at::NoGradGuard noGrad;
    s.correct = scored.logits.argmax(1).eq(labels).sum().item<int64_t>();
  }
  return s;
}

std::vector<at::Tensor> gradients(models::Model& model) {
  std::vector<at::Tensor> grads;
  for (auto& p : model.parameters()) {
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    grads.push_back(p.grad());
  }
  return grads;
}

namespace {

void broadcastEach(std::vector<at::Tensor> tensors, comm::Communicator& comm, int root) {
  at::NoGradGuard noGrad;
  for (auto& t : tensors) {
    // Broadcast needs contiguous memory; module tensors always are, but be safe.
    if (t.is_contiguous()) {
      comm.broadcast(t, root);
    } else {
      at::Tensor tmp = t.contiguous();
      comm.broadcast(tmp, root);
      t.copy_(tmp);
    }
  }
}

}  // namespace

void broadcastState(models::Model& model, comm::Communicator& comm, int root) {
  if (comm.size() == 1) return;
  broadcastEach(model.parameters(), comm, root);
  broadcastEach(model.buffers(), comm, root);
}

void broadcastBuffers(models::Model& model, comm::Communicator& comm, int root) {
  if (comm.size() == 1) return;
  broadcastEach(model.buffers(), comm, root);
}

BatchStats allreduceStats(const BatchStats& local, comm::Communicator& comm) {
  at::Tensor t = at::tensor({local.lossSum, double(local.correct), double(local.samples)},
                            at::TensorOptions().dtype(at::kDouble));
  comm.allreduce(t, comm::ReduceOp::Sum);
  auto a = t.accessor<double, 1>();
  BatchStats out;
  out.lossSum = a[0];
  out.correct = int64_t(a[1]);
  out.samples = int64_t(a[2]);
  return out;
}

std::string paramsSha256(const models::Model& model) {
  Sha256 h;
  for (const auto& [name, tensor] : models::stateDict(model)) {
    at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    h.update(t.data_ptr(), t.numel() * t.element_size());
  }
  return h.hexDigest();
}

}  // namespace tl::train
