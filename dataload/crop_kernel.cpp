#include "dataload/crop_kernel.h"

#include <algorithm>

namespace tl::data::detail {
namespace {

// The output columns [begin, end) that fall inside the image, and the source column of
// `begin`. Columns outside are padding. The same for every row, so it is computed once.
struct ColumnSpan {
  int begin = 0;
  int end = 0;
  int firstSource = 0;
};

ColumnSpan visibleColumns(int width, int padding, const CropWindow& w) {
  ColumnSpan span;
  if (!w.flip) {
    // source column = x + shift
    const int shift = w.left - padding;
    span.begin = std::clamp(-shift, 0, w.width);
    span.end = std::clamp(width - shift, 0, w.width);
    span.firstSource = span.begin + shift;
  } else {
    // source column = last - x: the window is mirrored within itself
    const int last = w.left + w.width - 1 - padding;
    span.begin = std::clamp(last - (width - 1), 0, w.width);
    span.end = std::clamp(last + 1, 0, w.width);
    span.firstSource = last - span.begin;
  }
  span.end = std::max(span.end, span.begin);
  return span;
}

// kChannels > 0 fixes the channel count at compile time (1 and 3, the common cases) so that the
// per-pixel channel loop unrolls; 0 reads it from `channels`.
template <int kChannels, bool kFlip>
void copyRows(const uint8_t* hwc, int runtimeChannels, int height, int width, int padding,
              const CropWindow& w, const ColumnSpan& span, const float* table, float* out) {
  const int channels = kChannels > 0 ? kChannels : runtimeChannels;
  const int64_t plane = int64_t(w.height) * w.width;
  auto padValue = [table](int c) { return table[c * 256]; };  // byte 0, normalized
  const int step = kFlip ? -channels : channels;

  for (int y = 0; y < w.height; ++y) {
    const int sourceRow = w.top + y - padding;
    float* rowOut = out + int64_t(y) * w.width;
    if (sourceRow < 0 || sourceRow >= height) {
      for (int c = 0; c < channels; ++c) std::fill_n(rowOut + c * plane, w.width, padValue(c));
      continue;
    }
    for (int c = 0; c < channels; ++c) {
      std::fill_n(rowOut + c * plane, span.begin, padValue(c));
      std::fill_n(rowOut + c * plane + span.end, w.width - span.end, padValue(c));
    }
    const uint8_t* in = hwc + (int64_t(sourceRow) * width + span.firstSource) * channels;
    if constexpr (kChannels == 3) {
      float* out0 = rowOut;
      float* out1 = rowOut + plane;
      float* out2 = rowOut + 2 * plane;
      const float* table0 = table;
      const float* table1 = table + 256;
      const float* table2 = table + 512;
      for (int x = span.begin; x < span.end; ++x, in += step) {
        out0[x] = table0[in[0]];
        out1[x] = table1[in[1]];
        out2[x] = table2[in[2]];
      }
    } else if constexpr (kChannels == 1) {
      for (int x = span.begin; x < span.end; ++x, in += step) rowOut[x] = table[in[0]];
    } else {
      for (int x = span.begin; x < span.end; ++x, in += step) {
        for (int c = 0; c < channels; ++c) rowOut[c * plane + x] = table[c * 256 + in[c]];
      }
    }
  }
}

template <int kChannels>
void copyRowsEitherWay(const uint8_t* hwc, int channels, int height, int width, int padding,
                       const CropWindow& w, const float* table, float* out) {
  const ColumnSpan span = visibleColumns(width, padding, w);
  if (w.flip) {
    copyRows<kChannels, true>(hwc, channels, height, width, padding, w, span, table, out);
  } else {
    copyRows<kChannels, false>(hwc, channels, height, width, padding, w, span, table, out);
  }
}

}  // namespace

void writeCropWindow(const uint8_t* hwc, int channels, int height, int width, int padding,
                     const CropWindow& window, const float* table, float* out) {
  switch (channels) {
    case 1: return copyRowsEitherWay<1>(hwc, 1, height, width, padding, window, table, out);
    case 3: return copyRowsEitherWay<3>(hwc, 3, height, width, padding, window, table, out);
    default:
      return copyRowsEitherWay<0>(hwc, channels, height, width, padding, window, table, out);
  }
}

}  // namespace tl::data::detail
