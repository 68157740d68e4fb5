// Test support: decode a PNG file with cairo and describe its pixels.
#pragma once

#include <cairo.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace tl::testing {

struct DecodedPng {
  bool ok = false;
  std::string error;
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes a pixel

  int distinctColours() const {
    std::set<uint32_t> colours;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3)
      colours.insert(uint32_t(rgb[i]) << 16 | rgb[i + 1] << 8 | rgb[i + 2]);
    return int(colours.size());
  }
  // Share of pixels that are not white.
  double inkShare() const {
    size_t ink = 0;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3)
      ink += !(rgb[i] == 255 && rgb[i + 1] == 255 && rgb[i + 2] == 255);
    return rgb.empty() ? 0 : double(ink) / double(rgb.size() / 3);
  }
  // Pixels of exactly this colour.
  size_t count(uint8_t r, uint8_t g, uint8_t b) const {
    size_t n = 0;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3)
      n += rgb[i] == r && rgb[i + 1] == g && rgb[i + 2] == b;
    return n;
  }
  // Columns holding at least `minPixels` pixels of this colour.
  std::vector<int> columnsWith(uint8_t r, uint8_t g, uint8_t b, int minPixels) const {
    std::vector<int> columns;
    for (int x = 0; x < width; ++x) {
      int n = 0;
      for (int y = 0; y < height; ++y) {
        const size_t i = 3 * (size_t(y) * size_t(width) + size_t(x));
        n += rgb[i] == r && rgb[i + 1] == g && rgb[i + 2] == b;
      }
      if (n >= minPixels) columns.push_back(x);
    }
    return columns;
  }
};

inline bool hasPngSignature(const std::string& bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), "\x89PNG\r\n\x1a\n", 8) == 0;
}

inline DecodedPng decodePng(const std::string& path) {
  DecodedPng out;
  cairo_surface_t* image = cairo_image_surface_create_from_png(path.c_str());
  if (cairo_surface_status(image) != CAIRO_STATUS_SUCCESS) {
    out.error = cairo_status_to_string(cairo_surface_status(image));
    cairo_surface_destroy(image);
    return out;
  }
  const cairo_format_t format = cairo_image_surface_get_format(image);
  if (format != CAIRO_FORMAT_RGB24 && format != CAIRO_FORMAT_ARGB32) {
    out.error = "unexpected pixel format " + std::to_string(int(format));
    cairo_surface_destroy(image);
    return out;
  }
  out.width = cairo_image_surface_get_width(image);
  out.height = cairo_image_surface_get_height(image);
  const int stride = cairo_image_surface_get_stride(image);
  const unsigned char* data = cairo_image_surface_get_data(image);
  out.rgb.reserve(size_t(out.width) * size_t(out.height) * 3);
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      uint32_t pixel;  // native-endian 0xAARRGGBB, premultiplied (the plot is opaque)
      std::memcpy(&pixel, data + size_t(y) * size_t(stride) + 4 * size_t(x), 4);
      out.rgb.push_back(uint8_t(pixel >> 16));
      out.rgb.push_back(uint8_t(pixel >> 8));
      out.rgb.push_back(uint8_t(pixel));
    }
  }
  cairo_surface_destroy(image);
  out.ok = true;
  return out;
}

}  // namespace tl::testing
