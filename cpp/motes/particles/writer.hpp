// Writes one particle file (format 2): builds the layout, streams columns in file order
// with their per-node index, codes them block by block (lossless by default), checksums
// every block and section, and renames atomically.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/particles/layout/builder.hpp"
#include "motes/particles/spec.hpp"
#include "motes/core/phases.hpp"
#include "motes/core/types.hpp"
#include "motes/particles/derived.hpp"

namespace motes {

// The index budget's default (WriteOptions::index_budget).
inline constexpr double kIndexBudget = 0.05;

// How values are stored. The names are what users pass ("lossless", "none").
struct WriteOptions {
  LayoutOptions layout;
  Compression compression = Compression::lossless;
  uint32_t block_values = spec::kDefaultBlockValues;  // values per coded (and checksummed) block; <= 1 MiB of values
  int zstd_level = 1;             // zstd level of coded blocks (index sections use 3)
  bool sync = true;               // fdatasync the file and its directory before returning
  // Rows per window of the column passes: coded blocks are placed window by window (every
  // column's blocks of one window, then the next window's), so that a read of the first
  // rows of several columns stays near the file's start. Rounded down to whole blocks.
  uint64_t window_rows = uint64_t(1) << 20;
  // Copy the columns row by row after the layout (particles/row_stage.hpp) when they hold
  // at least stage_min_bytes and their order is far from spatial, so that gathering a row
  // in file order costs one cache miss instead of one per column: one more copy of the
  // columns in memory (and two windows of rows). The file is the same either way. Below
  // about a gigabyte the columns' gathers mostly hit the caches and the copy costs about
  // what it saves (measured at fca791f: bench/README.md, 2026-11-27, the row stage).
  bool stage_rows = true;
  uint64_t stage_min_bytes = uint64_t(1) << 30;
  // The particle id column the id index is built on (particles/id_index.hpp): "auto" takes
  // a 32- or 64-bit integer column named "id" when there is one; "" builds none; a name
  // takes that column (UsageError unless a 32- or 64-bit integer). Lossless files only.
  std::string id_column = "auto";
  // Store the id column only as its id index (format 2.7, feature ids-by-index): the index's
  // sorted ids and their rows determine the column, so a reader derives its values from them
  // instead of the file paying for the same permutation twice.
  bool ids_by_index = true;
  // Tail indexes (particles/tail_index.hpp): about tail_fraction of each column's values
  // beyond each of two limits (0: none). tail_columns names the columns; unset, every
  // column but x, y, z and the id column. Lossless files only.
  double tail_fraction = spec::kDefaultTailFraction;
  std::optional<std::vector<std::string>> tail_columns;
  // Covering tails (particles/tail_cover.hpp): the outermost tail_cover of the values on each
  // side of every tail index (at most its side) carry the values of other columns beside the
  // index (0: none). tail_cover_columns names them; unset, every column stored exactly.
  double tail_cover = spec::kDefaultTailCover;
  std::optional<std::vector<std::string>> tail_cover_columns;
  // Derived quantities (particles/derived.hpp): each gets a tail index (tail_fraction, or the
  // default when that is 0), covered as the columns' tails are, and statistics; its values
  // are not stored. The writer computes them (expr/derive.hpp: the queries' arithmetic;
  // `derive`, when set, instead). Lossless files only.
  std::vector<DerivedSpec> derived;
  DeriveFn derive;
  // The index budget: the file's indexes together (tree nodes, node ranges and bitmaps,
  // quantile codes and edges, tail indexes and their covers; not the id index, which stores
  // the ids, nor derived quantities, asked by name) take at most this share of the columns'
  // raw bytes. Automatic quantile codes get what the others leave; covers, then tails, at
  // their defaults shrink when the rest exceeds it (writer.cpp, choose_indexes). Indexes
  // asked for are built whatever they cost. 0: no budget (automatic quantile codes within
  // 10 % of the data bytes, value indexes as asked: the writer before the budget).
  double index_budget = kIndexBudget;
  // Called as work advances: (stage name, units done, units total).
  std::function<void(const std::string&, uint64_t, uint64_t)> progress;
};

struct ColumnSummary {
  std::string name;
  DType dtype;
  IndexKind index;
  double min, max;  // over non-NaN values; 0, 0 when there are none
  uint64_t nan_count;
  uint32_t root_bits;  // the root node's 32-bin bitmap over [min, max]; 0 when every value is NaN
};

struct WriteSummary {
  uint64_t particle_count = 0;
  uint64_t file_bytes = 0;
  uint64_t data_bytes = 0;    // the columns' raw bytes
  uint64_t stored_bytes = 0;  // the columns' values as stored
  uint32_t node_count = 0, level_count = 0;
  Box bounds{};
  std::vector<ColumnSummary> columns;
  double layout_seconds = 0, write_seconds = 0;
  Phases phases;  // wall time of each phase (layout steps prefixed "layout ")
  uint64_t header_checksum = 0;  // pins the whole file (the header covers every checksum)
};

// Codec plans chosen for one file, reused by the next files of the same columns. Choosing
// codes samples of every column with every predictor and coder, which costs about as much
// as coding a file of a few hundred thousand particles: the MPI writer keeps one memo per
// species on each aggregator, so that it chooses once for all the parts it writes. A plan
// is reused for a column of the same name, dtype, index kind, grid (present or not),
// compression and zstd level, when it was chosen on at least as many sample values as
// this file would give; otherwise the file chooses and the memo keeps its choice.
struct CodecMemo {
  struct Key {
    std::string column;
    DType dtype;
    IndexKind index;
    bool grid, lossless;
    int zstd_level;
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    uint64_t sampled;  // values the plans were chosen on
    codec::Plan values, codes;
  };
  std::vector<Entry> entries;

