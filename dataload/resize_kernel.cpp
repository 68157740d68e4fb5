#include "dataload/resize_kernel.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.h"

namespace tl::data::detail {
namespace {

constexpr int32_t kOne = int32_t(1) << kResampleWeightBits;
constexpr int kRoundShift = 2 * kResampleWeightBits;

// The two source indices an output index reads and their weights (summing to kOne).
struct Tap {
  int lower = 0, upper = 0;
  int32_t lowerWeight = kOne, upperWeight = 0;
};

Tap tapFor(double start, double scale, int out, int first, int last) {
  const double source = std::max(start + (out + 0.5) * scale - 0.5, double(first));
  Tap tap;
  tap.lower = std::min(int(std::floor(source)), last);
  tap.upper = std::min(tap.lower + 1, last);
  const double fraction = std::clamp(source - tap.lower, 0.0, 1.0);
  tap.upperWeight = tap.upper == tap.lower ? 0 : int32_t(std::lround(fraction * kOne));
  tap.lowerWeight = kOne - tap.upperWeight;
  return tap;
}

// Per-thread buffers: the column taps and two horizontally resampled rows, kept across calls so
// that a sample allocates nothing once the sizes have been seen.
struct Buffers {
  std::vector<Tap> columns;
  std::vector<int32_t> rows[2];
  int rowOf[2] = {-1, -1};  // which source row each buffer holds
};

// kChannels > 0 fixes the channel count at compile time (1 and 3, the common cases).
template <int kChannels>
void resample(const uint8_t* hwc, int runtimeChannels, int width, const ResampleRegion& region,
              int outHeight, int outWidth, bool flip, const float* table, float* out) {
  const int channels = kChannels > 0 ? kChannels : runtimeChannels;
  thread_local Buffers buffers;
  std::vector<Tap>& columns = buffers.columns;
  columns.resize(size_t(outWidth));
  const double columnScale = region.width / outWidth;
  for (int x = 0; x < outWidth; ++x) {
    // A mirrored output reads the columns right to left: flipping after the resize.
    Tap tap = tapFor(region.left, columnScale, flip ? outWidth - 1 - x : x, region.firstCol,
                     region.lastCol);
    tap.lower *= channels;
    tap.upper *= channels;
    columns[size_t(x)] = tap;
  }
  const size_t rowLength = size_t(outWidth) * size_t(channels);
  for (auto& row : buffers.rows) row.resize(rowLength);
  buffers.rowOf[0] = buffers.rowOf[1] = -1;

  // Returns the buffer holding source row `sourceRow` resampled horizontally, filling it if
  // needed in the buffer other than `keep`.
  auto horizontal = [&](int sourceRow, int keep) -> int {
    for (int b = 0; b < 2; ++b) {
      if (buffers.rowOf[b] == sourceRow) return b;
    }
    const int b = keep == 0 ? 1 : keep == 1 ? 0 : (buffers.rowOf[0] <= buffers.rowOf[1] ? 0 : 1);
    const uint8_t* source = hwc + size_t(sourceRow) * size_t(width) * size_t(channels);
    int32_t* target = buffers.rows[b].data();
    for (int x = 0; x < outWidth; ++x, target += channels) {
      const Tap& tap = columns[size_t(x)];
      for (int c = 0; c < channels; ++c) {
        target[c] =
            tap.lowerWeight * source[tap.lower + c] + tap.upperWeight * source[tap.upper + c];
      }
    }
    buffers.rowOf[b] = sourceRow;
    return b;
  };

  const double rowScale = region.height / outHeight;
  const size_t plane = size_t(outHeight) * size_t(outWidth);
  for (int y = 0; y < outHeight; ++y) {
    const Tap tap = tapFor(region.top, rowScale, y, region.firstRow, region.lastRow);
    const int lowerBuffer = horizontal(tap.lower, -1);
    const int upperBuffer = horizontal(tap.upper, lowerBuffer);
    const int32_t* lower = buffers.rows[lowerBuffer].data();
    const int32_t* upper = buffers.rows[upperBuffer].data();
    for (int c = 0; c < channels; ++c) {
      float* target = out + size_t(c) * plane + size_t(y) * size_t(outWidth);
      const float* values = table + c * 256;
      for (int x = 0; x < outWidth; ++x) {
        const int32_t sum = tap.lowerWeight * lower[x * channels + c] +
                            tap.upperWeight * upper[x * channels + c];
        target[x] = values[(sum + (int32_t(1) << (kRoundShift - 1))) >> kRoundShift];
      }
    }
  }
}

}  // namespace

void resampleBilinear(const uint8_t* hwc, int channels, int height, int width,
                      const ResampleRegion& region, int outHeight, int outWidth, bool flip,
                      const float* table, float* out) {
  TL_CHECK(channels > 0 && height > 0 && width > 0 && outHeight > 0 && outWidth > 0);
  TL_CHECK(region.firstRow >= 0 && region.firstRow <= region.lastRow && region.lastRow < height,
           "rows ", region.firstRow, "..", region.lastRow, " of ", height);
  TL_CHECK(region.firstCol >= 0 && region.firstCol <= region.lastCol && region.lastCol < width,
           "columns ", region.firstCol, "..", region.lastCol, " of ", width);
  TL_CHECK(region.height > 0 && region.width > 0);
  if (channels == 3) {
    resample<3>(hwc, channels, width, region, outHeight, outWidth, flip, table, out);
  } else if (channels == 1) {
    resample<1>(hwc, channels, width, region, outHeight, outWidth, flip, table, out);
  } else {
    resample<0>(hwc, channels, width, region, outHeight, outWidth, flip, table, out);
  }
}

}  // namespace tl::data::detail
