#include "motes/fields/partition.hpp"

#include <algorithm>

#include "motes/core/errors.hpp"
#include "motes/core/threads.hpp"
#include "motes/core/types.hpp"

namespace motes::fields {

namespace {
constexpr const char* kAxes = "xyz";

std::string box_text(const GridBox& b) {
  std::string s = "[";
  for (int a = 0; a < 3; ++a)
    s += (a ? ", " : "") + std::to_string(b.offset[size_t(a)]) + ".." + std::to_string(b.offset[size_t(a)] + b.count[size_t(a)]);
  return s + ")";
}
}  // namespace

uint32_t FieldPartition::part_of(uint64_t hz) const {
  const uint64_t b = hz / per_block;
  return uint32_t(std::upper_bound(first_block.begin() + 1, first_block.end() - 1, b) - (first_block.begin() + 1));
}

FieldPartition plan_field_parts(const FieldSpec& spec, int block_bits, uint64_t target_bytes, int ranks) {
  if (ranks < 1) throw UsageError("a field's parts need at least one rank");
  FieldPartition p;
  p.per_block = field_block_samples(spec, block_bits);
  const uint64_t blocks = field_block_count(spec, block_bits);
  const uint64_t bytes = spec.sample_count() * dtype_size(spec.dtype) * spec.component_count();
  uint64_t parts = target_bytes ? (bytes + target_bytes - 1) / target_bytes : 1;
  // Offsets within a part are 32-bit: a part holds fewer than 2^32 samples of the padded grid.
  const uint64_t max_blocks = (uint64_t(1) << 32) / p.per_block;
  parts = std::max<uint64_t>(parts, (blocks + max_blocks - 1) / max_blocks);
  parts = std::min<uint64_t>({std::max<uint64_t>(parts, 1), blocks, uint64_t(ranks), kMaxParts});
  p.parts = uint32_t(parts);
  p.first_block = split_blocks(blocks, p.parts);
  for (uint32_t k = 0; k < p.parts; ++k) p.aggregator.push_back(int(uint64_t(k) * uint64_t(ranks) / p.parts));
  return p;
}

void check_cover(const std::string& field, const Dims& dims, const std::vector<GridBox>& boxes) {
  const std::string what = "field '" + field + "': ";
  uint64_t covered = 0;
  std::vector<size_t> given;
  for (size_t r = 0; r < boxes.size(); ++r) {
    const GridBox& b = boxes[r];
    if (b.size() == 0) continue;
    for (size_t a = 0; a < 3; ++a)
      if (b.offset[a] > dims[a] || b.count[a] > dims[a] - b.offset[a])
        throw UsageError(what + "rank " + std::to_string(r) + "'s block " + box_text(b) + " lies outside the grid along " + kAxes[a] +
                         " (" + std::to_string(dims[a]) + " samples)");
    covered += b.size();
    given.push_back(r);
  }
  // Overlaps: boxes sorted by their x offset; a box meets only those that start before it ends.
  std::sort(given.begin(), given.end(), [&](size_t i, size_t j) { return boxes[i].offset[0] < boxes[j].offset[0]; });
  for (size_t i = 0; i < given.size(); ++i) {
    const GridBox& a = boxes[given[i]];
    for (size_t j = i + 1; j < given.size(); ++j) {
      const GridBox& b = boxes[given[j]];
      if (b.offset[0] >= a.offset[0] + a.count[0]) break;
      bool meet = true;
      for (size_t k = 1; k < 3 && meet; ++k)
        meet = a.offset[k] < b.offset[k] + b.count[k] && b.offset[k] < a.offset[k] + a.count[k];
      if (meet) {
        const size_t r1 = std::min(given[i], given[j]), r2 = std::max(given[i], given[j]);
        throw UsageError(what + "the blocks of ranks " + std::to_string(r1) + " " + box_text(boxes[r1]) + " and " +
                         std::to_string(r2) + " " + box_text(boxes[r2]) + " overlap");
      }
    }
  }
  const uint64_t total = dims[0] * dims[1] * dims[2];
  if (covered != total)
    throw UsageError(what + "the ranks' blocks cover " + std::to_string(covered) + " of the grid's " + std::to_string(total) +
                     " samples: a hole (every sample must be in one block)");
}

BoxRouting route_box(const HzOrder& order, const FieldPartition& partition, const GridBox& box, unsigned threads,
                     const Dims& array_dims, const Dims& array_first) {
  const bool own = array_dims[0] == 0;  // the array is the box
  const Dims ad = own ? box.count : array_dims;
  const Dims af = own ? Dims{0, 0, 0} : array_first;
  BoxRouting out;
  const uint32_t parts = partition.parts;
  out.counts.assign(parts, 0);
  out.start.assign(parts + 1, 0);
  const uint64_t n = box.size();
  if (n == 0) return out;
  const uint64_t rows = box.count[1] * box.count[2];  // (y, z) rows of x samples
  threads = threads ? threads : default_threads();
  // Two passes over the rows, each in chunks of rows per thread: count, then place. A
  // row's samples keep the box's C order within each part.
  const uint64_t chunks = std::min<uint64_t>(rows, uint64_t(threads) * 8);
  std::vector<std::vector<uint64_t>> chunk_counts(chunks, std::vector<uint64_t>(parts, 0));
  auto row_range = [&](uint64_t k) { return std::pair<uint64_t, uint64_t>{k * rows / chunks, (k + 1) * rows / chunks}; };
  auto each = [&](uint64_t k, auto&& visit) {
    auto [r0, r1] = row_range(k);
    for (uint64_t r = r0; r < r1; ++r) {
      const uint64_t ly = r % box.count[1], lz = r / box.count[1];
      const uint64_t y = box.offset[1] + ly, z = box.offset[2] + lz;
      const uint64_t row = ((af[2] + lz) * ad[1] + af[1] + ly) * ad[0] + af[0];  // the row's first sample in the array
      for (uint64_t i = 0; i < box.count[0]; ++i) visit(order.hz_of(box.offset[0] + i, y, z), row + i);
    }
  };
  parallel_for(chunks, threads, [&](uint64_t k) {
    auto& cnt = chunk_counts[k];
    uint32_t part = 0;
    each(k, [&](uint64_t hz, uint64_t) {
      if (hz < partition.first_sample(part) || hz >= partition.first_sample(part) + partition.samples(part)) part = partition.part_of(hz);
      ++cnt[part];
    });
  });
  // Where each chunk's samples of each part go: parts in order, chunks in order within a part.
  std::vector<std::vector<uint64_t>> at(chunks, std::vector<uint64_t>(parts, 0));
  uint64_t pos = 0;
  for (uint32_t p = 0; p < parts; ++p) {
    out.start[p] = pos;
    for (uint64_t k = 0; k < chunks; ++k) {
      at[k][p] = pos;
      pos += chunk_counts[k][p];
    }
    out.counts[p] = pos - out.start[p];
  }
  out.start[parts] = pos;
  out.offset_in_part.resize(n);
  out.index_in_array.resize(n);
  parallel_for(chunks, threads, [&](uint64_t k) {
    auto& next = at[k];
    uint32_t part = 0;
    each(k, [&](uint64_t hz, uint64_t index) {
      if (hz < partition.first_sample(part) || hz >= partition.first_sample(part) + partition.samples(part)) part = partition.part_of(hz);
      const uint64_t j = next[part]++;
      out.offset_in_part[j] = uint32_t(hz - partition.first_sample(part));
      out.index_in_array[j] = index;
    });
  });
  return out;
}

BoxRouting route_box_blocks(const HzOrder& order, const FieldPartition& partition, const GridBox& box, unsigned threads,
                            const Dims& array_dims, const Dims& array_first) {
  const uint64_t B = partition.per_block;
  const int bb = __builtin_ctzll(B);
  const uint64_t blocks = partition.first_block.back();
  if (blocks < 2 || box.size() == 0) return route_box(order, partition, box, threads, array_dims, array_first);
  const bool own = array_dims[0] == 0;
  const Dims ad = own ? box.count : array_dims;
  const Dims af = own ? Dims{0, 0, 0} : array_first;
  const BlockOffsets tables(order, bb, ad[0], ad[0] * ad[1], {0, 0, 0}, order.maxh());
  threads = threads ? threads : default_threads();
  auto in_box = [&](const Dims& q) {
    return q[0] >= box.offset[0] && q[0] < box.offset[0] + box.count[0] && q[1] >= box.offset[1] &&
           q[1] < box.offset[1] + box.count[1] && q[2] >= box.offset[2] && q[2] < box.offset[2] + box.count[2];
  };
  auto index_of = [&](const Dims& q) {  // a point of the box in the rank's array
    return ((q[2] - box.offset[2] + af[2]) * ad[1] + (q[1] - box.offset[1] + af[1])) * ad[0] + (q[0] - box.offset[0] + af[0]);
  };
  // Per block: 0 (none of the box), 1 (inside the box whole), 2 (across its edge); and its samples in the box.
  std::vector<uint8_t> kind(blocks, 0);
  std::vector<uint64_t> count(blocks, 0);
  parallel_for(blocks, threads, [&](uint64_t b) {
    const uint64_t first = b * B;
    const int h = b ? level_of_hz(first) : 0;
    if (b > 0 && h > bb) {
      const Dims p = order.point_of_hz(first), e = tables.extent(h);
      bool all = true, none = false;
      for (size_t a = 0; a < 3; ++a) {
        all &= p[a] >= box.offset[a] && p[a] + e[a] < box.offset[a] + box.count[a];
        none |= p[a] >= box.offset[a] + box.count[a] || p[a] + e[a] < box.offset[a];
      }
      if (none) return;
      if (all) {
        kind[b] = 1, count[b] = B;
        return;
      }
    }
    uint64_t c = 0;
    for (uint64_t i = 0; i < B; ++i) c += in_box(order.point_of_hz(first + i));
    if (c) kind[b] = 2, count[b] = c;
  });
  BoxRouting out;
  const uint32_t parts = partition.parts;
  out.counts.assign(parts, 0);
  out.start.assign(parts + 1, 0);
  std::vector<uint64_t> at(blocks);  // where each block's samples go
  uint64_t pos = 0;
  for (uint32_t k = 0; k < parts; ++k) {
    out.start[k] = pos;
    for (uint64_t b = partition.first_block[k]; b < partition.first_block[k + 1]; ++b) at[b] = pos, pos += count[b];
    out.counts[k] = pos - out.start[k];
  }
  out.start[parts] = pos;
  out.offset_in_part.resize(pos);
  out.index_in_array.resize(pos);
  parallel_for(blocks, threads, [&](uint64_t b) {
    if (!kind[b]) return;
    const uint64_t first = b * B, in_part = first - partition.first_sample(partition.part_of(first));
    uint32_t* off = out.offset_in_part.data() + at[b];
    uint64_t* idx = out.index_in_array.data() + at[b];
    if (kind[b] == 1) {
      const int64_t base = int64_t(index_of(order.point_of_hz(first)));
      const int64_t* t = tables.offsets(level_of_hz(first)).data();
      for (uint64_t i = 0; i < B; ++i) off[i] = uint32_t(in_part + i), idx[i] = uint64_t(base + t[i]);
      return;
    }
    uint64_t j = 0;
    for (uint64_t i = 0; i < B; ++i) {
      const Dims q = order.point_of_hz(first + i);
      if (in_box(q)) off[j] = uint32_t(in_part + i), idx[j] = index_of(q), ++j;
    }
  });
  return out;
}

}  // namespace motes::fields
