#include "dataload/synthetic_arrays.h"

#include <cstring>

#include "common/check.h"
#include "common/files.h"
#include "dataload/npy.h"

namespace tl::data {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hashOf(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return mix(mix(mix(mix(seed) ^ a) ^ b) ^ c);
}

void writeTensorsSplit(const SyntheticTensorsOptions& o, const std::string& dir,
                       const std::string& prefix, uint64_t split, int64_t samples,
                       int64_t perSample) {
  std::vector<float> x(static_cast<size_t>(samples * perSample));
  std::vector<int64_t> y(static_cast<size_t>(samples));
  for (int64_t i = 0; i < samples; ++i) {
    const int64_t label = int64_t(hashOf(o.seed, split, uint64_t(i), 0) % uint64_t(o.classes));
    y[size_t(i)] = label;
    for (int64_t e = 0; e < perSample; ++e) {
      const int sign = (hashOf(o.seed, 99, uint64_t(label), uint64_t(e)) & 1) ? 1 : -1;
      const int noise = int(hashOf(o.seed, split + 2, uint64_t(i), uint64_t(e)) % 17) - 8;
      x[size_t(i * perSample + e)] = float(sign * 12 + noise) / 16.0f;
    }
  }
  std::vector<int64_t> xShape{samples};
  xShape.insert(xShape.end(), o.shape.begin(), o.shape.end());
  writeFileAtomic(joinPath(dir, prefix + "_x.npy"), encodeNpy(ArrayDtype::Float32, xShape, x.data()));
  writeFileAtomic(joinPath(dir, prefix + "_y.npy"), encodeNpy(ArrayDtype::Int64, {samples}, y.data()));
}

std::vector<uint32_t> tokenSequence(const SyntheticTokensOptions& o, uint64_t split, int64_t n) {
  std::vector<uint32_t> tokens(static_cast<size_t>(n));
  const uint64_t vocab = uint64_t(o.vocab);
  uint64_t token = hashOf(o.seed, split, 0, 1) % vocab;
  for (int64_t i = 0; i < n; ++i) {
    tokens[size_t(i)] = uint32_t(token);
    const uint64_t h = hashOf(o.seed, split, uint64_t(i), 2);
    token = (h & 3) == 0 ? (h >> 8) % vocab : (5 * token + 3) % vocab;
  }
  return tokens;
}

void writeTokenSplit(const SyntheticTokensOptions& o, const std::string& dir,
                     const std::string& base, uint64_t split, int64_t n) {
  const std::vector<uint32_t> tokens = tokenSequence(o, split, n);
  if (o.format == "npy") {
    std::vector<int32_t> values(tokens.begin(), tokens.end());
    writeFileAtomic(joinPath(dir, base + ".npy"), encodeNpy(ArrayDtype::Int32, {n}, values.data()));
    return;
  }
  std::string bytes;
  const int width = o.format == "uint16" ? 2 : 4;
  bytes.reserve(size_t(n * width));
  for (uint32_t t : tokens) {
    for (int b = 0; b < width; ++b) bytes += char((t >> (8 * b)) & 0xff);
  }
  writeFileAtomic(joinPath(dir, base + ".bin"), bytes);
}

}  // namespace

void writeSyntheticTensors(const SyntheticTensorsOptions& o, const std::string& dir) {
  TL_REQUIRE(o.trainSamples >= 1 && o.testSamples >= 1,
             "synthetic tensors need at least one training and one test sample");
  TL_REQUIRE(o.classes >= 2, "synthetic tensors need at least 2 classes, got ", o.classes);
  TL_REQUIRE(!o.shape.empty(), "synthetic tensors need a sample shape");
  int64_t perSample = 1;
  for (int64_t d : o.shape) {
    TL_REQUIRE(d >= 1 && d <= (int64_t(1) << 28), "synthetic tensors: bad dimension ", d,
               " in shape ", shapeText(o.shape));
    perSample *= d;
    TL_REQUIRE(perSample <= (int64_t(1) << 28), "synthetic tensors: samples of shape ",
               shapeText(o.shape), " are too large");
  }
  ensureWritableDir(dir, "--out");
  writeTensorsSplit(o, dir, "train", 0, o.trainSamples, perSample);
  writeTensorsSplit(o, dir, "test", 1, o.testSamples, perSample);
}

void writeSyntheticTokens(const SyntheticTokensOptions& o, const std::string& dir) {
  TL_REQUIRE(o.format == "npy" || o.format == "uint16" || o.format == "uint32",
             "synthetic tokens: unknown format '", o.format, "' (npy, uint16, uint32)");
  TL_REQUIRE(o.trainTokens >= 2 && o.valTokens >= 2,
             "synthetic tokens need at least 2 tokens in each split");
  const int64_t maxVocab = o.format == "uint16" ? 65536 : (int64_t(1) << 31);
  TL_REQUIRE(o.vocab >= 2 && o.vocab <= maxVocab, "synthetic tokens: vocabulary of ", o.vocab,
             " ids (2 to ", maxVocab, " for ", o.format, ")");
  ensureWritableDir(dir, "--out");
  writeTokenSplit(o, dir, "train", 0, o.trainTokens);
  writeTokenSplit(o, dir, "val", 1, o.valTokens);
}

}  // namespace tl::data
