// The multiresolution tree shared by the writer and the reader: nodes in
// preorder, and the rule that places each node's own points on levels.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "motes/core/types.hpp"

namespace motes {

// One k-d tree node, stored in preorder. The left child of an inner node is
// the next node; `right` is the index of its right child (0 marks a leaf,
// since the root can never be a right child).
struct TreeNode {
  uint32_t right = 0;
  uint32_t own_count = 0;  // LOD points of an inner node, all points of a leaf
  bool is_leaf() const { return right == 0; }
};

// A contiguous run of one node's own points inside one level of the file order.
struct Run {
  uint64_t start;   // position in file order
  uint32_t count;
  uint32_t node;
  uint16_t level;
};

// The runs of every node, in node order.
struct LevelRuns {
  std::vector<uint32_t> run_begin;  // per node + 1: its runs are runs[run_begin[i], run_begin[i+1])
  std::vector<Run> runs;
};

// A range of file positions [begin, end).
struct PosRange {
  uint64_t begin, end;
};

// Of sorted, disjoint `ranges`: the first that ends after `pos` (end() when none). It holds pos
// when its begin <= pos (holding() says so).
inline std::vector<PosRange>::const_iterator range_after(const std::vector<PosRange>& ranges, uint64_t pos) {
  return std::upper_bound(ranges.begin(), ranges.end(), pos, [](uint64_t p, const PosRange& g) { return p < g.end; });
}
inline bool holding(const std::vector<PosRange>& ranges, std::vector<PosRange>::const_iterator it, uint64_t pos) {
  return it != ranges.end() && it->begin <= pos;
}

// Everything derived from (nodes, lod_count, detail_level): depths, subtree extents, level
// sizes, regions, and the runs of every node. The runs are derived on first use (runs(), thread-safe): they
// are most of an open's work (a 24-byte run per piece of every node: 8.7 MB at 16M
// particles), and a query answered through a value index, or a count, never reads them.
struct Levels {
  std::vector<uint16_t> depth;          // per node
  std::vector<uint32_t> subtree_end;    // per node: one past its last descendant (preorder)
  std::vector<uint64_t> subtree_count;  // per node: points in its subtree
  // Per level + 1: the points on levels below l. Levels below the detail level S are stored
  // one after the other, so level l < S is file positions [level_start[l], level_start[l+1]).
  std::vector<uint64_t> level_start;
  // Levels from S on (docs/format.md section 5.4) are stored region by region: a region is
  // the subtree of a node at the region depth R <= S, or of a leaf above R, and holds its
  // subtree's points on levels >= S, level by level. S = 0 is the level-major order.
  uint32_t detail_level = 0;
  uint32_t region_depth = 0;
  std::vector<uint32_t> region_root;    // per region: its root node, in preorder
  // Per region, W + 1 positions (W = level_count() - S): where its level S + j starts, then its end.
  std::vector<uint64_t> region_at;
  uint64_t run_count = 0;               // runs of all nodes (runs(nodes).runs.size())
  uint32_t lod_count = 0;
  uint32_t level_count() const { return uint32_t(level_start.size() - 1); }
  // Whether some level is stored region by region (0 < S < level count).
  bool regional() const { return detail_level > 0 && detail_level < level_count(); }
  // The file positions of levels [b, e), in file order, adjacent ranges joined: one range when
  // every level read is below S or the read ends at the last level and starts at or above S's start.
  std::vector<PosRange> positions(uint32_t b, uint32_t e) const;
  // The runs, from `nodes`: the nodes these levels were derived from.
  const LevelRuns& runs(const std::vector<TreeNode>& nodes) const;

  struct Lazy;
  std::shared_ptr<Lazy> lazy;
};

// A leaf's pieces: piece j holds own indices [piece_begin(j), piece_begin(j + 1)) (capped at
// own_count), on the leaf's depth + j: 0, K, 2K, 4K, ... (K * 2^(j-1) for j >= 1).
inline uint64_t piece_begin(uint32_t j, uint32_t lod_count) { return j == 0 ? 0 : uint64_t(lod_count) << (j - 1); }
// The pieces of a leaf of c > 0 points: the smallest J >= 1 with K * 2^(J-1) >= c. No
// division: K * 2^(g-1) < c for the g below, so the search starts at g and takes at most two steps.
inline uint32_t piece_count(uint64_t c, uint32_t lod_count) {
  if (c <= lod_count) return 1;
  uint32_t e = uint32_t(std::max(0, int(std::bit_width(c - 1)) - int(std::bit_width(uint64_t(lod_count)))));
  while ((uint64_t(lod_count) << e) < c) ++e;
  return 1 + e;
}

// Point counts of a node's own points per level, relative to its depth:
// an inner node puts all on its own level; a leaf continues the LOD pattern
// of a virtual subtree below it: K, K, 2K, 4K, ... points on successive levels.
// Calls f(level_offset, first_own_index, count) for each nonempty piece.
template <class F>
void for_each_piece(const TreeNode& node, uint32_t lod_count, F&& f) {
  if (!node.is_leaf()) {
    if (node.own_count) f(0u, 0u, node.own_count);
    return;
  }
  uint64_t begin = 0;
  uint64_t end = lod_count;
  for (uint32_t j = 0; begin < node.own_count; ++j) {
    uint64_t e = std::min<uint64_t>(end, node.own_count);
    f(j, uint32_t(begin), uint32_t(e - begin));
    begin = e;
    end *= 2;
  }
}

// FormatError unless a detail level and region depth fit a tree of `level_count` levels
// (docs/format.md §5.4): a region depth at most the detail level, and only with one; a
// detail level below the level count. Checked at open from the header, and by compute_levels.
void check_regions(uint32_t detail_level, uint32_t region_depth, uint32_t level_count);

// Validates the tree shape and the detail level (throws FormatError naming the problem) and
// derives Levels.
Levels compute_levels(const std::vector<TreeNode>& nodes, uint32_t lod_count, uint64_t particle_count,
                      uint32_t detail_level = 0, uint32_t region_depth = 0);

// The writer's detail level: the first level whose start holds at least `prefix_share` of the
// points, or 0 (level-major) when that leaves no level below it or none at or after it.
uint32_t choose_detail_level(const Levels& levels, double prefix_share);
// The writer's region depth for detail level S: the depth whose subtrees hold about
// `region_points` points each (the tree halves them at every depth), at most S.
uint32_t choose_region_depth(const Levels& levels, uint32_t detail_level, uint64_t region_points);

// UsageError unless q is a quality: a number in [0, 1] (the one message, for levels_for_quality
// and a query's range alike, query/engine.hpp check_query_spec).
void check_quality(double q);
// Maps quality q in [0,1] to the number of levels read: 0 reads nothing, 1 reads all,
// linear in levels, hence logarithmic in points (each level holds about twice the last).
uint32_t levels_for_quality(double q, uint32_t level_count);

}  // namespace motes
