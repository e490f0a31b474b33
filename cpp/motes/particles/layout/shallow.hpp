// The top of the layout's tree (docs/format.md section 10.2), internal to the builder:
// Morton codes, and a binary radix tree over their bits down to regions of at most
// treelet_size points, which become treelets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/particles/layout/builder.hpp"
#include "motes/particles/layout/treelet.hpp"

namespace motes::shallow {

// Spreads the low 21 bits of v so that bit k lands on bit 3k.
constexpr uint64_t spread_bits_3d(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

constexpr int kMortonBits = 21;

// spread_bits_3d of every 11-bit value: the top 32 bits of a code hold 11, 11 and 10 bits of
// the three axes' cells, spread by one load each.
struct SpreadTable {
  uint32_t bits[1u << 11];
  constexpr SpreadTable() : bits() {
    for (uint32_t v = 0; v < (1u << 11); ++v) bits[v] = uint32_t(spread_bits_3d(v));
  }
};
inline constexpr SpreadTable kSpread11{};

// The 63-bit Morton code of a position on the 2^21 grid of each axis' bounds, and its top
// 32 bits (what the sort below 2^32 rows orders by).
struct MortonCoder {
  double lo[3], scale[3];
  explicit MortonCoder(const Box& b) {
    for (int a = 0; a < 3; ++a) {
      lo[a] = b.lo[a];
      scale[a] = b.hi[a] > b.lo[a] ? double((1u << kMortonBits) - 1) / (b.hi[a] - b.lo[a]) : 0.0;
    }
  }
  // Axis a's bits of v's code. The grid cell converts through int64, which x86-64 does in
  // one instruction (to uint64 it takes a branch): the same number, as 0 <= cell < 2^21
  // (an infinite scale, from bounds a denormal apart, gives cell 0 either way).
  uint64_t cell(int a, double v) const { return uint64_t(int64_t((v - lo[a]) * scale[a])) & ((1u << kMortonBits) - 1); }
  uint64_t axis_bits(int a, double v) const { return spread_bits_3d(cell(a, v)) << (2 - a); }
  // The code's bits 31-62: cell bit k of axis a is code bit 3k + 2 - a, so x's bits 10-20
  // land on bits 1, 4, ..., 31, y's bits 10-20 on 0, 3, ..., 30 and z's bits 11-20 on 2, 5, ..., 29.
  template <class P>
  uint32_t top(const P (&c)[3]) const {
    return kSpread11.bits[cell(0, double(c[0])) >> 10] << 1 | kSpread11.bits[cell(1, double(c[1])) >> 10] |
           kSpread11.bits[cell(2, double(c[2])) >> 11] << 2;
  }
};

// What the shallow tree reads of the sorted items: their code bits (the top Morton bit at
// bit 63; bits below kLowest are not code) and their input row. Below 2^32 rows the items
// are the points themselves (radix_sort.hpp's bucket_sort), from 2^32 rows on the whole
// code and the row.
template <class P>
struct PointCodes {
  static constexpr int kLowest = 32;
  MortonCoder coder;
  uint64_t bits(const treelet::Point<P>& p) const { return uint64_t(coder.top(p.c)) << 32; }
  uint64_t row(const treelet::Point<P>& p) const { return p.index; }
};
struct KeyedRow {
  uint64_t code;  // 63-bit Morton code
  uint64_t row;
  bool operator<(const KeyedRow& o) const { return code < o.code || (code == o.code && row < o.row); }
};
struct KeyedRowCodes {
  static constexpr int kLowest = 1;
  uint64_t bits(const KeyedRow& k) const { return k.code << 1; }
  uint64_t row(const KeyedRow& k) const { return k.row; }
};

struct ShallowNode {
  bool treelet;
  uint64_t a, b;                   // range in the sorted array
  std::vector<uint64_t> lod_rows;  // inner only
  int left = -1, right = -1;
  size_t task = 0;                 // treelet only
};

// The top of the tree: a binary radix tree over Morton code bits (splits at
// spatial midpoints, found by binary search in the sorted items), down to
// regions of at most treelet_size points.
template <class Key, class Codes>
class ShallowBuilder {
 public:
  std::vector<ShallowNode> nodes;
  std::vector<size_t> tasks;    // shallow node index of each treelet
  std::vector<uint64_t> taken;  // sorted positions already used as LOD points

  ShallowBuilder(const Key* keys, const LayoutOptions& o, Codes codes) : keys_(keys), opt_(o), codes_(codes) {}

  int build(uint64_t a, uint64_t b, int bit) {
    uint64_t n = (b - a) - count_taken(a, b);
    while (bit >= Codes::kLowest && n > opt_.treelet_size) {
      uint64_t mask = uint64_t(1) << bit;
      const Key* it = std::partition_point(keys_ + a, keys_ + b, [&](const Key& k) { return (codes_.bits(k) & mask) == 0; });
      uint64_t m = uint64_t(it - keys_);
      if (m == a || m == b) {
        --bit;
        continue;
      }
      int id = int(nodes.size());
      nodes.push_back(ShallowNode{false, a, b, {}, -1, -1, 0});
      pick_lod(a, b, n, nodes[size_t(id)].lod_rows);
      int l = build(a, m, bit - 1);
      int r = build(m, b, bit - 1);
      nodes[size_t(id)].left = l;
      nodes[size_t(id)].right = r;
      return id;
    }
    int id = int(nodes.size());
    nodes.push_back(ShallowNode{true, a, b, {}, -1, -1, tasks.size()});
    tasks.push_back(size_t(id));
    return id;
  }

  // Calls f(first, count) for each run of items of a treelet's region, in order, between
  // those taken as LOD points.
  template <class F>
  void treelet_runs(const ShallowNode& s, F&& f) const {
    uint64_t p = s.a;
    for (auto t = std::lower_bound(taken.begin(), taken.end(), s.a); t != taken.end() && *t < s.b; p = *t++ + 1)
      if (*t > p) f(keys_ + p, *t - p);
    if (p < s.b) f(keys_ + p, s.b - p);
  }
  // Calls f(item) for the items of a treelet's region, in order, but those taken as LOD points.
  template <class F>
  void treelet_items(const ShallowNode& s, F&& f) const {
    treelet_runs(s, [&](const Key* first, uint64_t count) {
      for (uint64_t i = 0; i < count; ++i) f(first[i]);
    });
  }
  uint64_t treelet_count(const ShallowNode& s) const { return (s.b - s.a) - count_taken(s.a, s.b); }

 private:
  const Key* keys_;
  const LayoutOptions& opt_;
  Codes codes_;

  uint64_t count_taken(uint64_t a, uint64_t b) const {
    return uint64_t(std::lower_bound(taken.begin(), taken.end(), b) - std::lower_bound(taken.begin(), taken.end(), a));
  }
  bool is_taken(uint64_t p) const { return std::binary_search(taken.begin(), taken.end(), p); }

  void pick_lod(uint64_t a, uint64_t b, uint64_t n_free, std::vector<uint64_t>& out) {
    uint32_t k = opt_.lod_count;
    uint64_t span = b - a;
    for (uint32_t j = 0; j < k && out.size() < n_free; ++j) {
      uint64_t p = a + (2 * uint64_t(j) + 1) * span / (2 * k);
      while (is_taken(p)) p = (p + 1 < b) ? p + 1 : a;  // terminates: n_free > picked
      taken.insert(std::upper_bound(taken.begin(), taken.end(), p), p);
      out.push_back(codes_.row(keys_[p]));
    }
  }
};

}  // namespace motes::shallow
