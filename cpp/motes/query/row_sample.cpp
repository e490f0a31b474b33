#include "motes/query/row_sample.hpp"

#include <algorithm>

namespace motes {

LevelSample::LevelSample(std::vector<PosRange> level, uint64_t k) : level_(std::move(level)) {
  for (const PosRange& r : level_) {
    rank_.push_back(n_);
    n_ += r.end - r.begin;
  }
  k_ = std::min(k, n_);
  while (bits_ < 64 && (uint64_t(1) << bits_) < n_) ++bits_;
  // The smallest threshold t with count_below(t) >= k; count_below grows by at most one
  // per unit of t (bit reversal is a bijection), so it is exactly k there.
  uint64_t lo = 0, hi = bits_ == 64 ? ~uint64_t(0) : uint64_t(1) << bits_;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (count_below(mid) >= k_) hi = mid;
    else lo = mid + 1;
  }
  threshold_ = lo;
}

uint64_t LevelSample::reverse(uint64_t i) const {
  i = ((i >> 1) & 0x5555555555555555ull) | ((i & 0x5555555555555555ull) << 1);
  i = ((i >> 2) & 0x3333333333333333ull) | ((i & 0x3333333333333333ull) << 2);
  i = ((i >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((i & 0x0F0F0F0F0F0F0F0Full) << 4);
  i = ((i >> 8) & 0x00FF00FF00FF00FFull) | ((i & 0x00FF00FF00FF00FFull) << 8);
  i = ((i >> 16) & 0x0000FFFF0000FFFFull) | ((i & 0x0000FFFF0000FFFFull) << 16);
  i = (i >> 32) | (i << 32);
  return bits_ ? i >> (64 - bits_) : 0;
}

// Counts the b-bit strings i with i < n and reverse(i) < t, bit by bit from i's least
// significant bit: that bit is reverse(i)'s most significant, so the comparison with t is
// decided by the first differing bit, while the comparison with n (which i's most
// significant bits decide) is decided by the last one. 3 x 3 states, b steps.
uint64_t LevelSample::count_below(uint64_t t) const {
  enum { lt = 0, eq = 1, gt = 2 };
  const bool all_below_n = bits_ == 64 || n_ >= (uint64_t(1) << bits_);
  uint64_t ways[3][3] = {};
  ways[eq][eq] = 1;
  for (unsigned p = 0; p < bits_; ++p) {
    const unsigned tb = unsigned(t >> (bits_ - 1 - p)) & 1u, nb = unsigned(n_ >> p) & 1u;
    uint64_t next[3][3] = {};
    for (int c1 = 0; c1 < 3; ++c1)
      for (int c2 = 0; c2 < 3; ++c2) {
        if (!ways[c1][c2]) continue;
        for (unsigned bit = 0; bit < 2; ++bit) {
          int n1 = c1 != eq ? c1 : bit < tb ? lt : bit > tb ? gt : eq;
          int n2 = bit < nb ? lt : bit > nb ? gt : c2;
          next[n1][n2] += ways[c1][c2];
        }
      }
    std::copy(&next[0][0], &next[0][0] + 9, &ways[0][0]);
  }
  if (bits_ < 64 && t >= (uint64_t(1) << bits_)) {  // every reverse(i) < t: count i < n
    uint64_t below = 0;
    for (int c1 = 0; c1 < 3; ++c1) below += all_below_n ? ways[c1][lt] + ways[c1][eq] + ways[c1][gt] : ways[c1][lt];
    return below;
  }
  return all_below_n ? ways[lt][lt] + ways[lt][eq] + ways[lt][gt] : ways[lt][lt];
}

bool LevelSample::contains(uint64_t row) const {
  return holding(level_, range_after(level_, row), row);
}

void LevelSample::apply(uint64_t first, uint32_t count, uint8_t* mask) const {
  if (!active()) return;
  const uint64_t last = first + count;
  auto it = range_after(level_, first);
  for (; it != level_.end() && it->begin < last; ++it) {
    const uint64_t a = std::max(first, it->begin), b = std::min(last, it->end);
    const uint64_t rank = rank_[size_t(it - level_.begin())] - it->begin;
    for (uint64_t row = a; row < b; ++row) mask[row - first] &= uint8_t(reverse(rank + row) < threshold_);
  }
}

}  // namespace motes
