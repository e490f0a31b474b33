// Values for the codec tests (test_codec.cpp, test_packed.cpp): n values of a dtype, as
// bytes, in one of a few shapes a column takes.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/core/types.hpp"

namespace motes::test {

// 0 smooth (crossing zero), 1 noise crossing zero, 2 constant, 3 specials (NaN, -inf, -0,
// extremes), 4 two values (a charge), 5 a few dozen distinct values, 6 ascending (0, 1, 2,
// ...), 7 ascending with random gaps.
inline std::vector<unsigned char> codec_values(uint8_t code, size_t n, int shape, uint64_t seed) {
  const codec::ValueType t = codec::value_type(code);
  std::vector<unsigned char> out(n * t.size);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  for (size_t i = 0; i < n; ++i) {
    const double v = shape == 0   ? std::sin(double(i) * 1e-3) * 100
                     : shape == 1 ? g(rng) * 1e3
                     : shape == 2 ? 7.0
                     : shape == 4 ? (rng() % 2 ? -1.5 : 2.0)
                     : shape == 5 ? double(rng() % 37) - 10
                     : shape == 7 ? double(i * 3 + rng() % 3)
                                  : double(i);
    dispatch_dtype(DType(code), [&](auto tag) {
      using T = decltype(tag);
      T x;
      if constexpr (std::is_floating_point_v<T>) {
        x = T(v);
        if (shape == 3 && i % 7 == 0) x = std::numeric_limits<T>::quiet_NaN();
        if (shape == 3 && i % 11 == 0) x = -std::numeric_limits<T>::infinity();
        if (shape == 3 && i % 13 == 0) x = -0.0;
      } else {
        x = shape == 3 ? (i % 2 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min()) : T(int64_t(v));
        if (shape == 1) x = T(rng());
      }
      std::memcpy(out.data() + i * t.size, &x, t.size);
    });
  }
  return out;
}

}  // namespace motes::test
