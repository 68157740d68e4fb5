#include "dataload/jpeg_codec.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace tl::data {
namespace {

// libjpeg's error manager with the jump target and the message of the error that ended a call.
// `base` must stay the first member: libjpeg hands callbacks a pointer to it.
struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void jumpOut(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void onError(j_common_ptr cinfo) { jumpOut(cinfo); }

// Warnings (level -1) are kept quiet, as PIL keeps them, except the one saying the data ended
// early: libjpeg would pad the rest of the image with grey and call it a success.
void onMessage(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) jumpOut(cinfo);
  if (level == -1) ++cinfo->err->num_warnings;
}

void installErrorManager(ErrorManager& errors) {
  jpeg_std_error(&errors.base);
  errors.base.error_exit = onError;
  errors.base.emit_message = onMessage;
}

// Runs one step of libjpeg calls; false when libjpeg reported an error (the message is in
// `errors`). `step` must not own anything with a destructor: the jump skips its frame.
template <typename Step>
bool guarded(ErrorManager& errors, Step&& step) {
  if (setjmp(errors.jump) != 0) return false;
  step();
  return true;
}

// Owns a decompressor from creation to destruction, whatever happens in between.
struct Decompressor {
  ErrorManager errors;
  jpeg_decompress_struct cinfo;
  bool created = false;
  Decompressor() {
    std::memset(&cinfo, 0, sizeof cinfo);
    installErrorManager(errors);
    cinfo.err = &errors.base;
  }
  ~Decompressor() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

struct Compressor {
  ErrorManager errors;
  jpeg_compress_struct cinfo;
  unsigned char* buffer = nullptr;  // jpeg_mem_dest's output, malloc'ed by libjpeg
  unsigned long size = 0;
  bool created = false;
  Compressor() {
    std::memset(&cinfo, 0, sizeof cinfo);
    installErrorManager(errors);
    cinfo.err = &errors.base;
  }
  ~Compressor() {
    if (created) jpeg_destroy_compress(&cinfo);
    std::free(buffer);
  }
};

// PIL's CMYK to RGB: R = 255 - C with black applied, i.e. (255 - C) * (255 - K) / 255. Adobe
// files store 255 - C etc., so there it is C' * K' / 255.
void cmykRowToRgb(const uint8_t* cmyk, int width, bool inverted, uint8_t* rgb) {
  for (int x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int black = inverted ? cmyk[3] : 255 - cmyk[3];
    for (int c = 0; c < 3; ++c) {
      const int ink = inverted ? cmyk[c] : 255 - cmyk[c];
      rgb[c] = uint8_t((ink * black + 127) / 255);
    }
  }
}

}  // namespace

JpegDecodeResult decodeJpeg(const uint8_t* bytes, size_t size, const std::string& name,
                            std::vector<uint8_t>& rgb, const PickReduction& pickReduction) {
  auto corrupt = [&](const std::string& why) {
    throw CorruptImageError(str("image '", name, "' is not a valid JPEG: ", why));
  };
  if (size == 0) corrupt("the file is empty");
  Decompressor d;
  jpeg_decompress_struct* cinfo = &d.cinfo;
  const bool headerOk = guarded(d.errors, [&] {
    jpeg_create_decompress(cinfo);
    d.created = true;
    jpeg_mem_src(cinfo, bytes, static_cast<unsigned long>(size));
    jpeg_read_header(cinfo, TRUE);
  });
  if (!headerOk) corrupt(d.errors.message);

  JpegDecodeResult result;
  result.storedShape = ImageShape{3, int(cinfo->image_height), int(cinfo->image_width)};
  const int64_t pixels = int64_t(cinfo->image_height) * cinfo->image_width;
  if (pixels > kMaxJpegPixels) {
    throw CorruptImageError(str("image '", name, "' is too large to decode: ",
                                cinfo->image_width, "x", cinfo->image_height, " pixels (limit ",
                                kMaxJpegPixels, ")"));
  }
  result.reduction = pickReduction ? pickReduction(result.storedShape) : 1;
  TL_CHECK(result.reduction == 1 || result.reduction == 2 || result.reduction == 4 ||
               result.reduction == 8,
           "JPEG reduction must be 1, 2, 4 or 8, got ", result.reduction);
  cinfo->scale_num = 1;
  cinfo->scale_denom = unsigned(result.reduction);
  const J_COLOR_SPACE stored = cinfo->jpeg_color_space;
  const bool cmyk = stored == JCS_CMYK || stored == JCS_YCCK;
  if (!cmyk && stored != JCS_GRAYSCALE && stored != JCS_YCbCr && stored != JCS_RGB) {
    corrupt(str("unsupported colour space (libjpeg J_COLOR_SPACE ", int(stored), ")"));
  }
  cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  if (!guarded(d.errors, [&] { jpeg_start_decompress(cinfo); })) corrupt(d.errors.message);

  const int height = int(cinfo->output_height), width = int(cinfo->output_width);
  TL_CHECK_EQ(int(cinfo->output_components), cmyk ? 4 : 3);
  result.shape = ImageShape{3, height, width};
  // A CMYK row is decoded into the spare tail of the buffer, then converted in place.
  const size_t rgbBytes = size_t(height) * size_t(width) * 3;
  rgb.resize(rgbBytes + (cmyk ? size_t(width) * 4 : 0));
  uint8_t* const pixelsOut = rgb.data();
  const bool inverted = cinfo->saw_Adobe_marker;
  bool stalled = false;  // a memory source never suspends; checked so a bug cannot spin
  // The image is complete once its last row is decoded; what follows (the EOI marker) is not
  // read, as PIL does not insist on it either.
  const bool decodedOk = guarded(d.errors, [&] {
    while (cinfo->output_scanline < cinfo->output_height) {
      uint8_t* row = pixelsOut + size_t(cinfo->output_scanline) * size_t(width) * 3;
      JSAMPROW target = cmyk ? pixelsOut + rgbBytes : row;
      if (jpeg_read_scanlines(cinfo, &target, 1) != 1) {
        stalled = true;
        break;
      }
      if (cmyk) cmykRowToRgb(target, width, inverted, row);
    }
  });
  if (!decodedOk) corrupt(d.errors.message);
  TL_CHECK(!stalled, "libjpeg stopped decoding '", name, "' without an error");
  rgb.resize(rgbBytes);
  return result;
}

std::string encodeJpeg(const uint8_t* pixels, int width, int height, int channels, int quality) {
  TL_CHECK(width > 0 && height > 0 && width <= JPEG_MAX_DIMENSION && height <= JPEG_MAX_DIMENSION,
           "cannot encode a ", width, "x", height, " JPEG");
  TL_CHECK(channels == 1 || channels == 3 || channels == 4, "channels ", channels);
  TL_CHECK(quality >= 1 && quality <= 100, "quality ", quality);
  Compressor c;
  jpeg_compress_struct* cinfo = &c.cinfo;
  const bool ok = guarded(c.errors, [&] {
    jpeg_create_compress(cinfo);
    c.created = true;
    jpeg_mem_dest(cinfo, &c.buffer, &c.size);
    cinfo->image_width = JDIMENSION(width);
    cinfo->image_height = JDIMENSION(height);
    cinfo->input_components = channels;
    cinfo->in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, quality, TRUE);
    jpeg_start_compress(cinfo, TRUE);
    while (cinfo->next_scanline < cinfo->image_height) {
      // libjpeg's API is not const-correct; it only reads the rows.
      JSAMPROW row = const_cast<uint8_t*>(pixels) +
                     size_t(cinfo->next_scanline) * size_t(width) * size_t(channels);
      jpeg_write_scanlines(cinfo, &row, 1);
    }
    jpeg_finish_compress(cinfo);
  });
  TL_CHECK(ok, "JPEG encoding failed: ", c.errors.message);
  return std::string(reinterpret_cast<const char*>(c.buffer), c.size);
}

}  // namespace tl::data
