// The precompiled header every libtorch target reuses: ATen and torch::nn::Module (with
// torch/types.h and torch/utils.h), which nearly every libtorch source needs. Not
// <torch/torch.h>: loading its ~570 MB header costs ~5.6 CPU s in every translation unit, more
// than most sources spend on their own code; this one costs ~2.8 s (docs/design/build-time.md).
// Sources that need more (nn layers, optimizers, TorchScript) include those headers narrowly.
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>
