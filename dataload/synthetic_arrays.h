// Small synthetic array datasets (array_dataset.h) for tests and examples, written by tl-data.
//
// tensors: float32 samples of a given shape, class k a fixed random +-3/4 pattern plus noise of
// up to +-1/2 per element (every value a multiple of 1/16, so exact in float32); labels int64,
// image i of class hash(i) % classes. tokens: a sequence over `vocab` ids that mostly follows
// next = (5 * prev + 3) % vocab and takes a random id one time in four, so a model can learn it.
// The bytes depend only on the options (a hash of seed, split, index), not on the machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::data {

struct SyntheticTensorsOptions {
  int64_t trainSamples = 0;
  int64_t testSamples = 0;
  std::vector<int64_t> shape = {1, 8, 8};  // of one sample
  int classes = 4;
  uint64_t seed = 0;
};

// train_x.npy, train_y.npy, test_x.npy, test_y.npy in `dir` (created if needed), each written
// atomically. InputError for bad options: no samples, fewer than 2 classes, an empty shape or
// one of more than 2^28 elements per sample.
void writeSyntheticTensors(const SyntheticTensorsOptions& options, const std::string& dir);

struct SyntheticTokensOptions {
  int64_t trainTokens = 0;
  int64_t valTokens = 0;
  int vocab = 16;
  uint64_t seed = 0;
  std::string format = "npy";  // "npy": train.npy/val.npy (int32); "uint16"/"uint32": raw .bin
};

// train.* and val.* in `dir`. InputError for bad options (fewer than 2 tokens in a split, a
// vocabulary of fewer than 2 ids or more than the format holds, an unknown format).
void writeSyntheticTokens(const SyntheticTokensOptions& options, const std::string& dir);

}  // namespace tl::data
