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
  if (!scored.loss.device().is_cpu()) {  // read later, with the other ESTs' (resolvePending)
    at::NoGradGuard noGrad;
    s.pendingLoss = scored.loss.detach().to(at::kDouble);
    if (scored.logits.defined()) s.pendingCorrect = scored.logits.argmax(1).eq(labels).sum();
    return s;
  }
  s.lossSum = scored.loss.item<double>() * double(s.samples);
  if (scored.logits.defined()) {
    at::NoGradGuard noGrad;
    s.correct = scored.logits.argmax(1).eq(labels).sum().item<int64_t>();
  }
  return s;
}

BatchStats forwardBackwardInPieces(models::Model& model, const at::Tensor& images, const at::Tensor& labels,
                                   int64_t pieces) {
  TL_CHECK(pieces >= 1, "forwardBackwardInPieces: ", pieces, " pieces");
  std::vector<at::Tensor> grads;
  for (auto& p : model.parameters()) {
    if (p.grad().defined()) grads.push_back(p.mutable_grad());
  }
  zeroEach(grads);
  const std::vector<at::Tensor> inputs = at::tensor_split(images, pieces);
  const std::vector<at::Tensor> targets = at::tensor_split(labels, pieces);
  BatchStats s;
  for (int64_t k = 0; k < pieces; ++k) {
    const int64_t rows = targets[size_t(k)].size(0);
    if (rows == 0) continue;
    ScoredBatch scored = scoreBatch(model, inputs[size_t(k)], targets[size_t(k)], /*sum=*/false);
    (scored.loss / pieces).backward();  // as `(loss / K).backward()`: a float32 division by K
    s.samples += rows;
    s.lossSum += scored.loss.item<double>() * double(rows);
    if (scored.logits.defined()) {
      at::NoGradGuard noGrad;
      s.correct += scored.logits.argmax(1).eq(targets[size_t(k)]).sum().item<int64_t>();
    }
  }
  return s;
}

void resolvePending(std::vector<BatchStats>& stats) {
  std::vector<at::Tensor> values;
  for (const BatchStats& s : stats) {
    if (s.pendingLoss.defined()) values.push_back(s.pendingLoss.reshape({}));
    if (s.pendingCorrect.defined()) values.push_back(s.pendingCorrect.reshape({}).to(at::kDouble));  // exact below 2^53
  }
  if (values.empty()) return;
  const at::Tensor host = at::stack(values).cpu();
  const double* v = host.data_ptr<double>();
  for (BatchStats& s : stats) {
    if (s.pendingLoss.defined()) s.lossSum = *v++ * double(s.samples);
    if (s.pendingCorrect.defined()) s.correct = int64_t(*v++);
    s.pendingLoss = at::Tensor();
    s.pendingCorrect = at::Tensor();
  }
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
