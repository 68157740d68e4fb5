// Test support: decode a PNG file with libpng and describe its pixels.
#pragma once

#include <png.h>

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
  std::vector<uint8_t> rgb;

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
};

inline bool hasPngSignature(const std::string& bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), "\x89PNG\r\n\x1a\n", 8) == 0;
}

inline DecodedPng decodePng(const std::string& path) {
  DecodedPng out;
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str())) {
    out.error = image.message;
    return out;
  }
  image.format = PNG_FORMAT_RGB;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) {
    out.error = image.message;
    png_image_free(&image);
    return out;
  }
  out.ok = true;
  out.width = int(image.width);
  out.height = int(image.height);
  return out;
}

}  // namespace tl::testing
