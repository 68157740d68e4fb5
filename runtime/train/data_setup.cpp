#include "runtime/train/data_setup.h"

#include "common/check.h"

namespace tl::train {

JobData openJobData(const JobConfig& config) {
  std::shared_ptr<const data::Dataset> train =
      data::openDataset(config.dataset, config.dataDir, data::Split::Train);
  const bool mnistLike = config.dataset != "cifar10";
  data::Normalization norm = config.dataset == "cifar10"   ? data::cifarNormalization()
                             : config.dataset == "mnist"   ? data::mnistNormalization()
                                                           : data::fashionMnistNormalization();
  data::CropFlipOptions aug;
  aug.cropSize = train->imageShape().height;
  aug.padding = mnistLike ? 2 : 4;
  aug.hflip = !mnistLike;
  aug.augment = config.augment;
  aug.norm = norm;
  JobData out;
  out.train = std::make_shared<data::SamplePipeline>(
      train, std::shared_ptr<const data::Transform>(data::makeCropFlipNormalize(aug)), config.seed);
  if (config.eval) {
    std::shared_ptr<const data::Dataset> test =
        data::openDataset(config.dataset, config.dataDir, data::Split::Test);
    out.test = std::make_shared<data::SamplePipeline>(
        test, std::shared_ptr<const data::Transform>(data::makeNormalize(norm)), config.seed);
  }
  return out;
}

void adaptModelToData(JobConfig& config, const data::Dataset& train) {
  auto shape = train.imageShape();
  config.model.inChannels = shape.channels;
  config.model.imageSize = shape.height;
  config.model.numClasses = train.numClasses();
}

}  // namespace tl::train
