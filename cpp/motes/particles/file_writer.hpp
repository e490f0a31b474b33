// ParticleFileWriter: the class behind write_particle_file (writer.hpp), one particle file
// on its way to disk. Internal to the particles layer: its phases are defined in
// writer.cpp (layout, rows, columns, value indexes, commit) and writer_indexes.cpp (which
// indexes a file gets within its budget, estimated before the columns are written).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "motes/container/container.hpp"
#include "motes/io/files.hpp"
#include "motes/particles/column_writer.hpp"
#include "motes/particles/id_index.hpp"
#include "motes/particles/writer.hpp"

namespace motes {

// What the indexes written after the columns will take, estimated before the columns are
// written (writer_indexes.cpp): the tree, node ranges and bitmaps, tails, covers, and the
// quantile codes asked for.
struct IndexEstimate {
  uint64_t tree = 0, ranges = 0, tails = 0, covers = 0, asked_codes = 0;
  uint64_t total() const { return tree + ranges + tails + covers + asked_codes; }
};

// A column's tail entries on each side, estimated (writer_indexes.cpp tail_sides_typed).
struct TailSides {
  double low = 0, high = 0;
};

// One particle file on its way to disk: write() runs the phases in order, each a method
// that ends its entry of the phase table (WriteSummary::phases). The file is created
// once the columns are planned, written from the first byte after the header page on,
// and committed (header last, synced, renamed) by commit().
class ParticleFileWriter {
 public:
  ParticleFileWriter(const std::string& path, const std::vector<ColumnView>& given, const WriteOptions& options,
                     CodecMemo* memo);
  ParticleFileWriter(const ParticleFileWriter&) = delete;
  ParticleFileWriter& operator=(const ParticleFileWriter&) = delete;
  WriteSummary write();

 private:
  void quantize_bounded_columns();
  void check_block_options() const;
  void lay_out();
  void stage_rows();
  void scan_columns();
  void choose_indexes();
  void plan_codecs();
  void write_column_streams();
  void write_id_index();
  void write_tail_indexes();
  void write_derived();
  void cover(TailIndexSections& t, double fraction, unsigned threads) const;
  void place_tail(TailIndexSections t);
  container::SectionsBuilder sections();
  void commit(container::SectionsBuilder& meta);

  const ColumnView& position(const char* axis) const;
  void progress(const std::string& stage, uint64_t done, uint64_t total) const {
    if (options_.progress) options_.progress(stage, done, total);
  }
  // Moves the coded blocks of window slot `slot` into the file (write_columns' place).
  void place_window(unsigned slot);
  // Writes a value index's coded blocks next in the file; their offsets become the file's.
  void append_blocks(const std::string& bytes, std::vector<StoredBlock>& blocks);

  const std::string& path_;
  const WriteOptions& options_;
  CodecMemo* const memo_;
  const unsigned threads_;
  const bool lossless_;
  const uint32_t bv_;  // values per block
  WriteSummary summary_;
  Phases& phases_ = summary_.phases;
  // The caller's columns; error-bounded ones then point at their values on the grid.
  std::vector<ColumnView> columns_;
  std::vector<codec::Grid> grids_;
  std::vector<std::vector<unsigned char>> quantized_;
  Layout layout_;
  uint64_t n_ = 0;           // particles
  uint64_t data_bytes_ = 0;  // the columns' raw bytes
  std::chrono::steady_clock::time_point columns_start_;
  std::optional<RowStage> stage_;
  std::vector<ColumnPlan> plans_;
  std::optional<AtomicFile> file_;
  uint64_t offset_ = spec::kPage;  // where the next bytes go
  std::optional<IdIndexSections> ids_;
  std::vector<TailIndexSections> tails_;
  std::vector<int> cover_columns_;  // the columns tail covers hold (tail_cover_columns_of)
  std::vector<DerivedQuantity> derived_;
  // The tail fraction and cover share written (the options', unless the index budget
  // shrank them: choose_indexes), and the columns whose codecs choose_indexes chose.
  double tail_fraction_ = 0, tail_cover_ = 0;
  std::vector<bool> planned_;
  std::vector<double> asked_code_bytes_;  // per value, of the quantile codes asked for (choose_indexes)
  void estimate_indexes(IndexEstimate& e, const std::vector<uint64_t>& node_indexes, const std::vector<int>& tailed,
                        const std::vector<TailSides>& sides, const std::vector<double>& shares) const;
  IndexEstimate fit_value_indexes(double budget, const std::vector<uint64_t>& node_indexes);
  void choose_quantile_codes(const std::vector<std::pair<double, size_t>>& candidates, double remaining);
};

}  // namespace motes
