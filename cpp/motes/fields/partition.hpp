// A field written in parallel (parallel/field_write.cpp): how its HZ blocks are cut into
// part files, one per aggregator, and how a rank's block of the grid maps onto them. Pure
// arithmetic, without MPI: tests/cpp/fields/test_field_partition.cpp checks it on its own.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "motes/fields/file.hpp"
#include "motes/fields/hz.hpp"

namespace motes::fields {

// The part files of a field: part k holds blocks [first_block[k], first_block[k + 1]) and is
// written by rank aggregator[k]. Parts are near-equal runs of blocks (every block holds
// per_block samples of the padded grid), about `target_bytes` of samples each, at most one
// per rank and block, aggregators spread evenly over the ranks.
struct FieldPartition {
  uint32_t parts = 1;
  uint64_t per_block = 0;
  std::vector<uint64_t> first_block;  // parts + 1
  std::vector<int> aggregator;        // parts
  // The part holding HZ index hz.
  uint32_t part_of(uint64_t hz) const;
  uint64_t first_sample(uint32_t part) const { return first_block[part] * per_block; }
  uint64_t samples(uint32_t part) const { return (first_block[part + 1] - first_block[part]) * per_block; }
};
FieldPartition plan_field_parts(const FieldSpec& spec, int block_bits, uint64_t target_bytes, int ranks);

// One rank's block of the grid: samples [offset, offset + count) along (x, y, z); a count of
// zero along any axis is a rank without a block.
struct GridBox {
  Dims offset{0, 0, 0}, count{0, 0, 0};
  uint64_t size() const { return count[0] * count[1] * count[2]; }
};
// UsageError naming the field and the ranks unless the ranks' boxes lie inside `dims` and
// cover it exactly once (no overlap, no hole).
void check_cover(const std::string& field, const Dims& dims, const std::vector<GridBox>& boxes);

// The samples of `box` that fall in each part, in the box's C order ((z, y, x) indexing,
// x fastest): counts[k] of them for part k, and for each, its offset in the part (HZ index
// minus the part's first sample) and its index in the rank's array: an array of
// `array_dims` samples (x, y, z) holding the box from sample `array_first` (ghost zones
// around it; the box itself when array_dims is all zero).
struct BoxRouting {
  std::vector<uint64_t> counts;              // per part
  std::vector<uint64_t> start;               // per part + 1: where its samples begin below
  std::vector<uint32_t> offset_in_part;      // per sample, grouped by part
  std::vector<uint64_t> index_in_array;      // per sample, grouped by part
};
BoxRouting route_box(const HzOrder& order, const FieldPartition& partition, const GridBox& box, unsigned threads = 0,
                     const Dims& array_dims = {0, 0, 0}, const Dims& array_first = {0, 0, 0});
// The same samples routed block by block (what the parallel writer uses): an HZ block of a
// level finer than the blocks' own bits is an aligned box of that level's lattice, its first
// point plus fixed offsets (BlockOffsets), so a block inside the rank's box is routed whole
// with no HZ index computed per sample; blocks across its edge (and block 0) sample by
// sample. The samples of each part come in HZ order (not the box's C order).
BoxRouting route_box_blocks(const HzOrder& order, const FieldPartition& partition, const GridBox& box,
                            unsigned threads = 0, const Dims& array_dims = {0, 0, 0}, const Dims& array_first = {0, 0, 0});

}  // namespace motes::fields