  // The entry for `key` if its plans were chosen on at least `sampled` values, else null.
  const Entry* reusable(const Key& key, uint64_t sampled) const;
  // Keeps plans chosen on `sampled` values for `key`, replacing what it held for it.
  void keep(const Key& key, uint64_t sampled, const codec::Plan& values, const codec::Plan& codes);
};

// Checks names (identifiers, unique), dtypes, equal lengths and the x, y, z
// position columns (f32/f64); throws UsageError naming the problem.
void validate_columns(const std::vector<ColumnView>& columns);
// The column the id index is built on (WriteOptions::id_column), or -1 for none; UsageError
// when id_column names a column that is not there or cannot have one.
int id_column_of(const std::vector<ColumnView>& columns, const WriteOptions& options);
// The columns that get a tail index (WriteOptions::tail_columns): those named, or by default
// every column but the positions and the id column. UsageError naming a column that is not there.
std::vector<int> tail_columns_of(const std::vector<ColumnView>& columns, const WriteOptions& options);
// The columns a tail index's cover holds (WriteOptions::tail_cover_columns): those named, or
// by default every column stored exactly; none when tail_cover is 0. UsageError for a name
// not among the columns, one with an error bound, or a share outside [0, 0.25].
std::vector<int> tail_cover_columns_of(const std::vector<ColumnView>& columns, const WriteOptions& options);
// Checks the derived quantities asked (WriteOptions::derived): names that are identifiers,
// distinct and not a column's, and an expression each that derive_values can compute over
// the columns (expr/derive.hpp); UsageError naming the problem.
void check_derived(const std::vector<ColumnView>& columns, const WriteOptions& options);

// Writes `columns` to `path` (replacing it atomically). The caller's arrays are only read.
// With a memo, codec plans are taken from it and given to it (CodecMemo).
WriteSummary write_particle_file(const std::string& path, const std::vector<ColumnView>& columns,
                                 const WriteOptions& options = {}, CodecMemo* memo = nullptr);

}  // namespace motes
