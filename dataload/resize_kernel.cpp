#include "dataload/resize_kernel.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Per-thread buffers: the column taps, two horizontally resampled rows (one int of padding:
// the vector pass writes four lanes per 3-channel pixel) and one row of result bytes, kept
// across calls so that a sample allocates nothing once the sizes have been seen.
struct Buffers {
  std::vector<Tap> columns;
  std::vector<int32_t> rows[2];
  std::vector<uint8_t> bytes;
  int rowOf[2] = {-1, -1};  // which source row each buffer holds
};

// One source row resampled horizontally: target[x * C + c] = the two taps' weighted sum.
template <int kChannels>
void resampleRow(const uint8_t* source, int channels, const std::vector<Tap>& columns,
                 int32_t* target) {
#if defined(__SSE2__)
  if constexpr (kChannels == 3) {
    // Both pixels' channels interleaved as 16-bit pairs, times the weight pair, summed by
    // pmaddwd: the same integers as the scalar loop (weights < 2^15, sums < 2^20), 4 lanes of
    // which the 4th is overwritten by the next pixel.
    const __m128i zero = _mm_setzero_si128();
    // Three bytes as one int, assembled in registers (a 3-byte memcpy goes through memory and
    // stalls the wide load that follows it).
    auto pixel = [](const uint8_t* p) {
      return int(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16);
    };
    for (const Tap& tap : columns) {
      const __m128i lower = _mm_unpacklo_epi8(_mm_cvtsi32_si128(pixel(source + tap.lower)), zero);
      const __m128i upper = _mm_unpacklo_epi8(_mm_cvtsi32_si128(pixel(source + tap.upper)), zero);
      const __m128i weights =
          _mm_set1_epi32(int((uint32_t(tap.upperWeight) << 16) | uint32_t(tap.lowerWeight)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(target),
                       _mm_madd_epi16(_mm_unpacklo_epi16(lower, upper), weights));
      target += 3;
    }
    return;
  }
#endif
  if constexpr (kChannels > 0) channels = kChannels;
  for (const Tap& tap : columns) {
    for (int c = 0; c < channels; ++c) {
      target[c] = tap.lowerWeight * source[tap.lower + c] + tap.upperWeight * source[tap.upper + c];
    }
    target += channels;
  }
}

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
  for (auto& row : buffers.rows) row.resize(rowLength + 1);
  buffers.bytes.resize(rowLength);
  buffers.rowOf[0] = buffers.rowOf[1] = -1;

  // Returns the buffer holding source row `sourceRow` resampled horizontally, filling it if
  // needed in the buffer other than `keep` (or the one holding the earlier row).
  auto horizontal = [&](int sourceRow, int keep) -> int {
    for (int b = 0; b < 2; ++b) {
      if (buffers.rowOf[b] == sourceRow) return b;
    }
    const int b = keep == 0 ? 1 : keep == 1 ? 0 : (buffers.rowOf[0] <= buffers.rowOf[1] ? 0 : 1);
    resampleRow<kChannels>(hwc + size_t(sourceRow) * size_t(width) * size_t(channels), channels,
                           columns, buffers.rows[b].data());
    buffers.rowOf[b] = sourceRow;
    return b;
  };

  const double rowScale = region.height / outHeight;
  const size_t plane = size_t(outHeight) * size_t(outWidth);
  uint8_t* bytes = buffers.bytes.data();
  for (int y = 0; y < outHeight; ++y) {
    const Tap tap = tapFor(region.top, rowScale, y, region.firstRow, region.lastRow);
    const int lowerBuffer = horizontal(tap.lower, -1);
    const int upperBuffer = horizontal(tap.upper, lowerBuffer);
    const int32_t* lower = buffers.rows[lowerBuffer].data();
    const int32_t* upper = buffers.rows[upperBuffer].data();
    // The vertical blend over the whole interleaved row (a loop compilers vectorise), then the
    // table lookups into the channel planes.
    const int32_t lowerWeight = tap.lowerWeight, upperWeight = tap.upperWeight;
    for (size_t i = 0; i < rowLength; ++i) {
      const int32_t sum = lowerWeight * lower[i] + upperWeight * upper[i];
      bytes[i] = uint8_t((sum + (int32_t(1) << (kRoundShift - 1))) >> kRoundShift);
    }
    float* target = out + size_t(y) * size_t(outWidth);
    for (int x = 0; x < outWidth; ++x) {
      for (int c = 0; c < channels; ++c) {
        target[size_t(c) * plane + size_t(x)] = table[c * 256 + bytes[x * channels + c]];
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
