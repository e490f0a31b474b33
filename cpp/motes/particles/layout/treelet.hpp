// One treelet of the layout (docs/format.md section 10.3), internal to the builder: a
// median-split k-d tree over a range of points in space-filling order, with stratified
// level-of-detail points at its inner nodes and in its leaves.
#pragma once

#include <algorithm>
#include <bit>
#include <cstring>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "motes/core/errors.hpp"
#include "motes/core/memory.hpp"
#include "motes/core/types.hpp"
#include "motes/particles/layout/builder.hpp"
#include "motes/particles/layout/tree.hpp"

namespace motes::treelet {

constexpr uint32_t kMaxLod = 1024;  // LOD points per inner node, at most

constexpr uint32_t reverse_bits(uint32_t v) {
  v = (v >> 1 & 0x55555555u) | (v & 0x55555555u) << 1;
  v = (v >> 2 & 0x33333333u) | (v & 0x33333333u) << 2;
  v = (v >> 4 & 0x0f0f0f0fu) | (v & 0x0f0f0f0fu) << 4;
  return __builtin_bswap32(v);
}

// The bit reversals of 0 .. 2^bits - 1 (bits <= kReversedBits), for append_stratified.
constexpr int kReversedBits = 12;
struct ReversedTable {
  uint16_t at[kReversedBits + 1][1u << kReversedBits];
  constexpr ReversedTable() : at() {
    for (int b = 1; b <= kReversedBits; ++b)
      for (uint32_t i = 0; i < (1u << b); ++i) at[b][i] = uint16_t(reverse_bits(i) >> (32 - b));
  }
};
inline constexpr ReversedTable kReversed{};

// Calls f(r) for r = 0 .. n - 1 in bit-reversal order (the b = ceil(log2 n) low bits of
// 0 .. 2^b - 1 reversed, those below n): every prefix an evenly spread sample of the n.
template <class F>
void for_each_stratified(uint32_t n, F&& f) {
  if (n <= 1) {
    if (n) f(0u);
    return;
  }
  const int bits = 32 - std::countl_zero(n - 1);  // 2^bits >= n
  if (bits <= kReversedBits) {
    const uint16_t* const reversed = kReversed.at[bits];
    for (uint32_t i = 0; i < (1u << bits); ++i)
      if (const uint32_t r = reversed[i]; r < n) f(r);
    return;
  }
  for (uint64_t i = 0; i < (uint64_t(1) << bits); ++i)
    if (const uint32_t r = reverse_bits(uint32_t(i)) >> (32 - bits); r < n) f(r);
}

// Index order that makes every prefix of a leaf an evenly spread sample of it
// (bit reversal of positions along the space-filling order). Writes n rows at out, and may
// write out[n] (with anything) when room_past.
template <class RowOf>
void append_stratified(uint32_t n, RowOf&& row_of, uint64_t* out, bool room_past = true) {
  const int bits = n > 1 ? 32 - std::countl_zero(n - 1) : 0;
  if (n > 1 && bits <= kReversedBits && room_past) {  // without a branch: a reversal past the end is written over by the next
    const uint16_t* const reversed = kReversed.at[bits];
    uint64_t k = 0;
    for (uint32_t i = 0; i < (1u << bits); ++i) {
      const uint32_t r = reversed[i];
      out[k] = row_of(r < n ? r : n - 1);
      k += r < n;
    }
    return;
  }
  uint64_t k = 0;
  for_each_stratified(n, [&](uint32_t r) { out[k++] = row_of(r); });
}

// A leaf's own points with LayoutOptions::pieces_in_order (docs/format.md section 10.3): the
// pieces of the bit-reversal order of append_stratified (own indices [piece_begin(j),
// piece_begin(j + 1)): K, K, 2K, 4K, ... points), each in space-filling order. A piece is the
// same evenly spread sample of the leaf, and its neighbours in the file are neighbours in
// space. Writes n rows at out; piece_of is scratch.
template <class RowOf>
void append_pieces(uint32_t n, uint32_t lod_count, RowOf&& row_of, uint64_t* out, std::vector<uint8_t>& piece_of) {
  if (n <= lod_count) {  // one piece: the leaf in order
    for (uint32_t i = 0; i < n; ++i) out[i] = row_of(i);
    return;
  }
  piece_of.resize(n);
  uint8_t* const piece = piece_of.data();
  uint32_t k = 0, j = 0;  // the bit-reversal order's own index and piece
  uint64_t next = lod_count;  // piece_begin(j + 1)
  for_each_stratified(n, [&](uint32_t r) {
    if (k == next) ++j, next <<= 1;
    piece[r] = uint8_t(j);
    ++k;
  });
  uint64_t at[34];  // where each piece's next point goes: a leaf has at most 33 (tree.hpp piece_count)
  for (uint32_t p = 0; p <= j; ++p) at[p] = piece_begin(p, lod_count);
  for (uint32_t i = 0; i < n; ++i) out[at[piece[i]]++] = row_of(i);
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
  uint64_t own_count = 0;  // the treelet's points: own rows written

  explicit TreeletBuilder(const LayoutOptions& o) : opt_(&o) {}

  // fill(rows, points) puts the treelet's points, in space-filling order, into `points` (a
  // BigVector of Point, resized to them), and either their input rows into `rows` (an empty
  // vector) or nothing: then each point's index is its input row. The own rows of each node,
  // in node order (every point of the treelet once), go to own[0, own_count) (the next
  // treelet's may follow at once: nothing is written past).
  template <class Fill>
  void build(Fill&& fill, uint64_t* own) {
    Scratch& w = scratch();
    w.rows.clear();
    fill(w.rows, w.points[0]);
    const uint64_t n = w.points[0].size();
    if (n > UINT32_MAX)  // 2^32 points in one cell of the finest Morton grid
      throw UsageError("more than 2^32 particles share one position cell; the layout cannot split them");
    rows_ = w.rows.empty() ? nullptr : w.rows.data();
    w.points[1].resize(n);
    points_[0] = w.points[0].data(), points_[1] = w.points[1].data();
    P lo[3], hi[3];
    bounds(points_[0], n, lo, hi);
    if (rows_)
      for (uint64_t i = 0; i < n; ++i) points_[0][i].index = uint32_t(i);
    w.select.resize(n);
    select_ = w.select.data();
    w.bins.resize(n);
    bin_ = w.bins.data();
    own_count = n;
    own_at_ = own;
    own_end_ = own + n;
    split(0, n, 0, lo, hi);
    if (n > kKeepScratch) w = Scratch();  // an unusually large treelet: give its memory back
  }

  template <class V>
  static void release(V& v) {
    V().swap(v);
  }

 private:
  // Working buffers, kept per thread from one treelet to the next: fresh memory
  // for every treelet would cost a page fault (and a cleared page) per 4 KiB. Their
  // elements are not initialised when they grow (BigVector): each is written before read.
  struct Scratch {
    BigVector<uint64_t> rows;
    BigVector<Point> points[2];
    BigVector<P> select;
    BigVector<uint16_t> bins;
    std::vector<uint8_t> piece_of;  // append_pieces
  };
  static Scratch& scratch() {
    static thread_local Scratch s;
    return s;
  }
  static constexpr uint64_t kKeepScratch = uint64_t(1) << 22;

  const LayoutOptions* opt_;
  const uint64_t* rows_ = nullptr;  // null: a point's index is its row
  Point* points_[2] = {};
  P* select_ = nullptr;
  uint16_t* bin_ = nullptr;  // each point's bin in select_median
  static constexpr uint64_t kHistogramMin = 512;  // points from which a median's bin is found first
  static constexpr uint32_t kMaxBins = 4096;
  uint64_t* own_at_ = nullptr;  // where the next own row goes
  uint64_t* own_end_ = nullptr;  // past the treelet's own rows

  uint64_t row(uint32_t index) const { return rows_ ? rows_[index] : index; }

  // The smallest and largest coordinates of pts[0, n) (std::min and std::max of each axis in
  // turn); for float points, on the lanes of one 16-byte vector (the index's lane is ignored).
  static void bounds(const Point* pts, uint64_t n, P* lo, P* hi) {
    if constexpr (std::is_same_v<P, float> && sizeof(Point) == 16) {
      typedef float Lanes __attribute__((vector_size(16)));
      Lanes mn = {std::numeric_limits<float>::max(), std::numeric_limits<float>::max(), std::numeric_limits<float>::max(), 0};
      Lanes mx = -mn;
      for (uint64_t i = 0; i < n; ++i) {
        Lanes v;
        std::memcpy(&v, &pts[i], sizeof v);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
      }
      for (int a = 0; a < 3; ++a) lo[a] = mn[a], hi[a] = mx[a];
    } else {
      for (int a = 0; a < 3; ++a) lo[a] = std::numeric_limits<P>::max(), hi[a] = std::numeric_limits<P>::lowest();
      for (uint64_t i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], pts[i].c[a]), hi[a] = std::max(hi[a], pts[i].c[a]);
    }
  }

