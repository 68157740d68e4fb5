#include "runtime/train/data_setup.h"

#include "common/check.h"
#include "dataload/resized_crop.h"
#include "dataload/sample_cache.h"

namespace tl::train {
namespace {

// Image folders: RandomResizedCrop + flip for training (the evaluation resize + centre crop
// with --augment off), resize + centre crop for evaluation, ImageNet normalization.
JobData openImageFolderData(const JobConfig& config) {
  data::DatasetOptions options;
  options.skipCorrupt = config.skipCorrupt;
  data::DatasetOptions trainOptions = options;  // only the training split is cached
  if (config.cacheMb >= 0) trainOptions.cacheBytes = data::cacheMiB(config.cacheMb);
  data::ResizedCropOptions crop;
  crop.size = imageFolderSize(config);
  crop.augment = config.augment;
  data::ResizedCropOptions eval = crop;
  eval.augment = false;
  JobData out;
  out.train = std::make_shared<data::SamplePipeline>(
      data::openDataset(config.dataset, config.dataDir, data::Split::Train, trainOptions),
      data::makeResizedCrop(crop), config.seed);
  if (config.eval) {
    out.test = std::make_shared<data::SamplePipeline>(
        data::openDataset(config.dataset, config.dataDir, data::Split::Test, options),
        data::makeResizedCrop(eval), config.seed);
  }
  return out;
}

}  // namespace

JobData openJobData(const JobConfig& config) {
  if (config.dataset == "imagefolder") return openImageFolderData(config);
  std::shared_ptr<const data::Dataset> train =
      data::openDataset(config.dataset, config.dataDir, data::Split::Train);
  data::CropFlipOptions aug = data::augmentationFor(config.dataset);
  aug.augment = config.augment;
  JobData out;
  out.train = std::make_shared<data::SamplePipeline>(
      train, std::shared_ptr<const data::Transform>(data::makeCropFlipNormalize(aug)), config.seed);
  if (config.eval) {
    std::shared_ptr<const data::Dataset> test =
        data::openDataset(config.dataset, config.dataDir, data::Split::Test);
    out.test = std::make_shared<data::SamplePipeline>(
        test, std::shared_ptr<const data::Transform>(data::makeNormalize(aug.norm)), config.seed);
  }
  return out;
}

void adaptModelToData(JobConfig& config, const data::Dataset& train) {
  auto shape = train.imageShape();
  config.model.inChannels = shape.channels;
  // Datasets of varying image sizes (image folders) are cropped to the job's size.
  config.model.imageSize = shape.height > 0 ? shape.height : imageFolderSize(config);
  config.model.numClasses = train.numClasses();
}

}  // namespace tl::train
