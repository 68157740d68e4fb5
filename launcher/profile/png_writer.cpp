#include "launcher/profile/png_writer.h"

#include <png.h>

#include "common/check.h"
#include "common/files.h"

namespace tl::profile {
namespace {

void appendToString(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), length);
}

void noFlush(png_structp) {}

}  // namespace

std::string encodePng(const Canvas& canvas) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  TL_CHECK(png != nullptr, "png_create_write_struct failed");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    throw Error("png_create_info_struct failed");
  }
  std::string bytes;
  std::vector<png_bytep> rows(size_t(canvas.height()));
  for (int y = 0; y < canvas.height(); ++y) {
    rows[size_t(y)] =
        const_cast<png_bytep>(&canvas.pixels()[size_t(y) * size_t(canvas.width()) * 3]);
  }
  // libpng reports errors by longjmp: only plain data lives between here and the jump.
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw Error("libpng failed to encode the plot");
  }
  png_set_write_fn(png, &bytes, appendToString, noFlush);
  png_set_IHDR(png, info, png_uint_32(canvas.width()), png_uint_32(canvas.height()), 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return bytes;
}

void writePng(const Canvas& canvas, const std::string& path) {
  writeFileAtomic(path, encodePng(canvas));
}

}  // namespace tl::profile
