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
      LevelSample s({{1000, 1000 + n}}, k);
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
  LevelSample s({{100, 150}}, 10);
  std::vector<uint8_t> mask(300, 1);
  s.apply(0, 300, mask.data());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(mask[i], 1);
  for (int i = 150; i < 300; ++i) ASSERT_EQ(mask[i], 1);
  int inside = 0;
  for (int i = 100; i < 150; ++i) inside += mask[i];
  EXPECT_EQ(inside, 10);
}

// A level stored in a range per region (format 2.6) samples the rows of its ranges as one
// level in their order: the same rows as the level in one range, at their positions.
TEST(LevelSample, ALevelInRangesSamplesAsOneLevel) {
  const std::vector<motes::PosRange> parts = {{10, 17}, {40, 41}, {60, 90}, {200, 231}};
  const uint64_t n = 7 + 1 + 30 + 31;
  for (uint64_t k : {0ull, 1ull, 5ull, 20ull, 68ull, 69ull}) {
    LevelSample whole({{0, n}}, k), split(parts, k);
    std::vector<uint8_t> one(n, 1), many(300, 1);
    whole.apply(0, uint32_t(n), one.data());
    split.apply(0, 300, many.data());
    std::vector<uint8_t> gathered;
    for (const motes::PosRange& g : parts)
      for (uint64_t p = g.begin; p < g.end; ++p) gathered.push_back(many[p]);
    ASSERT_EQ(gathered, one) << "k=" << k;
    EXPECT_EQ(split.size(), n);
    EXPECT_TRUE(split.contains(40) && split.contains(230) && !split.contains(41) && !split.contains(17));
    for (uint64_t p = 0; p < 300; ++p)  // rows outside the level are untouched
      if (!split.contains(p)) ASSERT_EQ(many[p], 1);
    std::vector<uint8_t> piece(25, 1);  // a window starting inside a range
    split.apply(70, 25, piece.data());
    for (uint64_t j = 0; j < 25; ++j) ASSERT_EQ(piece[j], 70 + j < 90 ? many[70 + j] : 1);
  }
}
