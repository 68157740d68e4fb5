// Array datasets: samples cut from NumPy arrays (npy.h), for models that are not image
// classifiers. Both are memory-mapped; a sample is copied out of the mapping when loaded.
//
//   tensors  train_x.npy, train_y.npy (training), test_x.npy, test_y.npy (evaluation): any
//            shape with the samples on the first axis; x and y hold the same number of samples.
//            Inputs keep the file's dtype (uint8, int32, int64, float32). Integer targets are
//            class labels, given as int64 (at least 0; the classes are 0..max); float32 targets
//            stay float32.
//   tokens   train.npy / val.npy: one flat array of integer token ids; or train.bin / val.bin,
//            raw little-endian uint16 or uint32 (ArrayDatasetOptions::tokenDtype). Sample i is
//            the window of seqLen tokens from i * seqLen, its target the window one token later,
//            both int64: an epoch is floor((n - 1) / seqLen) samples.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dataload/dataset.h"
#include "dataload/sample_source.h"

namespace tl::data {

struct ArrayDatasetOptions {
  int64_t seqLen = 0;      // tokens: tokens per sample (required)
  std::string tokenDtype;  // tokens: "uint16" | "uint32" to read .bin files; empty: .npy files
};

// "tensors" and "tokens".
bool isArrayDataset(const std::string& kind);

// The files a split of an array dataset reads, relative to its folder, for the data identity:
// those of them that exist (tokens: .npy and .bin alike, as the reader's choice depends on an
// option the identity does not see).
std::vector<std::string> arrayDatasetFiles(const std::string& kind, const std::string& dir,
                                           Split split);

// Opens a split. InputError naming the file (missing, not a regular file, a bad header, a dtype
// or shape the kind cannot take, x and y of different lengths, negative labels) or the flag
// (--seq-len longer than the data, --token-dtype).
std::unique_ptr<SampleSource> openArrayDataset(const std::string& kind, const std::string& dir,
                                               Split split, const ArrayDatasetOptions& options);

// InputError when a test split's samples differ in dtype or shape from the training split's, or
// its labels go beyond the training split's classes.
void checkSplitsMatch(const std::string& kind, const SampleSource& train, const SampleSource& test);

}  // namespace tl::data
