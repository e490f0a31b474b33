// Byte (and bit) transposition of fixed-size elements: "shuffle" gathers byte k of every element
// into plane k (planes[k][i] = in[i * size + k]); "unshuffle" interleaves them back.
// Elements of 2, 4 and 8 bytes use SIMD kernels (SSSE3/SSE2, chosen at run time).
#pragma once

#include <cstddef>
#include <cstdint>

namespace motes::codec {

// planes[k] must hold n bytes each (k < size); in holds n elements of `size` bytes.
void shuffle(const unsigned char* in, size_t n, uint32_t size, unsigned char* const* planes);
// out receives n elements of `size` bytes; planes[k] holds byte k of every element.
void unshuffle(const unsigned char* const* planes, size_t n, uint32_t size, unsigned char* out);

// Bit transposition of byte planes ("bit shuffle"): out holds 8 * size bit planes of
// m = ceil(n / 8) bytes; plane 8k + b holds bit b of byte plane k, bit i of its byte j
// being bit b of bytes[k][8j + i] (0 past n). docs/format.md §4.12, layout 2.
void bit_planes(const unsigned char* const* bytes, size_t n, uint32_t size, unsigned char* out);
// The inverse, into byte planes of n bytes each; false when a bit past value n - 1 is set.
bool byte_planes(const unsigned char* bits, size_t n, uint32_t size, unsigned char* const* bytes);

}  // namespace motes::codec
