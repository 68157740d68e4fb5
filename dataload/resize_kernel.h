// The inner loop of the resizing transforms: bilinear resampling of a region of an HWC uint8
// image to outHeight x outWidth, optionally mirrored, each byte looked up in a per-channel
// value table and written as float CHW. Internal to dataload/.
//
// Sampling follows torch.nn.functional.interpolate(mode="bilinear", align_corners=False,
// antialias=False): output pixel y reads source row top + (y + 0.5) * height / outHeight - 0.5,
// raised to the first row when below it; the two neighbouring rows (the upper one clamped to
// the last row) are weighted by the fraction. Likewise for columns. No antialiasing: a
// downscale by more than 2 skips source pixels, as torch does without antialias.
//
// The arithmetic is integer, so the bytes do not depend on compiler or vectorisation: weights
// are rounded to multiples of 1/2048, the two passes are summed exactly in int32 and the
// result rounded once, half up, to a byte (the uint8 image torchvision would produce), which
// is then normalized through the table. 3-channel rows take an SSE2 path (pmaddwd on the two
// taps' pixels) that computes the very same integers as the scalar loop other counts use.
#pragma once

#include <cstdint>

namespace tl::data::detail {

struct ResampleRegion {
  // The source area mapped onto the output, in source pixels (pixel k spans [k, k + 1)).
  double top = 0, left = 0, height = 0, width = 0;
  // Samples are clamped to these rows and columns (inclusive): a crop's own edges when the
  // crop is resized (RandomResizedCrop), the image's when a resized image is cropped.
  int firstRow = 0, lastRow = 0, firstCol = 0, lastCol = 0;
};

constexpr int kResampleWeightBits = 11;

// `table` holds 256 floats per channel: table[c * 256 + byte]. Writes channels * outHeight *
// outWidth floats to `out`. `flip` mirrors the output horizontally.
void resampleBilinear(const uint8_t* hwc, int channels, int height, int width,
                      const ResampleRegion& region, int outHeight, int outWidth, bool flip,
                      const float* table, float* out);

}  // namespace tl::data::detail
