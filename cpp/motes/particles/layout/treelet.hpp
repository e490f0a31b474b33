// One treelet of the layout (docs/format.md section 10.3), internal to the builder: a
// median-split k-d tree over a range of points in space-filling order, with stratified
// level-of-detail points at its inner nodes and in its leaves.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "motes/core/errors.hpp"
#include "motes/core/types.hpp"
#include "motes/particles/layout/builder.hpp"
#include "motes/particles/layout/tree.hpp"

namespace motes::treelet {

constexpr uint32_t kMaxLod = 1024;  // LOD points per inner node, at most

inline uint32_t reverse_bits(uint32_t v) {
  v = (v >> 1 & 0x55555555u) | (v & 0x55555555u) << 1;
  v = (v >> 2 & 0x33333333u) | (v & 0x33333333u) << 2;
  v = (v >> 4 & 0x0f0f0f0fu) | (v & 0x0f0f0f0fu) << 4;
  return __builtin_bswap32(v);
}

// Index order that makes every prefix of a leaf an evenly spread sample of it
// (bit reversal of positions along the space-filling order).
template <class RowOf>
void append_stratified(uint32_t n, RowOf&& row_of, std::vector<uint64_t>& out) {
  if (n <= 1) {
    if (n) out.push_back(row_of(0));
    return;
  }
  const int bits = 32 - std::countl_zero(n - 1);  // 2^bits >= n
  for (uint64_t i = 0; i < (uint64_t(1) << bits); ++i) {
    const uint32_t r = reverse_bits(uint32_t(i)) >> (32 - bits);
    if (r < n) out.push_back(row_of(r));
  }
}

// One point of a treelet: its three coordinates and an index (into the treelet's rows
// while it is built, the input row in the layout's sorted records), side by side, so
// that a partition moves one record.
template <class P>
struct Point {
  P c[3];
  uint32_t index;
};

// The points of rows[0, n), gathered from the position columns (prefetched ahead).
template <class P>
void gather_points(const Coordinate* axes, const uint64_t* rows, uint64_t n, Point<P>* out) {
  for (uint64_t i = 0; i < n; ++i) {
    if (i + 32 < n)
      for (int a = 0; a < 3; ++a) axes[a].prefetch(rows[i + 32]);
    for (int a = 0; a < 3; ++a) out[i].c[a] = P(axes[a][rows[i]]);
  }
}

// Builds one treelet: a median-split k-d tree over points kept in space-filling
// order (partitions are stable), each inner node taking K stratified LOD points.
// Points move between two buffers, one level to the next (no copying back).
template <class P>
class TreeletBuilder {
 public:
  using Point = treelet::Point<P>;
  std::vector<TreeNode> nodes;
  std::vector<uint64_t> own;  // own rows of each node, in node order

  explicit TreeletBuilder(const LayoutOptions& o) : opt_(&o) {}

