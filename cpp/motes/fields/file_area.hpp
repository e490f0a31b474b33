// The field file's header area (docs/format.md §14.2) and what the writer and the reader of
// fields/file.hpp share about it; private to fields/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "motes/container/container.hpp"
#include "motes/fields/file.hpp"

namespace motes::fields {

#pragma pack(push, 1)
// The field file's part of the container header (docs/format.md §14.2).
struct FieldArea {
  uint64_t sample_count;  // dims[0] * dims[1] * dims[2]
  uint64_t dims[3];       // x, y, z
  uint32_t ndim;
  uint32_t component_count;
  uint8_t dtype;
  uint8_t centering;
  uint8_t block_bits;
  uint8_t maxh;
  uint32_t part_index;   // 1.1, parts: this file's run of blocks; all zero in a whole field's file
  uint32_t part_count;
  uint64_t first_block;
  uint64_t block_count;
  uint8_t zero[124];
};
#pragma pack(pop)
static_assert(sizeof(FieldArea) == container::kKindAreaBytes);

// A component's range from its blocks' minima and maxima (blocks holding no valid sample,
// min > max, left out; 0, 0 when none holds one).
inline ComponentRange range_of_blocks(const std::vector<double>& lo, const std::vector<double>& hi) {
  ComponentRange r;
  bool any = false;
  for (size_t b = 0; b < lo.size(); ++b)
    if (lo[b] <= hi[b]) {
      r.min = any ? std::min(r.min, lo[b]) : lo[b];
      r.max = any ? std::max(r.max, hi[b]) : hi[b];
      any = true;
    }
  return r;
}

}  // namespace motes::fields
