// Byte transposition of fixed-size elements: "shuffle" gathers byte k of every element
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

}  // namespace motes::codec
