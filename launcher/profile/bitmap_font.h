// A 5x7 bitmap font: each glyph is seven rows, the five low bits of a row are its pixels
// (bit 4 leftmost).
#pragma once

#include <array>
#include <cstdint>

namespace tl::profile {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 7;
inline constexpr int kGlyphAdvance = 6;  // one blank column between glyphs

using Glyph = std::array<uint8_t, kGlyphHeight>;

// The glyph of `c` (lower case maps to upper case); a hollow box for characters it lacks.
const Glyph& glyphFor(char c);

}  // namespace tl::profile