  // The value of rank n/2 of the points' coordinate `axis`, exactly, and how many values
  // are below it and equal to it. A histogram of the values over the node's extent [lo, hi]
  // on that axis finds the bin of rank n/2, and the selection runs on that bin's values
  // alone. A value's bin is a non-decreasing function of it (a subtraction, a multiplication
  // by a positive number, clamping and truncation all are), so a lower bin holds only smaller
  // values and a higher one only larger: the median's rank in its bin, and the values below
  // and equal to it, follow from the counts. Data crowded into one bin only makes the
  // selection larger.
  P select_median(const Point* pts, uint64_t n, int axis, P lo, P hi, uint64_t& less, uint64_t& equal) {
    const uint64_t want = n / 2;
    uint64_t below = 0, kept = n;
    if (n >= kHistogramMin) {
      // About 32 values a bin when they are spread evenly.
      const uint32_t bins = uint32_t(std::clamp<uint64_t>(std::bit_floor(n / 32), 16, kMaxBins));
      P scale = hi > lo ? P(bins) / (hi - lo) : P(0);
      if (!(scale <= std::numeric_limits<P>::max())) scale = 0;  // an extent too small to divide by: one bin
      const P last = P(bins - 1);
      uint32_t count[kMaxBins];
      std::fill_n(count, bins, 0u);
      uint64_t first = 0;
#if defined(__SSE2__)
      if constexpr (std::is_same_v<P, float> && sizeof(Point) == 16) {  // four points a step, as below
        const float* x = &pts[0].c[axis];
        const __m128 at_lo = _mm_set1_ps(lo), by = _mm_set1_ps(scale), top = _mm_set1_ps(last), zero = _mm_setzero_ps();
        alignas(16) int32_t b[4];
        for (; first + 4 <= n; first += 4) {
          const float* q = x + 4 * first;
          __m128 f = _mm_mul_ps(_mm_sub_ps(_mm_setr_ps(q[0], q[4], q[8], q[12]), at_lo), by);
          f = _mm_min_ps(_mm_max_ps(f, zero), top);  // maxps(f, 0) is f > 0 ? f : 0, minps likewise
          const __m128i bins4 = _mm_cvttps_epi32(f);
          _mm_storel_epi64(reinterpret_cast<__m128i*>(bin_ + first), _mm_packs_epi32(bins4, bins4));
          _mm_store_si128(reinterpret_cast<__m128i*>(b), bins4);
          ++count[b[0]], ++count[b[1]], ++count[b[2]], ++count[b[3]];
        }
      }
#endif
      for (uint64_t i = first; i < n; ++i) {
        P f = (pts[i].c[axis] - lo) * scale;
        f = f > P(0) ? f : P(0);
        f = f < last ? f : last;
        const uint32_t b = uint32_t(f);
        bin_[i] = uint16_t(b);
        ++count[b];
      }
      uint32_t b = 0;
      for (; below + count[b] <= want; ++b) below += count[b];
      kept = 0;
      uint64_t i = 0;
#if defined(__SSE2__)
      // Eight bins a compare; the median's bin is rarely met.
      const __m128i at = _mm_set1_epi16(int16_t(b));
      for (; i + 8 <= n; i += 8) {
        uint32_t met = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bin_ + i)), at)));
        for (; met; met &= met - 1, met &= met - 1) select_[kept++] = pts[i + (std::countr_zero(met) >> 1)].c[axis];
      }
