// The order of a leaf's own points (docs/format.md section 10.3): the pieces of the
// bit-reversal order, each in space-filling order (LayoutOptions::pieces_in_order), against
// the plain bit-reversal order the writer wrote before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "motes/particles/layout/builder.hpp"
#include "motes/particles/layout/tree.hpp"
#include "motes/particles/layout/treelet.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

std::vector<uint64_t> stratified(uint32_t n) {
  std::vector<uint64_t> out(n + 1);
  treelet::append_stratified(n, [](uint32_t i) { return uint64_t(i); }, out.data(), true);
  out.resize(n);
  return out;
}

std::vector<uint64_t> pieces(uint32_t n, uint32_t k) {
  std::vector<uint64_t> out(n);
  std::vector<uint8_t> scratch;
  treelet::append_pieces(n, k, [](uint32_t i) { return uint64_t(i) + 1000; }, out.data(), scratch);
  for (uint64_t& r : out) r -= 1000;  // row_of is applied: the rows are the leaf indices + 1000
  return out;
}

}  // namespace

// Every piece holds what the bit-reversal order puts there, ascending; the whole is a
// permutation of the leaf.
TEST(LeafOrder, EachPieceIsTheStratifiedPieceInOrder) {
  std::vector<uint32_t> sizes;
  for (uint32_t n = 0; n <= 700; ++n) sizes.push_back(n);
  for (uint32_t n : {4095u, 4096u, 4097u, 9000u}) sizes.push_back(n);  // past the table of reversals too
  for (uint32_t k : {1u, 2u, 3u, 4u, 8u, 13u})
    for (uint32_t n : sizes) {
      const std::vector<uint64_t> s = stratified(n), p = pieces(n, k);
      ASSERT_EQ(p.size(), n);
      for (uint32_t j = 0; n && j < piece_count(n, k); ++j) {
        const uint64_t b = piece_begin(j, k), e = std::min<uint64_t>(piece_begin(j + 1, k), n);
        std::vector<uint64_t> want(s.begin() + b, s.begin() + e);
        std::sort(want.begin(), want.end());
        ASSERT_EQ(std::vector<uint64_t>(p.begin() + b, p.begin() + e), want) << "n " << n << " K " << k << " piece " << j;
      }
    }
}

// The same tree and the same points in every piece of the file, whichever the order; with
// the pieces in order, the points of a leaf's piece are nearer their neighbours in the file.
TEST(LeafOrder, OnlyTheOrderWithinPiecesChanges) {
  const uint64_t n = 40000;
  auto cols = test::make_columns(n);
  auto v = cols.views();
  LayoutOptions o;
  o.leaf_size = 256;
  o.lod_count = 4;
  o.treelet_size = 4096;
  o.pieces_in_order = false;
  const Layout spread = build_layout(v[0], v[1], v[2], o);
  o.pieces_in_order = true;
  const Layout ordered = build_layout(v[0], v[1], v[2], o);
  ASSERT_EQ(spread.nodes.size(), ordered.nodes.size());
  for (size_t i = 0; i < spread.nodes.size(); ++i) {
    ASSERT_EQ(spread.nodes[i].right, ordered.nodes[i].right);
    ASSERT_EQ(spread.nodes[i].own_count, ordered.nodes[i].own_count);
  }
  const LevelRuns& runs = ordered.levels.runs(ordered.nodes);
  double step[2] = {0, 0};  // the distance between points side by side in a piece, summed
  for (const auto& r : runs.runs) {
    std::set<uint64_t> a, b;
    for (uint32_t t = 0; t < r.count; ++t) a.insert(spread.order[r.start + t]), b.insert(ordered.order[r.start + t]);
    ASSERT_EQ(a, b) << "run at " << r.start;
    for (uint32_t t = 1; t < r.count; ++t)
      for (int side = 0; side < 2; ++side) {
        const Layout& l = side ? ordered : spread;
        const uint64_t p = l.order[r.start + t - 1], q = l.order[r.start + t];
        step[side] += std::abs(double(cols.x[p]) - cols.x[q]) + std::abs(double(cols.y[p]) - cols.y[q]) +
                      std::abs(double(cols.z[p]) - cols.z[q]);
      }
  }
  EXPECT_LT(step[1], 0.7 * step[0]) << step[1] / step[0];  // 0.50 here
}
