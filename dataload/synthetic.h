// Synthetic CIFAR-shaped data (32x32 RGB, up to 10 classes) that a small CNN learns within a
// few dozen steps, for tests and demos on machines without the real dataset.
//
// Class k is a coloured shape (colour k of a fixed palette, shape k: disc, square, bars, ring,
// cross, ...) on a random tinted background; each image jitters the colours, the size and the
// position (shifts up to 4 pixels) and adds per-pixel noise. Everything is integer arithmetic
// on Philox draws keyed by (seed, split, image index), so the bytes depend on nothing else:
// not on the machine, the compiler, or how many images are generated. Labels are balanced
// (image counts per class differ by at most one) and shuffled.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataload/dataset.h"
#include "dataload/memory_dataset.h"

namespace tl::data {

struct SyntheticOptions {
  int64_t trainImages = 0;
  int64_t testImages = 0;
  uint64_t seed = 0;
  int classes = 10;  // 2..10: CIFAR-10 files hold labels 0..9
};

constexpr int64_t kMaxSyntheticImagesPerSplit = 10'000'000;

// One name per class ("red-disc", "green-square", ...), as batches.meta.txt lists them.
std::vector<std::string> syntheticClassNames(int classes);

// The images of one split, in memory. InputError for invalid options.
std::unique_ptr<InMemoryDataset> makeSyntheticCifar(const SyntheticOptions& options, Split split);

// Writes the real CIFAR-10 binary layout to `dir` (created if needed): data_batch_1..5.bin
// holding the training images split as evenly as possible (earlier files get the extra ones),
// test_batch.bin, and batches.meta.txt with the class names, one per line. Each file is
// written atomically. InputError for invalid options (both splits need at least one image)
// or an unwritable directory.
void writeSyntheticCifar10(const SyntheticOptions& options, const std::string& dir);

}  // namespace tl::data