#endif
      for (; i < n; ++i)
        if (bin_[i] == b) select_[kept++] = pts[i].c[axis];
    } else {
      for (uint64_t i = 0; i < n; ++i) select_[i] = pts[i].c[axis];
    }
    std::nth_element(select_, select_ + (want - below), select_ + kept);
    const P median = select_[want - below];
    less = below, equal = 0;
    for (uint64_t i = 0; i < kept; ++i) less += select_[i] < median, equal += select_[i] == median;
    return median;
  }

  void split(uint64_t lo, uint64_t hi, int s, const P* blo, const P* bhi) {
    const uint64_t n = hi - lo;
    const uint32_t id = uint32_t(nodes.size());
    nodes.push_back(TreeNode{});
    const Point* in = points_[s] + lo;
    if (n <= opt_->leaf_size) {
      nodes[id].own_count = uint32_t(n);
      if (opt_->pieces_in_order)
        append_pieces(uint32_t(n), opt_->lod_count, [&](uint32_t i) { return row(in[i].index); }, own_at_,
                      scratch().piece_of);
      else
        append_stratified(uint32_t(n), [&](uint32_t i) { return row(in[i].index); }, own_at_, own_at_ + n < own_end_);
      own_at_ += n;
      return;
    }
    int axis = 0;
    for (int a = 1; a < 3; ++a)
      if (bhi[a] - blo[a] > bhi[axis] - blo[axis]) axis = a;
    uint64_t less, equal;
    const P median = select_median(in, n, axis, blo[axis], bhi[axis], less, equal);

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
    uint64_t ties = left - std::min(left, less);  // ties: those of the median that go left
    Point* to_left_at = out;
    Point* to_right_at = out + left;
    auto partition = [&](auto&& to_left_of) {
      for (uint64_t begin = 0, j = 0; j <= k; begin = picks[j] + 1, ++j) {
        for (uint64_t i = begin; i < picks[j]; ++i) {
          const bool to_left = to_left_of(in[i]);  // the coordinate read where it lies, not from a copy
          *(to_left ? to_left_at : to_right_at) = in[i];
          to_left_at += to_left;
          to_right_at += !to_left;
        }
        if (j < k) *own_at_++ = row(in[picks[j]].index);
      }
    };
    if (by_count) {
      partition([&](const Point&) { return to_left_at < out + left; });
    } else if (ties == 0) {  // the usual cases: no tie goes left, or all do
      partition([&](const Point& p) { return p.c[axis] < median; });
    } else if (ties == equal) {
      partition([&](const Point& p) { return p.c[axis] <= median; });
    } else {  // the first `ties` ties go left
      partition([&](const Point& p) {
        const P x = p.c[axis];
        const bool eq = x == median;
        const bool to_left = (x < median) | (eq & (ties > 0));
        ties -= uint64_t(eq & to_left);
        return to_left;
      });
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
