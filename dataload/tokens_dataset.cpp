// The "tokens" array dataset (array_dataset.h).
#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "common/files.h"
#include "dataload/array_dataset.h"

namespace tl::data {
namespace {

ArrayFile openTokenFile(const std::string& dir, const std::string& base,
                        const ArrayDatasetOptions& options) {
  const std::string npy = joinPath(dir, base + ".npy");
  const std::string bin = joinPath(dir, base + ".bin");
  if (!options.tokenDtype.empty()) {
    TL_REQUIRE(options.tokenDtype == "uint16" || options.tokenDtype == "uint32",
               "--token-dtype: '", options.tokenDtype, "' is not uint16 or uint32");
    TL_REQUIRE(fileExists(bin), "token file '", bin, "' is missing (--token-dtype reads raw ",
               base, ".bin files", fileExists(npy) ? str("; for ", base, ".npy leave it out") : "",
               ")");
    return openRawArray(bin, parseDtypeName("--token-dtype", options.tokenDtype));
  }
  TL_REQUIRE(fileExists(npy) || !fileExists(bin), "token file '", bin,
             "' is raw: say the width of its tokens with --token-dtype uint16|uint32");
  ArrayFile a = openNpy(npy);
  TL_REQUIRE(a.shape.size() == 1, "NumPy file '", npy, "' must hold one flat array of token ids, "
             "but its shape is ", shapeText(a.shape));
  TL_REQUIRE(a.dtype != ArrayDtype::Float32, "NumPy file '", npy,
             "' holds float32: token ids are integers (uint8, uint16, int32, uint32, int64)");
  return a;
}

int64_t tokenAt(const ArrayFile& a, int64_t i) {
  const uint8_t* p = a.data() + i * dtypeBytes(a.dtype);
  switch (a.dtype) {
    case ArrayDtype::UInt8: return *p;
    case ArrayDtype::UInt16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case ArrayDtype::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case ArrayDtype::UInt32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case ArrayDtype::Int64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    default: break;
  }
  throw Error(str("tokenAt on ", dtypeName(a.dtype)));
}

class TokensDataset : public SampleSource {
 public:
  TokensDataset(const std::string& dir, Split split, const ArrayDatasetOptions& options)
      : seqLen_(options.seqLen) {
    TL_REQUIRE(seqLen_ >= 1, "--seq-len: --dataset tokens needs the tokens per sample (1 or "
               "more), got ", seqLen_);
    tokens_ = openTokenFile(dir, split == Split::Train ? "train" : "val", options);
    const int64_t n = tokens_.rows();
    samples_ = n > 0 ? (n - 1) / seqLen_ : 0;
    TL_REQUIRE(samples_ > 0, "--seq-len ", seqLen_, " is longer than the data: '", tokens_.path,
               "' holds ", n, " tokens, and a sample needs ", seqLen_ + 1,
               " (its inputs and the next token)");
    // One pass over the ids (the mapping is read, not copied): a negative id (int32, int64
    // files) is refused here, one beyond the model's vocabulary by the trial forward.
    for (int64_t i = 0; i < n; ++i) {
      const int64_t id = tokenAt(tokens_, i);
      TL_REQUIRE(id >= 0, "token file '", tokens_.path, "': token ", i, " is ", id,
                 "; token ids are 0 or more");
      range_.max = std::max(range_.max, id);
    }
    range_.file = tokens_.path;
    description_ = str("tokens ", split == Split::Train ? "train" : "val", ", ", samples_,
                       " samples of ", seqLen_, " tokens (", n, " ", dtypeName(tokens_.dtype),
                       " tokens), from ", dir);
  }

  std::string describe() const override { return description_; }
  int64_t size() const override { return samples_; }
  SampleSpec inputSpec() const override { return SampleSpec{ArrayDtype::Int64, {seqLen_}}; }
  SampleSpec targetSpec() const override { return SampleSpec{ArrayDtype::Int64, {seqLen_}}; }
  int numClasses() const override { return 0; }
  TokenRange tokenRange() const override { return range_; }

  void loadSample(int64_t epoch, int64_t index, void* input, void* target,
                  std::vector<uint8_t>& scratch) const override {
    TL_CHECK(index >= 0 && index < samples_, "sample index ", index, " outside ", description_);
    auto* in = static_cast<int64_t*>(input);
    auto* next = static_cast<int64_t*>(target);
    const int64_t first = index * seqLen_;
    int64_t previous = tokenAt(tokens_, first);
    for (int64_t t = 0; t < seqLen_; ++t) {
      const int64_t following = tokenAt(tokens_, first + t + 1);
      in[t] = previous;
      next[t] = following;
      previous = following;
    }
  }

 private:
  int64_t seqLen_;
  ArrayFile tokens_;
  int64_t samples_ = 0;
  TokenRange range_;
  std::string description_;
};

}  // namespace

std::unique_ptr<SampleSource> openTokensDataset(const std::string& dir, Split split,
                                                const ArrayDatasetOptions& options) {
  return std::make_unique<TokensDataset>(dir, split, options);
}

}  // namespace tl::data
