// LevelSample against brute force: exactly k rows, nested in k, spread over the level.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "motes/query/row_sample.hpp"

using motes::LevelSample;

TEST(LevelSample, ExactNestedAndSpread) {
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 7ull, 8ull, 9ull, 31ull, 64ull, 65ull, 100ull, 1000ull, 4097ull}) {
    std::vector<uint8_t> previous(n, 0);
    for (uint64_t k = 0; k <= n; ++k) {
      LevelSample s(1000, n, k);
      std::vector<uint8_t> mask(n, 1);
      s.apply(1000, uint32_t(n), mask.data());
      uint64_t taken = 0;
      for (uint64_t i = 0; i < n; ++i) {
        taken += mask[i];
        ASSERT_TRUE(!previous[i] || mask[i]) << "n=" << n << " k=" << k << ": row " << i << " left the sample";
      }
      ASSERT_EQ(taken, k) << "n=" << n;
      if (k >= 2) {  // spread: no gap between sampled rows longer than about 2 n / k
        std::vector<uint64_t> rows;
        for (uint64_t i = 0; i < n; ++i)
          if (mask[i]) rows.push_back(i);
        uint64_t gap = rows.front() + (n - 1 - rows.back());
        for (size_t j = 1; j < rows.size(); ++j) gap = std::max(gap, rows[j] - rows[j - 1]);
        ASSERT_LE(gap, 4 * ((n + k - 1) / k)) << "n=" << n << " k=" << k;
      }
      previous = mask;
    }
  }
}

TEST(LevelSample, OutsideTheLevelIsUntouched) {
  LevelSample s(100, 50, 10);
  std::vector<uint8_t> mask(300, 1);
  s.apply(0, 300, mask.data());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(mask[i], 1);
  for (int i = 150; i < 300; ++i) ASSERT_EQ(mask[i], 1);
  int inside = 0;
  for (int i = 100; i < 150; ++i) inside += mask[i];
  EXPECT_EQ(inside, 10);
}
