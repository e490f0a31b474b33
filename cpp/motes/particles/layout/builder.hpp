// Builds the multiresolution layout of one particle set in memory:
// Morton sort -> shallow radix tree -> k-d treelets with LOD points -> file order.
#pragma once

#include <cstdint>
#include <vector>

#include "motes/particles/layout/tree.hpp"
#include "motes/core/types.hpp"
#include "motes/core/memory.hpp"
#include "motes/core/phases.hpp"

namespace motes {

struct LayoutOptions {
  uint32_t leaf_size = 512;       // max points in a leaf
  uint32_t lod_count = 8;         // LOD points per inner node
  uint32_t treelet_size = 1u << 16;  // the shallow tree stops splitting below this many points
  // The share of the points stored level by level in the file's coarse prefix; the finer
  // levels are stored region by region (docs/format.md section 5.4). 1: every level in one range.
  double prefix_share = 1.0 / 64;
  // Points per region, about: the regions are the subtrees at the depth that gives them (at
  // most the detail level's depth). Larger regions read previews past the prefix in fewer,
  // longer runs; smaller ones read a box's surroundings less.
  uint64_t region_points = 1u << 16;
  unsigned threads = 0;           // 0 = all cores
  // A leaf's pieces (docs/format.md section 5.3) each in space-filling order, so that points
  // side by side in the file are near in space (the same pieces, the same reading, other
  // bytes). Positions then code about 10% smaller by differences than as packed words, so the
  // writer stores them so and tracking decodes their blocks (bench/README.md, sizes): off by
  // default, every prefix of a leaf's own points an evenly spread sample of it.
  bool pieces_in_order = false;
};

struct Layout {
  std::vector<TreeNode> nodes;  // preorder
  Levels levels;
  BigVector<uint64_t> order;  // file position -> input row
  Box bounds;                   // of the positions
  Phases phases;                // wall time of each step of the build
};

// Validates options (UsageError naming the bad one).
void check_layout_options(const LayoutOptions& options);

// The smallest and largest value of a position column (f32 or f64), on `threads` threads;
// UsageError naming the column (`axis`) and the first row of a NaN or infinite value.
void position_bounds(const ColumnView& c, const char* axis, unsigned threads, double& lo, double& hi);

// positions: three columns x, y, z of equal length (f32 or f64, any stride).
// Throws UsageError for NaN/inf positions, naming the column and row.
Layout build_layout(const ColumnView& x, const ColumnView& y, const ColumnView& z, const LayoutOptions& options);

}  // namespace motes
