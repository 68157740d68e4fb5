#include "runtime/train/data_setup.h"

#include <algorithm>

#include "common/check.h"
#include "dataload/array_dataset.h"
#include "dataload/resized_crop.h"
#include "dataload/sample_cache.h"

namespace tl::train {
namespace {

// Image folders: RandomResizedCrop + flip for training (the evaluation resize + centre crop
// with --augment off), resize + centre crop for evaluation, ImageNet normalization.
JobData openImageFolderData(const JobConfig& config) {
  data::DatasetOptions options;
  options.skipCorrupt = config.skipCorrupt;
  if (config.emulateStorageMbps > 0)
    options.storageBytesPerSecond = config.emulateStorageMbps * 1e6;
  data::DatasetOptions trainOptions = options;  // only the training split is cached
  if (config.cacheMb >= 0) trainOptions.cacheBytes = data::cacheMiB(config.cacheMb);
  data::ResizedCropOptions crop;
  crop.size = imageFolderSize(config);
  crop.augment = config.augment;
  data::ResizedCropOptions eval = crop;
  eval.augment = false;
  JobData out;
  out.trainImages =
      data::openDataset(config.dataset, config.dataDir, data::Split::Train, trainOptions);
  out.train = std::make_shared<data::SamplePipeline>(out.trainImages, data::makeResizedCrop(crop),
                                                     config.seed);
  if (config.eval || config.evalEvery > 0) {
    out.test = std::make_shared<data::SamplePipeline>(
        data::openDataset(config.dataset, config.dataDir, data::Split::Test, options),
        data::makeResizedCrop(eval), config.seed);
  }
  return out;
}

// Array datasets: no transform; a test split must hold samples like the training split's.
JobData openArrayData(const JobConfig& config) {
  data::ArrayDatasetOptions options;
  options.seqLen = config.seqLen;
  options.tokenDtype = config.tokenDtype;
  JobData out;
  out.train = data::openArrayDataset(config.dataset, config.dataDir, data::Split::Train, options);
  if (config.eval || config.evalEvery > 0) {
    out.test = data::openArrayDataset(config.dataset, config.dataDir, data::Split::Test, options);
    data::checkSplitsMatch(config.dataset, *out.train, *out.test);
  }
  return out;
}

}  // namespace

JobData openJobData(const JobConfig& config) {
  if (config.dataset == "imagefolder") return openImageFolderData(config);
  if (data::isArrayDataset(config.dataset)) return openArrayData(config);
  std::shared_ptr<const data::Dataset> train =
      data::openDataset(config.dataset, config.dataDir, data::Split::Train);
  data::CropFlipOptions aug = data::augmentationFor(config.dataset);
  aug.augment = config.augment;
  JobData out;
  out.trainImages = train;
  out.train = std::make_shared<data::SamplePipeline>(
      train, std::shared_ptr<const data::Transform>(data::makeCropFlipNormalize(aug)), config.seed);
  if (config.eval || config.evalEvery > 0) {
    std::shared_ptr<const data::Dataset> test =
        data::openDataset(config.dataset, config.dataDir, data::Split::Test);
    out.test = std::make_shared<data::SamplePipeline>(
        test, std::shared_ptr<const data::Transform>(data::makeNormalize(aug.norm)), config.seed);
  }
  return out;
}

void resolveEvalBatches(JobConfig& config, const data::SampleSource& test) {
  if (config.evalEvery <= 0) return;
  const int64_t samples = test.size();
  const int64_t holds = samples / config.batch;
  TL_REQUIRE(holds >= 1, "--eval-every: the test split holds ", samples,
             " samples, fewer than one validation batch of --batch ", config.batch);
  if (config.evalBatches == 0) config.evalBatches = std::min(kDefaultEvalBatches, holds);
  TL_REQUIRE(config.evalBatches <= holds, "--eval-batches ", config.evalBatches, ": the test split holds ", samples,
             " samples, ", holds, " batches of --batch ", config.batch, " (at most --eval-batches ", holds, ")");
}

void adaptModelToData(JobConfig& config, const data::SampleSource& train) {
  const data::SampleSpec input = train.inputSpec();
  const data::SampleSpec target = train.targetSpec();
  if (!config.model.file.empty()) {
    // --model-file: the module says what it takes (checkModelOnData's trial batch); the geometry
    // is kept for what reads it (a joined process's warm-up, tl-predict).
    config.model.numClasses = train.numClasses();
    if (input.shape.size() == 3 && input.shape[1] == input.shape[2]) {
      config.model.inChannels = int(input.shape[0]);
      config.model.imageSize = int(input.shape[1]);
    }
    return;
  }
  const std::string& arch = config.model.arch;
  TL_REQUIRE(input.dtype == data::ArrayDtype::Float32, "--model ", arch,
             " takes float32 inputs, but --dataset ", config.dataset, " gives ",
             data::dtypeName(input.dtype), " ", data::shapeText(input.shape), " (",
             train.describe(), ")");
  TL_REQUIRE(train.numClasses() > 0 && target.shape.empty(), "--model ", arch,
             " is a classifier: it needs one class label per sample, but --dataset ",
             config.dataset, " gives targets ", data::dtypeName(target.dtype), " ",
             data::shapeText(target.shape), " (", train.describe(), ")");
  config.model.numClasses = train.numClasses();
  const std::vector<int64_t>& s = input.shape;
  if (s.size() == 3 && s[1] == s[2]) {
    config.model.inChannels = int(s[0]);
    config.model.imageSize = int(s[1]);
    return;
  }
  TL_REQUIRE(arch == "mlp", "--model ", arch, " takes images [C, H, H], but --dataset ",
             config.dataset, " gives samples of shape ", data::shapeText(s),
             " (--model mlp takes any shape, flattened)");
  TL_REQUIRE(input.numel() <= (int64_t(1) << 30), "--model mlp: samples of shape ",
             data::shapeText(s), " are too large to flatten");
  config.model.inChannels = int(input.numel());
  config.model.imageSize = 1;
}

}  // namespace tl::train
