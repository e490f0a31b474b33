// An even, nested sample of k of the n rows of one level: the rows whose index in the level,
// bit reversed, is among the k smallest. Rows of a level are spatially sorted (in preorder,
// whether the level lies in one range or, past the detail level, in a range per region), so the first
// sampled rows are 0, n/2, n/4, 3n/4, ...: spread over the whole level at every k, and the
// sample of k rows is part of the sample of every larger k (a larger fraction only adds
// particles). Used by `fraction=` queries for the one level they take in part.
#pragma once

#include <cstdint>
#include <vector>

#include "motes/particles/layout/tree.hpp"

namespace motes {

class LevelSample {
 public:
  LevelSample() = default;
  // The sample of k of the n rows of a level at file positions `level` (in the level's
  // order; Levels::positions(l, l + 1)).
  LevelSample(std::vector<PosRange> level, uint64_t k);

  bool active() const { return n_ > 0 && k_ < n_; }
  const std::vector<PosRange>& ranges() const { return level_; }
  uint64_t size() const { return n_; }   // rows of the level
  uint64_t taken() const { return k_; }  // rows sampled
  // Whether file position `row` lies in the sampled level.
  bool contains(uint64_t row) const;
  // Clears mask[j] of the unsampled rows among positions [first, first + count).
  void apply(uint64_t first, uint32_t count, uint8_t* mask) const;

 private:
  std::vector<PosRange> level_;
  std::vector<uint64_t> rank_;  // per range of level_: the level index of its first row
  uint64_t n_ = 0, k_ = 0, threshold_ = 0;
  unsigned bits_ = 0;  // rows are indexed with `bits_` bits: 2^bits_ >= n
  uint64_t reverse(uint64_t i) const;
  uint64_t count_below(uint64_t t) const;  // rows i < n with reverse(i) < t
};

}  // namespace motes