  // fill(rows, points) puts the treelet's input rows, in space-filling order, into `rows`
  // (a vector) and their coordinates into `points` (a vector of Point, resized to the rows).
  template <class Fill>
  void build(Fill&& fill) {
    Scratch& w = scratch();
    fill(w.rows, w.points[0]);
    const uint64_t n = w.rows.size();
    if (n > UINT32_MAX)  // 2^32 points in one cell of the finest Morton grid
      throw UsageError("more than 2^32 particles share one position cell; the layout cannot split them");
    rows_ = w.rows.data();
    w.points[1].resize(n);
    points_[0] = w.points[0].data(), points_[1] = w.points[1].data();
    P lo[3], hi[3];
    for (int a = 0; a < 3; ++a) lo[a] = std::numeric_limits<P>::max(), hi[a] = std::numeric_limits<P>::lowest();
    for (uint64_t i = 0; i < n; ++i) {
      Point& pt = points_[0][i];
      for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], pt.c[a]), hi[a] = std::max(hi[a], pt.c[a]);
      pt.index = uint32_t(i);
    }
    w.select.resize(n);
    select_ = w.select.data();
    own.reserve(n);
    split(0, n, 0, lo, hi);
    if (n > kKeepScratch) w = Scratch();  // an unusually large treelet: give its memory back
  }

  template <class V>
  static void release(V& v) {
    V().swap(v);
  }

 private:
  // Working buffers, kept per thread from one treelet to the next: fresh memory
  // for every treelet would cost a page fault (and a cleared page) per 4 KiB.
  struct Scratch {
    std::vector<uint64_t> rows;
    std::vector<Point> points[2];
    std::vector<P> select;
  };
  static Scratch& scratch() {
    static thread_local Scratch s;
    return s;
  }
  static constexpr uint64_t kKeepScratch = uint64_t(1) << 22;

  const LayoutOptions* opt_;
  const uint64_t* rows_ = nullptr;
  Point* points_[2] = {};
  P* select_ = nullptr;

  // The value of rank n/2 of the points' coordinate `axis`, exactly, and how many values
  // are below it and equal to it. Floyd-Rivest style: a sorted sample brackets the median,
  // one branch-free pass keeps only the values between the brackets (and counts those
  // below), and selection and counting run on those few; a missed bracket falls back to a
  // selection over everything.
  P select_median(const Point* pts, uint64_t n, int axis, uint64_t& less, uint64_t& equal) {
    const uint64_t want = n / 2;
    if (n >= 1024) {
      // The band is about 3 standard deviations of the sample median's rank either side.
      const uint32_t samples = n >= 4096 ? 1024 : 256, band = n >= 4096 ? 48 : 24;
      P sample[1024];
      for (uint32_t i = 0; i < samples; ++i) sample[i] = pts[(2 * uint64_t(i) + 1) * n / (2 * samples)].c[axis];
      // The two order statistics alone, not a sorted sample: the second selection runs on
      // what lies above the first.
      P* const at_low = sample + samples / 2 - band;
      std::nth_element(sample, at_low, sample + samples);
      std::nth_element(at_low + 1, sample + samples / 2 + band, sample + samples);
      const P low = *at_low, high = sample[samples / 2 + band];
      uint64_t below = 0, kept = 0;
      for (uint64_t i = 0; i < n; ++i) {
        const P x = pts[i].c[axis];
        below += x < low;
        select_[kept] = x;
        kept += (x >= low) & (x <= high);
      }
      if (want >= below && want < below + kept) {
        std::nth_element(select_, select_ + (want - below), select_ + kept);
        const P median = select_[want - below];
        less = below, equal = 0;  // values outside [low, high] are outside the median's ties
        for (uint64_t i = 0; i < kept; ++i) less += select_[i] < median, equal += select_[i] == median;
        return median;
      }
    }
    for (uint64_t i = 0; i < n; ++i) select_[i] = pts[i].c[axis];
    std::nth_element(select_, select_ + want, select_ + n);
    const P median = select_[want];
    less = equal = 0;
    for (uint64_t i = 0; i < n; ++i) less += pts[i].c[axis] < median, equal += pts[i].c[axis] == median;
    return median;
  }

  void split(uint64_t lo, uint64_t hi, int s, const P* blo, const P* bhi) {
    const uint64_t n = hi - lo;
    const uint32_t id = uint32_t(nodes.size());
    nodes.push_back(TreeNode{});
    const Point* in = points_[s] + lo;
    if (n <= opt_->leaf_size) {
      nodes[id].own_count = uint32_t(n);
      append_stratified(uint32_t(n), [&](uint32_t i) { return rows_[in[i].index]; }, own);
      return;
    }
    int axis = 0;
    for (int a = 1; a < 3; ++a)
      if (bhi[a] - blo[a] > bhi[axis] - blo[axis]) axis = a;
    uint64_t less, equal;
    const P median = select_median(in, n, axis, less, equal);

    // K stratified LOD points leave; the rest splits at the median, ties filling the left half.
    // Loops run between the picks, without branches on the data.
    const uint32_t k = opt_->lod_count;
    uint64_t picks[kMaxLod + 1];
    for (uint32_t j = 0; j < k; ++j) picks[j] = (2 * uint64_t(j) + 1) * n / (2 * k);
    picks[k] = n;
    for (uint32_t j = 0; j < k; ++j) less -= in[picks[j]].c[axis] < median, equal -= in[picks[j]].c[axis] == median;
    const uint64_t m = n - k, target = m / 2;
    uint64_t left = less >= target ? less : std::min(target, less + equal);
    const bool by_count = left == 0 || left == m;  // degenerate: split by order alone
    if (by_count) left = target;
    const int d = 1 - s;
    Point* out = points_[d] + lo;
    uint64_t l = 0, r = left, ties = left - std::min(left, less);
    for (uint64_t begin = 0, j = 0; j <= k; begin = picks[j] + 1, ++j) {
      if (by_count) {
        for (uint64_t i = begin; i < picks[j]; ++i) {
          const bool to_left = l < left;
          out[to_left ? l : r] = in[i];
          l += to_left, r += !to_left;
        }
      } else {
        for (uint64_t i = begin; i < picks[j]; ++i) {
          const P x = in[i].c[axis];
          const bool eq = x == median;
          const bool to_left = (x < median) | (eq & (ties > 0));
          ties -= uint64_t(eq & to_left);
          out[to_left ? l : r] = in[i];
          l += to_left, r += !to_left;
        }
      }
      if (j < k) own.push_back(rows_[in[picks[j]].index]);
    }
    nodes[id].own_count = k;
    P llo[3], lhi[3], rlo[3], rhi[3];
    for (int a = 0; a < 3; ++a) llo[a] = rlo[a] = blo[a], lhi[a] = rhi[a] = bhi[a];
    if (!by_count) lhi[axis] = rlo[axis] = median;
    split(lo, lo + left, d, llo, lhi);
    nodes[id].right = uint32_t(nodes.size());
    split(lo + left, lo + m, d, rlo, rhi);
  }
};

}  // namespace motes::treelet
