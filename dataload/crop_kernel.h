// The inner loop of every image transform: crop a window of the zero-padded HWC uint8 image,
// optionally mirror it, look each byte up in a per-channel value table and write float CHW.
// Internal to dataload/.
#pragma once

#include <cstdint>

namespace tl::data::detail {

struct CropWindow {
  int top = 0;   // first row of the window, in padded coordinates
  int left = 0;  // first column of the window, in padded coordinates
  int height = 0;
  int width = 0;
  bool flip = false;
};

// `table` holds 256 floats per channel: table[c * 256 + byte]. Padding reads as byte 0.
// Writes channels * window.height * window.width floats to `out`.
void writeCropWindow(const uint8_t* hwc, int channels, int height, int width, int padding,
                     const CropWindow& window, const float* table, float* out);

}  // namespace tl::data::detail
