#include "dataload/array_dataset.h"

#include "common/check.h"
#include "common/files.h"

namespace tl::data {

// tensors_dataset.cpp, tokens_dataset.cpp
std::unique_ptr<SampleSource> openTensorsDataset(const std::string& dir, Split split);
std::unique_ptr<SampleSource> openTokensDataset(const std::string& dir, Split split,
                                                const ArrayDatasetOptions& options);

bool isArrayDataset(const std::string& kind) { return kind == "tensors" || kind == "tokens"; }

std::vector<std::string> arrayDatasetFiles(const std::string& kind, const std::string& dir,
                                           Split split) {
  std::vector<std::string> candidates;
  if (kind == "tensors") {
    const std::string prefix = split == Split::Train ? "train" : "test";
    candidates = {prefix + "_x.npy", prefix + "_y.npy"};
  } else if (kind == "tokens") {
    const std::string base = split == Split::Train ? "train" : "val";
    candidates = {base + ".npy", base + ".bin"};
  } else {
    inputError("unknown array dataset kind '", kind, "' (known: tensors, tokens)");
  }
  std::vector<std::string> present;
  for (const std::string& name : candidates) {
    if (fileExists(joinPath(dir, name))) present.push_back(name);
  }
  return present;
}

std::unique_ptr<SampleSource> openArrayDataset(const std::string& kind, const std::string& dir,
                                               Split split, const ArrayDatasetOptions& options) {
  if (kind == "tensors") {
    TL_REQUIRE(options.seqLen == 0 && options.tokenDtype.empty(),
               "--seq-len and --token-dtype apply to --dataset tokens only");
    return openTensorsDataset(dir, split);
  }
  if (kind == "tokens") return openTokensDataset(dir, split, options);
  inputError("unknown array dataset kind '", kind, "' (known: tensors, tokens)");
}

void checkSplitsMatch(const std::string& kind, const SampleSource& train, const SampleSource& test) {
  const auto text = [](const SampleSpec& s) { return dtypeName(s.dtype) + " " + shapeText(s.shape); };
  TL_REQUIRE(train.inputSpec() == test.inputSpec(), "--dataset ", kind, ": the test samples are ",
             text(test.inputSpec()), " but the training samples ", text(train.inputSpec()),
             " (", test.describe(), ")");
  TL_REQUIRE(train.targetSpec() == test.targetSpec(), "--dataset ", kind,
             ": the test targets are ", text(test.targetSpec()), " but the training targets ",
             text(train.targetSpec()), " (", test.describe(), ")");
  TL_REQUIRE(test.numClasses() <= train.numClasses(), "--dataset ", kind,
             ": the test labels go up to ", test.numClasses() - 1,
             " but the training labels only to ", train.numClasses() - 1, " (", test.describe(),
             ")");
}

}  // namespace tl::data
