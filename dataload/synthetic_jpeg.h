// Synthetic image folders of JPEG files (the ImageNet layout, see image_folder.h) for tests and
// benchmarks of the decoding pipeline on machines without ImageNet:
//
//   DIR/train/class_00/img_00000.jpg ... DIR/val/class_09/img_00099.jpg
//
// Image i of a split belongs to class i % classes and is written as img_<i>.jpg in that class's
// folder (numbers zero-padded, so sorted names are numeric order). Its sides are drawn
// uniformly from [minSide, maxSide], independently. Class k is a shape k % 6 (disc, square,
// horizontal band, vertical band, ring, cross) in hue k / classes of the colour wheel, large
// enough to survive a RandomResizedCrop, on a grey background tinted towards the class colour,
// with per-image jitter of colour, size and position and per-pixel noise. Everything is
// integer arithmetic on Philox draws keyed by (seed, split, image index), so the pixels depend
// on nothing else; libjpeg-turbo's encoder then gives the same files on every machine with
// the same library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataload/dataset.h"

namespace tl::data {

struct SyntheticJpegOptions {
  int classes = 10;  // 2..1000
  int64_t trainImages = 0;  // each split needs at least one image per class
  int64_t valImages = 0;
  int minSide = 48;  // 8..4096
  int maxSide = 96;
  uint64_t seed = 0;
  int quality = 90;  // JPEG quality, 1..100
};

constexpr int64_t kMaxSyntheticJpegsPerSplit = 10'000'000;

// InputError naming the first invalid option.
void validate(const SyntheticJpegOptions& options);

struct SyntheticJpegImage {
  int height = 0, width = 0;
  int64_t label = 0;
  std::vector<uint8_t> rgb;  // HWC, before JPEG compression
};

// Image `index` of a split, as rendered before compression.
SyntheticJpegImage renderSyntheticJpeg(const SyntheticJpegOptions& options, Split split,
                                       int64_t index);

// Its file, relative to the output folder: "train/class_03/img_00013.jpg".
std::string syntheticJpegPath(const SyntheticJpegOptions& options, Split split, int64_t index);

// Writes both splits under `dir` (created if needed). Each file is written to a temporary name
// and renamed, so a reader never sees a half-written JPEG. InputError for invalid options, an
// unwritable folder, or a train/ or val/ folder that already holds files (the generator does
// not mix its files into existing data).
void writeSyntheticImageFolder(const SyntheticJpegOptions& options, const std::string& dir);

}  // namespace tl::data
