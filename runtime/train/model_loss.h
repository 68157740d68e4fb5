// How a batch is scored: the model's own loss (--model-returns loss), or --loss applied to
// forward's output against the labels. Training and evaluation both go through here.
#pragma once

#include <ATen/core/Tensor.h>

#include "runtime/models/model.h"

namespace tl::train {

struct ScoredBatch {
  at::Tensor loss;    // a scalar: the batch's mean loss, or its sum over samples (`sum`)
  at::Tensor logits;  // [B, classes] where accuracy applies (cross-entropy, nll); else undefined
};

// Cross-entropy and nll take class indices; an output [B, T, C] with labels [B, T] (a token
// model) is scored per position. mse compares with the labels as floats, one-hot for an output
// [B, C] against class indices [B]. InputError naming --loss for an output it cannot score.
ScoredBatch scoreBatch(models::Model& model, const at::Tensor& inputs, const at::Tensor& labels, bool sum);

}  // namespace tl::train
