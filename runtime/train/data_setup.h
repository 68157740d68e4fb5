// Builds the train/test sample pipelines a job definition asks for.
#pragma once

#include <memory>

#include "dataload/transforms.h"
#include "runtime/job_config.h"

namespace tl::train {

struct JobData {
  std::shared_ptr<const data::SamplePipeline> train;
  std::shared_ptr<const data::SamplePipeline> test;  // null unless config.eval
};

// Opens the dataset(s) and fixes the per-dataset transform defaults: CIFAR-10 gets random
// crop 32 (padding 4) + flip + CIFAR normalisation; MNIST-like data a random shift by up to
// 2 px (padding 2) without flips + its own normalisation (data::augmentationFor); an image folder gets RandomResizedCrop to
// imageFolderSize(config) + flip + ImageNet normalisation (evaluation: resize + centre crop).
// InputError for missing/corrupt files.
JobData openJobData(const JobConfig& config);

// Fills the model's input geometry (channels, image size, classes) from the dataset.
void adaptModelToData(JobConfig& config, const data::Dataset& train);

}  // namespace tl::train
