// The node bitmaps' batch form (spec::bitmap_bits, docs/format.md section 4.8): on AVX2 and
// without it, every window of values gives the bins spec::bitmap_bin gives them one by one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "motes/particles/spec.hpp"

using namespace motes;

namespace {

template <class T>
void check_windows(const std::vector<double>& probes, double lo, double hi, std::mt19937_64& rng) {
  std::vector<T> v(probes.begin(), probes.end());
  const double width = hi - lo;
  for (int k = 0; k < 4000; ++k) {
    const size_t n = 1 + rng() % 64, at = rng() % (v.size() - n);
    uint32_t want = 0;
    for (size_t i = at; i < at + n; ++i)
      if (!std::isnan(double(v[i]))) want |= 1u << spec::bitmap_bin(double(v[i]), lo, hi);
    ASSERT_EQ(spec::bitmap_bits(v.data() + at, n, lo, width), want) << n << " values from " << at << " in [" << lo << ", " << hi << "]";
    ASSERT_EQ(spec::bitmap_bits_portable(v.data() + at, n, lo, width), want) << n << " values from " << at;
  }
}

}  // namespace

TEST(BitmapBits, EveryWindowHasTheBinsOfItsValues) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double ranges[][2] = {{0, 1}, {-1, 1}, {-3.7e-5, 2.9e-5}, {1e300, 1.7e308}, {-1.7e308, 1.7e308}, {0, 5e-324},
                              {1, std::nextafter(1.0, 2.0)}, {-123456789, 987654321}, {0.1, 0.7}, {-3e38, 3e38}};
  for (const auto& r : ranges) {
    const double lo = r[0], hi = r[1];
    std::vector<double> probes;
    for (int k = 0; k < 3000; ++k) {
      probes.push_back(lo + (hi - lo) * unit(rng));
      if (k % 7 == 0) probes.push_back(NAN);
      if (k % 50 == 0) probes.insert(probes.end(), {INFINITY, -INFINITY, lo, hi, -0.0, std::nextafter(hi, INFINITY)});
    }
    for (uint32_t b = 0; b <= spec::kBitmapBins; ++b) {  // around every bin border
      double t = lo + (hi - lo) * (double(b) / spec::kBitmapBins);
      for (int s = 0; s < 8; ++s) t = std::nextafter(t, -INFINITY);
      for (int s = 0; s < 16; ++s, t = std::nextafter(t, INFINITY)) probes.push_back(t);
    }
    std::shuffle(probes.begin(), probes.end(), rng);
    check_windows<double>(probes, lo, hi, rng);
    check_windows<float>(probes, lo, hi, rng);
  }
}
