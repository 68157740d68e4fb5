// Builds the train/test sample pipelines a job definition asks for.
#pragma once

#include <memory>

#include "dataload/transforms.h"
#include "runtime/job_config.h"

namespace tl::train {

struct JobData {
  std::shared_ptr<const data::SampleSource> train;
  std::shared_ptr<const data::SampleSource> test;  // null unless config.eval or evalEvery
  // The image dataset under `train` (its sample cache, its skipped corrupt samples); null for
  // the array datasets.
  std::shared_ptr<const data::Dataset> trainImages;
};

// Opens the dataset(s) and fixes the per-dataset transform defaults: CIFAR-10 gets random
// crop 32 (padding 4) + flip + CIFAR normalisation; MNIST-like data a random shift by up to
// 2 px (padding 2) without flips + its own normalisation (data::augmentationFor); an image folder gets RandomResizedCrop to
// imageFolderSize(config) + flip + ImageNet normalisation (evaluation: resize + centre crop).
// The array datasets (tensors, tokens) give their arrays as they are (array_dataset.h).
// InputError for missing/corrupt files.
JobData openJobData(const JobConfig& config);

// Fills the model's input geometry (channels, image size, classes) from the training samples.
// A built-in model needs float32 inputs and class labels: an image [C, H, H] sets the channels
// and size; any other shape feeds the mlp flattened (channels = its element count, size 1).
// InputError naming the dataset and the model when they do not fit.
void adaptModelToData(JobConfig& config, const data::SampleSource& train);

// --eval-every: resolves --eval-batches against the test split (the default: kDefaultEvalBatches,
// or as many as the split holds when fewer), so that the summary, checkpoints and joining
// processes carry the count; InputError naming --eval-batches when the split holds fewer.
void resolveEvalBatches(JobConfig& config, const data::SampleSource& test);

}  // namespace tl::train
