// An even, nested sample of k of the n rows of one level: the rows whose index, bit
// reversed, is among the k smallest. Rows of a level are spatially sorted, so the first
// sampled rows are 0, n/2, n/4, 3n/4, ...: spread over the whole level at every k, and the
// sample of k rows is part of the sample of every larger k (a larger fraction only adds
// particles). Used by `fraction=` queries for the one level they take in part.
#pragma once

#include <cstdint>

namespace motes {

class LevelSample {
 public:
  LevelSample() = default;
  // The sample of k of the n rows starting at file position `start` (k <= n).
  LevelSample(uint64_t start, uint64_t n, uint64_t k);

  bool active() const { return n_ > 0 && k_ < n_; }
  uint64_t start() const { return start_; }
  uint64_t end() const { return start_ + n_; }
  uint64_t taken() const { return k_; }  // rows sampled
  // Whether file position `row` (inside [start, end)) is sampled.
  bool take(uint64_t row) const { return reverse(row - start_) < threshold_; }
  // Clears mask[j] of the unsampled rows among positions [first, first + count).
  void apply(uint64_t first, uint32_t count, uint8_t* mask) const;

 private:
  uint64_t start_ = 0, n_ = 0, k_ = 0, threshold_ = 0;
  unsigned bits_ = 0;  // rows are indexed with `bits_` bits: 2^bits_ >= n
  uint64_t reverse(uint64_t i) const;
  uint64_t count_below(uint64_t t) const;  // rows i < n with reverse(i) < t
};

}  // namespace motes
