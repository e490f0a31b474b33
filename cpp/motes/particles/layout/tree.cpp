#include "motes/particles/layout/tree.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <mutex>
#include <string>

namespace motes {

namespace {
constexpr uint32_t kMaxDepth = 256;  // a real tree over 2^64 points is < 140 deep

struct ShapeChecker {
  const std::vector<TreeNode>& nodes;
  Levels& out;
  uint32_t pos = 0;
  uint32_t deepest = 0;

  void visit(uint32_t depth) {
    if (depth > kMaxDepth) throw FormatError("node tree deeper than " + std::to_string(kMaxDepth) + " levels");
    if (pos >= nodes.size()) throw FormatError("node tree is truncated: node " + std::to_string(pos) + " is missing");
    uint32_t i = pos++;
    out.depth[i] = uint16_t(depth);
    deepest = std::max(deepest, depth);
    if (!nodes[i].is_leaf()) {
      visit(depth + 1);
      if (nodes[i].right != pos)
        throw FormatError("node " + std::to_string(i) + " names right child " + std::to_string(nodes[i].right) +
                          " but its left subtree ends at " + std::to_string(pos));
      visit(depth + 1);
    }
    out.subtree_end[i] = pos;
  }
};
}  // namespace

struct Levels::Lazy {
  std::once_flag once;
  LevelRuns runs;
};

namespace {
constexpr uint32_t kMaxPieces = 34;  // pieces of a leaf, at most, plus one: classes (d, J) are d * 34 + J

// Phase 1: the shape (FormatError naming what is wrong), depths, subtree extents and counts.
// Returns the depth of the deepest node.
uint32_t derive_shape(const std::vector<TreeNode>& nodes, uint64_t particle_count, Levels& lv) {
  const size_t n = nodes.size();
  lv.depth.resize(n);
  lv.subtree_end.resize(n);
  ShapeChecker checker{nodes, lv};
  checker.visit(0);
  if (checker.pos != n)
    throw FormatError("node tree has " + std::to_string(n - checker.pos) + " nodes not reachable from the root");
  lv.subtree_count.resize(n);
  for (size_t k = n; k-- > 0;) {
    uint64_t c = nodes[k].own_count;
    if (!nodes[k].is_leaf()) c += lv.subtree_count[k + 1] + lv.subtree_count[nodes[k].right];
    lv.subtree_count[k] = c;
  }
  if (lv.subtree_count[0] != particle_count)
    throw FormatError("nodes hold " + std::to_string(lv.subtree_count[0]) + " points but the header says " +
                      std::to_string(particle_count));
  return checker.deepest;
}

// What phase 2 counts: points per level (untrimmed), per region `stride` levels from S on,
// and the runs.
struct LevelCounts {
  std::vector<uint64_t> totals, region_counts;
  size_t stride = 0;
  uint64_t runs = 0;
};

// Phase 2: points per level, and per region (detail level S > 0, region depth R) from S on;
// the region roots into lv.region_root. A node's pieces lie at most 33 levels below its depth
// (own_count < 2^32, each piece twice the last), so the totals are sized once. The roots, in
// preorder, are the nodes at depth R and the leaves above R; every piece on a level >= S lies
// in the subtree of exactly one of them (an inner node above R has its only piece on its own
// level, < S).
//
// A leaf is not walked piece by piece (most of an open's time at 16M particles): its pieces
// but the last have the sizes that its depth d and piece count J fix (piece_begin), so leaves
// are counted per class (d, J) and the classes expanded once (per region: those the region
// holds); only the last piece's size is added per leaf.
LevelCounts count_levels(const std::vector<TreeNode>& nodes, uint32_t lod_count, uint32_t deepest, uint32_t s,
                         uint32_t region_depth, Levels& lv) {
  LevelCounts out;
  out.totals.assign(size_t(deepest) + kMaxPieces, 0);
  out.stride = s ? out.totals.size() - std::min<size_t>(s, out.totals.size()) : 0;
  std::vector<uint64_t>& totals = out.totals;
  std::vector<uint64_t>& region_counts = out.region_counts;
  auto full_piece = [&](uint32_t j) { return piece_begin(j + 1, lod_count) - piece_begin(j, lod_count); };
  std::vector<uint64_t> leaves(size_t(deepest + 1) * kMaxPieces, 0);    // per class (d, J): leaves
  std::vector<uint64_t> in_region(s ? leaves.size() : 0, 0);            // the same, of the region
  std::vector<uint32_t> classes;                                        // the region's classes met
  uint32_t region_end = 0;
  size_t row = 0;
  auto close_region = [&] {  // the region's full pieces, from its classes
    for (uint32_t k : classes) {
      const uint32_t d = k / kMaxPieces, pieces = k % kMaxPieces;
      for (uint32_t j = 0; j + 1 < pieces; ++j)
        if (d + j >= s) region_counts[row + d + j - s] += in_region[k] * full_piece(j);
      in_region[k] = 0;
    }
    classes.clear();
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const uint32_t d = lv.depth[i];
    if (s && i >= region_end && (d == region_depth || (nodes[i].is_leaf() && d < region_depth))) {
      close_region();
      lv.region_root.push_back(uint32_t(i));
      region_end = lv.subtree_end[i];
      row = region_counts.size();
      region_counts.resize(row + out.stride, 0);
    }
    const uint64_t c = nodes[i].own_count;
    if (c == 0) continue;
    const bool regional = s && i < region_end;
    if (!nodes[i].is_leaf()) {  // one piece, on its own level
      totals[d] += c;
      ++out.runs;
      if (regional && d >= s) region_counts[row + d - s] += c;
      continue;
    }
    const uint32_t pieces = piece_count(c, lod_count);
    const uint64_t last = c - piece_begin(pieces - 1, lod_count);
    const uint32_t k = d * kMaxPieces + pieces;
    ++leaves[k];
    totals[d + pieces - 1] += last;
    out.runs += pieces;
    if (regional) {
      if (in_region[k]++ == 0) classes.push_back(k);
      if (d + pieces - 1 >= s) region_counts[row + d + pieces - 1 - s] += last;
    }
  }
  if (s) close_region();
  for (uint32_t k = 0; k < leaves.size(); ++k)
    if (leaves[k])
      for (uint32_t j = 0; j + 1 < k % kMaxPieces; ++j) totals[k / kMaxPieces + j] += leaves[k] * full_piece(j);
  return out;
}

// Phase 3: where each region's levels start: the regions one after the other from the
// prefix's end.
void place_regions(const LevelCounts& counts, Levels& lv) {
  const uint32_t s = lv.detail_level, w = lv.level_count() - s;
  lv.region_at.reserve(lv.region_root.size() * (w + 1));
  uint64_t at = lv.level_start[s];
  for (size_t r = 0; r < lv.region_root.size(); ++r) {
    for (uint32_t j = 0; j < w; ++j) {
      lv.region_at.push_back(at);
      at += counts.region_counts[r * counts.stride + j];
    }
    lv.region_at.push_back(at);
  }
}
}  // namespace

void check_regions(uint32_t detail_level, uint32_t region_depth, uint32_t level_count) {
  if (region_depth > detail_level)
    throw FormatError(detail_level ? "region depth " + std::to_string(region_depth) + " is below the detail level " +
                                         std::to_string(detail_level)
                                   : "region depth " + std::to_string(region_depth) + " without a detail level");
  if (detail_level > 0 && detail_level >= level_count)
    throw FormatError("detail level " + std::to_string(detail_level) + " is not below the level count " +
                      std::to_string(level_count));
}

Levels compute_levels(const std::vector<TreeNode>& nodes, uint32_t lod_count, uint64_t particle_count,
                      uint32_t detail_level, uint32_t region_depth) {
  if (nodes.empty()) throw FormatError("node tree is empty (a file has at least a root node)");
  if (nodes.size() > UINT32_MAX - 1) throw FormatError("too many nodes");
  if (lod_count == 0) throw FormatError("LOD count is 0 (must be at least 1)");
  Levels lv;
  const uint32_t deepest = derive_shape(nodes, particle_count, lv);
  LevelCounts counts = count_levels(nodes, lod_count, deepest, detail_level, region_depth, lv);
  std::vector<uint64_t>& totals = counts.totals;
  while (!totals.empty() && totals.back() == 0) totals.pop_back();
  lv.level_start.assign(totals.size() + 1, 0);
  for (size_t l = 0; l < totals.size(); ++l) lv.level_start[l + 1] = lv.level_start[l] + totals[l];
  lv.run_count = counts.runs;
  lv.lod_count = lod_count;
  check_regions(detail_level, region_depth, lv.level_count());
  if (detail_level > 0) {
    lv.detail_level = detail_level;
    lv.region_depth = region_depth;
    place_regions(counts, lv);
  }
  lv.lazy = std::make_shared<Levels::Lazy>();
  return lv;
}

const LevelRuns& Levels::runs(const std::vector<TreeNode>& nodes) const {
  Lazy& z = *lazy;
  std::call_once(z.once, [&] {
    // Each level's runs in preorder, from the level's start: one pass over the pieces.
    const size_t n = nodes.size();
    if (n != depth.size()) throw Error("level runs asked of other nodes than the levels were derived from");
    // Levels >= S take their cursor from the region of the node (the level's start when S = 0).
    std::vector<uint64_t> cursor(level_start.begin(), level_start.end() - 1);
    const uint32_t s = regional() ? detail_level : level_count(), w = level_count() - s;
    LevelRuns& out = z.runs;
    out.runs.reserve(run_count);
    out.run_begin.resize(n + 1);
    size_t next_region = 0;
    for (size_t i = 0; i < n; ++i) {
      if (next_region < region_root.size() && region_root[next_region] == i) {
        std::copy_n(region_at.begin() + next_region * (w + 1), w, cursor.begin() + s);
        ++next_region;
      }
      out.run_begin[i] = uint32_t(out.runs.size());
      for_each_piece(nodes[i], lod_count, [&](uint32_t j, uint32_t, uint32_t count) {
        const uint16_t level = uint16_t(depth[i] + j);
        out.runs.push_back(Run{cursor[level], count, uint32_t(i), level});
        cursor[level] += count;
      });
    }
    out.run_begin[n] = uint32_t(out.runs.size());
  });
  return z.runs;
}

std::vector<PosRange> Levels::positions(uint32_t b, uint32_t e) const {
  std::vector<PosRange> out;
  e = std::min(e, level_count());
  if (b >= e) return out;
  auto add = [&](uint64_t x, uint64_t y) {
    if (x == y) return;
    if (!out.empty() && out.back().end == x) out.back().end = y;
    else out.push_back({x, y});
  };
  const uint32_t s = regional() ? detail_level : level_count(), w = level_count() - s;
  if (b < s) add(level_start[b], level_start[std::min(e, s)]);
  if (e > s) {
    const uint32_t jb = std::max(b, s) - s, je = e - s;
    for (size_t r = 0; r < region_root.size(); ++r) add(region_at[r * (w + 1) + jb], region_at[r * (w + 1) + je]);
  }
  return out;
}

uint32_t choose_detail_level(const Levels& lv, double prefix_share) {
  const uint64_t n = lv.level_start.back();
  for (uint32_t s = 1; s < lv.level_count(); ++s)
    if (double(lv.level_start[s]) >= prefix_share * double(n)) return s;
  return 0;
}

uint32_t choose_region_depth(const Levels& lv, uint32_t detail_level, uint64_t region_points) {
  uint32_t r = 0;
  for (uint64_t n = lv.level_start.back(); r < detail_level && n / 2 >= std::max<uint64_t>(region_points, 1); n /= 2) ++r;
  return r;
}

void check_quality(double q) {
  if (!(q >= 0.0 && q <= 1.0)) throw UsageError("quality must be a number in [0, 1], got " + number_text(q));
}

uint32_t levels_for_quality(double q, uint32_t level_count) {
  check_quality(q);
  if (q >= 1.0) return level_count;
  return std::min<uint32_t>(level_count, uint32_t(std::ceil(q * level_count)));
}

}  // namespace motes
