// Bit and word helpers shared by the packed and binned word streams (internal to codec/;
// docs/format.md §4.12.2 defines the streams).
#pragma once

#include <cstdint>

#include "motes/core/bytes.hpp"

namespace motes::codec::bits {

// A little-endian word of `size` bytes (1, 2, 4, 8), and back: fixed-size loads, not memcpy calls.
inline uint64_t word_at(const unsigned char* p, uint32_t size) {
  switch (size) {
    case 1: return *p;
    case 2: return load<uint16_t>(p);
    case 4: return load<uint32_t>(p);
    default: return load<uint64_t>(p);
  }
}
inline void put_word(unsigned char* p, uint64_t v, uint32_t size) {
  switch (size) {
    case 1: *p = uint8_t(v); return;
    case 2: store<uint16_t>(p, uint16_t(v)); return;
    case 4: store<uint32_t>(p, uint32_t(v)); return;
    default: store<uint64_t>(p, v);
  }
}
inline uint64_t mask_of(uint32_t w) { return w >= 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1; }
inline uint32_t bits_for(uint64_t range) { return range ? 64 - uint32_t(__builtin_clzll(range)) : 0; }

// Bits [bit, bit + w) of a little-endian bit string; the 8 bytes from bit / 8 must be
// readable (the stream's padding guarantees it), and one more when the field needs it.
inline uint64_t field(const unsigned char* p, uint64_t bit, uint32_t w) {
  const uint64_t at = bit >> 3;
  const uint32_t sh = uint32_t(bit & 7);
  uint64_t v = load<uint64_t>(p + at) >> sh;
  if (sh + w > 64) v |= uint64_t(p[at + 8]) << (64 - sh);
  return v & mask_of(w);
}

}  // namespace motes::codec::bits
