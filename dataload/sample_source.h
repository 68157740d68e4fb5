// What the loader reads samples from: fixed-size inputs and targets, by index.
//
// Image datasets reach the loader through a SamplePipeline (transforms.h): float32 [C, H, W]
// inputs and int64 class labels. Array datasets (array_dataset.h) give the arrays of their
// files: any per-sample shape, the file's dtype. Either way a sample's bytes depend only on
// (epoch, index), so loader threads, placements and rescales never change a batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataload/npy.h"

namespace tl::data {

// One sample's input or target: its element type and shape (without the batch axis).
struct SampleSpec {
  ArrayDtype dtype = ArrayDtype::Float32;
  std::vector<int64_t> shape;  // empty: a scalar per sample (a class label)
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t bytes() const { return numel() * dtypeBytes(dtype); }
  bool operator==(const SampleSpec& o) const { return dtype == o.dtype && shape == o.shape; }
};

// Random access to samples. All methods are const and thread-safe: loader workers call them
// concurrently.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::string describe() const = 0;
  virtual int64_t size() const = 0;
  virtual SampleSpec inputSpec() const = 0;
  virtual SampleSpec targetSpec() const = 0;
  // Classes of a classification target (labels 0..numClasses()-1); 0 when the targets are not
  // class labels.
  virtual int numClasses() const = 0;
  // Writes sample `index` of `epoch`: inputSpec().bytes() bytes to `input`, targetSpec().bytes()
  // to `target`. `scratch` is the calling thread's own buffer.
  virtual void loadSample(int64_t epoch, int64_t index, void* input, void* target,
                          std::vector<uint8_t>& scratch) const = 0;
  // Token data (--dataset tokens): the largest token id in the split and the file holding it,
  // for the check that the model takes every id (model_check.h). max -1: not token ids.
  struct TokenRange {
    int64_t max = -1;
    std::string file;
  };
  virtual TokenRange tokenRange() const { return {}; }
  // A hint that sample `index` is loaded next; changes no result.
  virtual void prefetch(int64_t index) const {}
};

}  // namespace tl::data
