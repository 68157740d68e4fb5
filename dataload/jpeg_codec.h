// JPEG decoding and encoding with libjpeg(-turbo), for image-folder datasets and their
// generator.
//
// libjpeg reports errors through a callback that must not return. Throwing a C++ exception
// through libjpeg's C frames is undefined, so the codec longjmps out of the callback into a
// small guard around each libjpeg call, frees the libjpeg state in C++ code and only then
// throws. Nothing with a destructor lives in the frames a jump skips.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/check.h"
#include "dataload/dataset.h"

namespace tl::data {

// A file that cannot be decoded: not a JPEG, truncated, corrupt, or too large. Image folders
// with skip-corrupt replace such images; every other error (a file that cannot be read) still
// fails the run.
class CorruptImageError : public InputError {
 public:
  explicit CorruptImageError(const std::string& what) : InputError(what) {}
};

// Larger images are refused as corrupt rather than allocated (a 65500x65500 header alone
// would ask for 12 GiB per loader thread).
constexpr int64_t kMaxJpegPixels = int64_t(1) << 28;

// What a decode produced: `shape` is the decoded size (3 channels, HWC RGB), `storedShape` the
// size in the file, `reduction` the DCT scaling used (shape = storedShape / reduction, each side
// rounded up).
struct JpegDecodeResult {
  ImageShape shape;
  ImageShape storedShape;
  int reduction = 1;
};

// Decodes the JPEG in `bytes` into `rgb` (resized to hold the image, HWC RGB uint8).
// Greyscale is expanded to RGB; CMYK and YCCK are converted to RGB as PIL does (Adobe files
// store inverted CMYK). `pickReduction`, when given, is called with the stored size once the
// header is read and returns 1, 2, 4 or 8: libjpeg then decodes at that fraction of each side
// through its scaled inverse DCT, far cheaper than a full decode for a small crop target.
// `name` (the file path) is only used in messages.
//
// Throws CorruptImageError "image '<name>' is not a valid JPEG: <libjpeg's message>" for bad
// data, including a truncated file (libjpeg only warns there and pads with grey; a partial
// image is refused like PIL refuses one).
JpegDecodeResult decodeJpeg(const uint8_t* bytes, size_t size, const std::string& name,
                            std::vector<uint8_t>& rgb, const PickReduction& pickReduction = {});

// Encodes `pixels` (HWC, rows contiguous) as a baseline JPEG of the given quality (1..100):
// channels 1 (greyscale), 3 (RGB) or 4 (CMYK, written with an Adobe marker and stored as given,
// i.e. inverted as Adobe applications write it). For generators and tests.
std::string encodeJpeg(const uint8_t* pixels, int width, int height, int channels, int quality);

}  // namespace tl::data
