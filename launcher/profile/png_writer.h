// Encodes a Canvas as an 8-bit RGB PNG with libpng.
#pragma once

#include <string>

#include "launcher/profile/canvas.h"

namespace tl::profile {

std::string encodePng(const Canvas& canvas);
// Writes the PNG atomically; InputError naming the path when it cannot.
void writePng(const Canvas& canvas, const std::string& path);

}  // namespace tl::profile
