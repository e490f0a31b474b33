// Words: a value's bytes as an unsigned integer of its size, and the maps the predictors
// apply to them (internal to codec/; docs/format.md §4.12 defines each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "motes/codec/codec.hpp"
#include "motes/codec/packed.hpp"
#include "motes/core/bytes.hpp"

namespace motes::codec::words {

using motes::load;
template <class U>
void put(unsigned char* p, U v) {
  store<U>(p, v);
}

template <class U>
using Signed = std::make_signed_t<U>;

// Order-preserving map of a value's bits to an unsigned integer (and back); branch-free
// (the sign of noise is random: a branch on it would be mispredicted half the time).
template <class U>
U ordered(U u, const ValueType& t) {
  constexpr U top = U(1) << (sizeof(U) * 8 - 1);
  constexpr int shift = sizeof(U) * 8 - 1;
  if (t.is_float) return U(u ^ (U(-U(u >> shift)) | top));  // negative: ~u; positive: u | top
  return t.is_signed ? U(u ^ top) : u;
}
template <class U>
U unordered(U o, const ValueType& t) {
  constexpr U top = U(1) << (sizeof(U) * 8 - 1);
  constexpr int shift = sizeof(U) * 8 - 1;
  if (t.is_float) return U(o ^ (U(U(o >> shift) - 1) | top));  // top set: o ^ top; clear: ~o
  return t.is_signed ? U(o ^ top) : o;
}
// unordered() as a WordMap (packed.hpp): the binned words' unpacking applies it in its loop.
inline WordMap unorder_map(const ValueType& t) {
  const uint64_t top = uint64_t(1) << (8 * t.size - 1);
  return {t.is_float ? ~uint64_t(0) : 0, t.is_float || t.is_signed ? top : 0};
}
template <class U>
U zigzag(U d) {
  return U(U(d << 1) ^ U(Signed<U>(d) >> (sizeof(U) * 8 - 1)));
}
template <class U>
U unzigzag(U z) {
  return U((z >> 1) ^ U(-U(z & 1)));
}

// The float of U's size holding value v.
template <class U>
U float_bits(double v) {
  U bits;
  if constexpr (sizeof(U) == 4) {
    float f = float(v);
    std::memcpy(&bits, &f, 4);
  } else {
    std::memcpy(&bits, &v, sizeof(U));
  }
  return bits;
}
template <class U>
double float_value(U bits) {
  if constexpr (sizeof(U) == 4) {
    float f;
    std::memcpy(&f, &bits, 4);
    return double(f);
  } else {
    double d;
    std::memcpy(&d, &bits, sizeof(U));
    return d;
  }
}

template <class F>
decltype(auto) with_word(uint32_t size, F&& f) {
  switch (size) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
  }
}

inline bool word_size(uint32_t size) { return size == 1 || size == 2 || size == 4 || size == 8; }

}  // namespace motes::codec::words
