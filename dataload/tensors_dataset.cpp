// The "tensors" array dataset (array_dataset.h).
#include <algorithm>
#include <climits>
#include <cstring>

#include "common/check.h"
#include "common/files.h"
#include "dataload/array_dataset.h"

namespace tl::data {
namespace {

bool isInteger(ArrayDtype d) { return d != ArrayDtype::Float32; }

void requireTensorDtype(const ArrayFile& a) {
  const ArrayDtype d = a.dtype;
  TL_REQUIRE(d == ArrayDtype::UInt8 || d == ArrayDtype::Int32 || d == ArrayDtype::Int64 ||
                 d == ArrayDtype::Float32,
             "NumPy file '", a.path, "' holds ", dtypeName(d),
             ", which --dataset tensors does not read (uint8, int32, int64, float32)");
}

int64_t integerAt(const ArrayFile& a, int64_t element) {
  const uint8_t* p = a.data() + element * dtypeBytes(a.dtype);
  switch (a.dtype) {
    case ArrayDtype::UInt8: return *p;
    case ArrayDtype::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case ArrayDtype::Int64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    default: break;
  }
  throw Error(str("integerAt on ", dtypeName(a.dtype)));
}

std::vector<int64_t> sampleShape(const ArrayFile& a) {
  return std::vector<int64_t>(a.shape.begin() + 1, a.shape.end());
}

class TensorsDataset : public SampleSource {
 public:
  TensorsDataset(const std::string& dir, Split split) {
    const std::string prefix = split == Split::Train ? "train" : "test";
    x_ = openNpy(joinPath(dir, prefix + "_x.npy"));
    y_ = openNpy(joinPath(dir, prefix + "_y.npy"));
    requireTensorDtype(x_);
    requireTensorDtype(y_);
    TL_REQUIRE(x_.rows() == y_.rows(), "NumPy files '", x_.path, "' and '", y_.path,
               "' do not match: ", x_.rows(), " samples in x but ", y_.rows(), " in y");
    TL_REQUIRE(x_.rows() > 0, "NumPy file '", x_.path, "' holds no samples (shape ",
               shapeText(x_.shape), ")");
    if (isInteger(y_.dtype)) {
      // Labels are read once here: a negative one would fail deep inside the loss.
      int64_t maxLabel = 0;
      const int64_t count = y_.rows() * y_.rowElements();
      for (int64_t i = 0; i < count; ++i) {
        const int64_t label = integerAt(y_, i);
        TL_REQUIRE(label >= 0, "NumPy file '", y_.path, "' holds label ", label,
                   " at element ", i, ": class labels must be 0 or more");
        maxLabel = std::max(maxLabel, label);
      }
      TL_REQUIRE(maxLabel < INT_MAX, "NumPy file '", y_.path, "' holds label ", maxLabel,
                 ", too large for a class label");
      numClasses_ = int(maxLabel + 1);
    }
    description_ = str("tensors ", prefix, ", ", x_.rows(), " samples of ", dtypeName(x_.dtype),
                       " ", shapeText(sampleShape(x_)), ", targets ",
                       numClasses_ > 0 ? str("int64 ", shapeText(sampleShape(y_)), ", ",
                                             numClasses_, " classes")
                                       : str("float32 ", shapeText(sampleShape(y_))),
                       ", from ", dir);
  }

  std::string describe() const override { return description_; }
  int64_t size() const override { return x_.rows(); }
  SampleSpec inputSpec() const override { return SampleSpec{x_.dtype, sampleShape(x_)}; }
  SampleSpec targetSpec() const override {
    return SampleSpec{isInteger(y_.dtype) ? ArrayDtype::Int64 : y_.dtype, sampleShape(y_)};
  }
  int numClasses() const override { return numClasses_; }

  void loadSample(int64_t epoch, int64_t index, void* input, void* target,
                  std::vector<uint8_t>& scratch) const override {
    TL_CHECK(index >= 0 && index < size(), "sample index ", index, " outside ", description_);
    std::memcpy(input, x_.row(index), size_t(x_.rowBytes()));
    if (!isInteger(y_.dtype) || y_.dtype == ArrayDtype::Int64) {
      std::memcpy(target, y_.row(index), size_t(y_.rowBytes()));
      return;
    }
    auto* out = static_cast<int64_t*>(target);
    const int64_t n = y_.rowElements();
    for (int64_t e = 0; e < n; ++e) out[e] = integerAt(y_, index * n + e);
  }

 private:
  ArrayFile x_, y_;
  int numClasses_ = 0;
  std::string description_;
};

}  // namespace

std::unique_ptr<SampleSource> openTensorsDataset(const std::string& dir, Split split) {
  return std::make_unique<TensorsDataset>(dir, split);
}

}  // namespace tl::data
