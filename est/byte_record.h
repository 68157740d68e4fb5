// Little helpers for the fixed byte records EST contexts and named tensors travel in.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/check.h"

namespace tl::est {

inline void appendInt(std::vector<uint8_t>& out, int64_t v) {
  uint8_t b[8];
  std::memcpy(b, &v, 8);
  out.insert(out.end(), b, b + 8);
}

// Reads 8 bytes at p and advances it; `what` names the record in the error when it is short.
inline int64_t readInt(const uint8_t*& p, const uint8_t* end, const char* what) {
  TL_CHECK(end - p >= 8, what, " record truncated");
  int64_t v;
  std::memcpy(&v, p, 8);
  p += 8;
  return v;
}

}  // namespace tl::est
