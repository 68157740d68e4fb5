#include "dataload/dataset.h"

#include "common/check.h"
#include "dataload/cifar10.h"
#include "dataload/idx.h"

namespace tl::data {

std::vector<std::string> datasetKinds() { return {"cifar10", "mnist", "fashion-mnist"}; }

std::unique_ptr<Dataset> openDataset(const std::string& kind, const std::string& dir,
                                     Split split) {
  if (kind == "cifar10") return openCifar10(dir, split);
  if (kind == "mnist") return openMnistLike("MNIST", dir, split);
  if (kind == "fashion-mnist") return openMnistLike("Fashion-MNIST", dir, split);
  std::string known;
  for (const std::string& k : datasetKinds()) known += (known.empty() ? "" : ", ") + k;
  inputError("unknown dataset kind '", kind, "' (known: ", known, ")");
}

}  // namespace tl::data
