// datasetKinds() on its own: tools that only check a dataset's name (tl-submit's job table)
// link this object and none of the readers.
#include "dataload/dataset.h"

namespace tl::data {

std::vector<std::string> datasetKinds() {
  return {"cifar10", "mnist", "fashion-mnist", "imagefolder", "tensors", "tokens"};
}

}  // namespace tl::data
