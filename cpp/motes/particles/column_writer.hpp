// One column on its way into a particle file (internal to the writer): its global range,
// quantile edges, codecs, and, block by block in file order, its values gathered from the
// caller's arrays, the running per-node index, quantile codes, and the stored blocks; then
// the file's metadata sections made of them (writer_sections.cpp). Planned in column_plan.cpp,
// written in column_writer.cpp, with the kernels of column_values.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <memory>
#include <string>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/container/block_stream.hpp"
#include "motes/container/container.hpp"
#include "motes/core/types.hpp"
#include "motes/particles/id_index.hpp"
#include "motes/particles/layout/builder.hpp"
#include "motes/particles/row_stage.hpp"
#include "motes/particles/derived.hpp"
#include "motes/particles/tail_index.hpp"

namespace motes {

// Where one stream (a column's values or its quantile codes) goes: raw streams are written
// in place at `offset`; coded blocks are collected per window, then placed by the writer.
struct StreamOut {
  codec::Plan plan;             // raw(): contiguous values at `offset`
  uint64_t offset = 0;          // raw streams
  std::vector<uint64_t> sums;   // raw streams: XXH3 per block
  std::vector<StoredBlock> blocks;  // coded streams: offset, size, checksum of every block
  // Coded streams: a window's stored blocks, back to back, and their block numbers, in two
  // slots (window w in slot w % 2), so that one window is coded while the one before is placed.
  std::string window[2];
  std::vector<size_t> window_blocks[2];
  unsigned slot = 0;  // the slot being filled
  bool by_index = false;  // the id column stored only as its id index: no blocks of its own
};

struct ColumnPlan {
  const ColumnView* view = nullptr;
  size_t size = 0;
  IndexKind index = IndexKind::none;
  double gmin = 0, gmax = 0;
  uint64_t nan_count = 0;
  std::vector<double> edges;           // fine only: 257 quantile edges
  std::vector<uint64_t> bases;         // fine only: codec::quantile_bases of the edges
  codec::Grid grid;                    // error-bounded columns: the grid their values lie on
  StreamOut values, codes;
  // Per node, over its own points so far (then its subtree): native min/max bytes, bitmap.
  std::vector<unsigned char> node_min, node_max, node_any;
  std::vector<uint32_t> node_bits;
  size_t run_cursor = 0;  // next run (by start) not yet complete
  // The window's values already in file order (a gathered row stage), from row
  // staged_first on; null: write_blocks gathers them from the view.
  const unsigned char* staged = nullptr;
  uint64_t staged_first = 0;
  std::unique_ptr<TailCollector> tail;  // the column's tail index on its way, or null
};

// Up to `most` of the column's values, evenly spaced over its rows, NaN left out: what
// quantile edges and tail limits are chosen on (sorted_sample: in ascending order).
template <class T>
std::vector<T> even_sample(const ColumnView& c, uint64_t most) {
  const uint64_t n = c.count, s = std::min<uint64_t>(n, most);
  std::vector<T> out;
  out.reserve(s);
  for (uint64_t k = 0; k < s; ++k) {
    const T v = c.at<T>(k * n / s);
    if constexpr (std::is_floating_point_v<T>) {
      if (v != v) continue;
    }
    out.push_back(v);
  }
  return out;
}
template <class T>
std::vector<T> sorted_sample(const ColumnView& c, uint64_t most) {
  std::vector<T> out = even_sample<T>(c, most);
  std::sort(out.begin(), out.end());
  return out;
}

// Global min/max and NaN count of the column (threads: parallel scan).
void scan_column(ColumnPlan& p, unsigned threads);
// The smallest and largest finite values of a float column (0, 0 when it has none).
void finite_range(const ColumnView& c, unsigned threads, double& lo, double& hi);
// How spatially incoherent the column is (about 1 for noise, near 0 for smooth fields).
double column_incoherence(const ColumnPlan& p, const Layout& layout);
// 257 quantile edges from a sample of the values, and the codec bases derived from them.
void compute_quantile_edges(ColumnPlan& p);
// The codecs of the column's streams, chosen on sample blocks gathered across the file
// order; lossless=false stores every stream raw.
void choose_codecs(ColumnPlan& p, const Layout& layout, uint32_t block_values, bool lossless, int zstd_level);
// What a quantile index would cost a column (the writer's index budget, writer.cpp): its
// codecs chosen both ways on choose_codecs' sample blocks (lossless), and the blocks coded
// with each choice. Bytes per value: the values without codes, the values coded against
// codes (binned residuals and the quantile predictors), the codes themselves.
struct QuantileTrial {
  double values_without = 0, values_with = 0, codes = 0;
  codec::Plan without;             // the values' plan without codes
  codec::Plan with_values, with_codes;
  std::vector<double> edges;    // the quantile edges the codes were made with
  std::vector<uint64_t> bases;
  // The codes' net cost per value: what they add less what the values save.
  double net() const { return codes + values_with - values_without; }
};
QuantileTrial try_quantile_index(ColumnPlan& p, const Layout& layout, uint32_t block_values, int zstd_level);
// The stored bytes per value of a column's quantile codes (an index asked for), on
// choose_codecs' sample blocks with the codec it would choose for them; the edges are
// computed into `p` (lossless files; 1 otherwise: the codes stored raw).
double quantile_code_bytes(ColumnPlan& p, const Layout& layout, uint32_t block_values, bool lossless, int zstd_level);
// Takes one side of a trial into the plan: the index and the codecs it was measured with.
void take_quantile_trial(ColumnPlan& p, const QuantileTrial& t, bool quantile);
// Where choose_codecs samples a column of n values: the first rows of its sample blocks
// (each min(n, block_values) values long), in file order.
std::vector<uint64_t> codec_sample_starts(uint64_t n, uint32_t block_values);

// Writes blocks [b0, b1) of the column: gathers values in file order, updates the node
// index, makes codes, and either writes raw streams at their offsets through `write_at`
// or encodes blocks into the streams' windows.
struct RawWriter {
  virtual void write_at(const void* data, size_t n, uint64_t offset) = 0;
  virtual ~RawWriter() = default;
};
void write_blocks(ColumnPlan& p, const Layout& layout, const std::vector<Run>& runs_by_start,
                  uint32_t block_values, uint64_t b0, uint64_t b1, RawWriter& out);

// Every column's blocks, window by window (`window` blocks each), on `threads` threads with
// no barrier between windows (column_pipeline.cpp): the tasks (window, column) are taken in
// order; a column's windows run in order; a window may be coded while the one before is
// still coded or placed (one window ahead at most, its own slot); it sizes the coded
// streams' block tables first, so that no task grows them. place(slot) is called for
// each window in order, once every column has coded it, by one thread at a time: it moves
// the window's coded bytes (the streams' window[slot]) into the file and clears them.
// progress(blocks placed) after each window. With a row stage (the plans' columns, in
// order), tasks ahead of each window's column tasks gather its rows from the stage, all
// columns at once, into one of two window buffers.
void write_columns(std::vector<ColumnPlan>& plans, const Layout& layout, const std::vector<Run>& runs_by_start,
                   uint32_t block_values, uint64_t window, unsigned threads, const RowStage* stage, RawWriter& out,
                   const std::function<void(unsigned)>& place, const std::function<void(uint64_t)>& progress);
// After the last block: subtree ranges and bitmaps (children into parents).
void finish_node_index(ColumnPlan& p, const Layout& layout);

// The metadata sections of a file of n particles in these columns, from `base` on (small
// sections zstd-compressed where smaller when `lossless`, but the tree and the block tables), once every column is written and
// its node index finished: schema, tree, each column's streams and quantile edges, the id
// index (null: none), the derived quantities and the tail indexes (a derived quantity's at
// column = columns + d), then the node ranges and bitmaps.
container::SectionsBuilder metadata_sections(uint64_t base, bool lossless, uint64_t n, const std::vector<ColumnPlan>& plans,
                                             const Layout& layout, const IdIndexSections* ids,
                                             const std::vector<TailIndexSections>& tails,
                                             const std::vector<DerivedQuantity>& derived);

}  // namespace motes
