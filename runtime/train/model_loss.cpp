#include "runtime/train/model_loss.h"

#include <ATen/ATen.h>

#include "common/check.h"

namespace tl::train {
namespace {

std::string shapeOf(const at::Tensor& t) { return tl::str(t.sizes(), " ", c10::toString(t.scalar_type())); }

// Cross-entropy or nll of class scores against class indices.
ScoredBatch classLoss(const std::string& kind, const at::Tensor& out, const at::Tensor& labels, bool sum) {
  const bool perPosition = out.dim() > 2 && labels.dim() == out.dim() - 1;
  TL_REQUIRE((out.dim() == 2 && labels.dim() == 1) || perPosition, "--loss ", kind,
             ": the model's output ", shapeOf(out), " does not fit labels ", shapeOf(labels),
             " (expected [B, classes] for labels [B], or [B, ..., classes] for labels [B, ...])");
  if (!perPosition) {
    const auto reduction = sum ? at::Reduction::Sum : at::Reduction::Mean;
    at::Tensor loss = kind == "nll" ? at::nll_loss(out, labels, {}, reduction)
                                    : at::cross_entropy_loss(out, labels, {}, reduction);
    return {loss, out};
  }
  at::Tensor flat = out.flatten(0, -2), flatLabels = labels.flatten();
  at::Tensor loss = kind == "nll" ? at::nll_loss(flat, flatLabels) : at::cross_entropy_loss(flat, flatLabels);
  return {sum ? loss * double(labels.size(0)) : loss, at::Tensor()};
}

at::Tensor mseLoss(const at::Tensor& out, const at::Tensor& labels, bool sum) {
  at::Tensor prediction = out, target = labels;
  if (out.dim() == 2 && labels.dim() == 1 && !at::isFloatingType(labels.scalar_type()) && out.size(1) > 1)
    target = at::one_hot(labels, out.size(1));
  else if (out.dim() == labels.dim() + 1 && out.size(-1) == 1)
    prediction = out.squeeze(-1);
  TL_REQUIRE(prediction.sizes() == target.sizes(), "--loss mse: the model's output ", shapeOf(out),
             " does not fit labels ", shapeOf(labels));
  at::Tensor loss = at::mse_loss(prediction, target.to(prediction.scalar_type()));
  return sum ? loss * double(labels.size(0)) : loss;
}

}  // namespace

ScoredBatch scoreBatch(models::Model& model, const at::Tensor& inputs, const at::Tensor& labels, bool sum) {
  if (model.returnsLoss()) {
    at::Tensor loss = model.forwardLoss(inputs, labels);
    return {sum ? loss * double(labels.size(0)) : loss, at::Tensor()};
  }
  at::Tensor out = model.forward(inputs);
  if (model.loss() == "mse") return {mseLoss(out, labels, sum), at::Tensor()};
  return classLoss(model.loss(), out, labels, sum);
}

}  // namespace tl::train
