#include "dataload/dataset.h"

#include "common/check.h"
#include "dataload/cifar10.h"
#include "dataload/idx.h"
#include "dataload/image_folder.h"

namespace tl::data {

std::unique_ptr<Dataset> openDataset(const std::string& kind, const std::string& dir,
                                     Split split) {
  return openDataset(kind, dir, split, DatasetOptions{});
}

std::unique_ptr<Dataset> openDataset(const std::string& kind, const std::string& dir,
                                     Split split, const DatasetOptions& options) {
  if (kind == "imagefolder") return std::make_unique<ImageFolderDataset>(dir, split, options);
  if (kind == "cifar10") return openCifar10(dir, split);
  if (kind == "mnist") return openMnistLike("MNIST", dir, split);
  if (kind == "fashion-mnist") return openMnistLike("Fashion-MNIST", dir, split);
  TL_REQUIRE(kind != "tensors" && kind != "tokens", "dataset kind '", kind,
             "' holds arrays, not images: open it with openArrayDataset (array_dataset.h)");
  std::string known;
  for (const std::string& k : datasetKinds()) known += (known.empty() ? "" : ", ") + k;
  inputError("unknown dataset kind '", kind, "' (known: ", known, ")");
}

}  // namespace tl::data
