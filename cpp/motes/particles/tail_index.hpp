// The tail index of a column (format 2.2, docs/format.md §4.16): the values at or below a
// low limit and at or above a high limit, each with its file position, sorted by value, so
// that a threshold selecting a tail (`energy > t`) is answered from a few small blocks
// whatever the spatial layout put those values. The limits are chosen from a sample so
// that about `fraction` of the values lie beyond each; every value beyond a limit is in the
// index (ties included), which is what makes answers exact. Collected by the writer as it
// streams the column in file order; read by the query planner (query/indexed.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "motes/container/block_stream.hpp"
#include "motes/core/types.hpp"

namespace motes {

// What the writer hands the container for one column.
struct TailIndexSections {
  uint32_t column = 0;
  std::string values, rows;                            // coded blocks, one after the other
  std::vector<StoredBlock> value_blocks, row_blocks;   // offsets relative to each string
  std::string bounds;                                  // the bounds section (counts, limits, fences)
};

// Collects a column's tail while the writer streams its values in file order.
class TailCollector {
 public:
  virtual ~TailCollector() = default;
  // Values of file positions [first, first + n), in the column's dtype.
  virtual void add(const void* values, uint64_t first, uint64_t n) = 0;
  // The sections, or nothing when neither side holds a value.
  virtual std::optional<TailIndexSections> finish(uint32_t column, uint64_t particle_count, int zstd_level,
                                                  unsigned threads) = 0;
};
// A collector for `column` whose limits leave about `fraction` (in (0, 0.25]) of its values
// beyond each, from a sample of the caller's array; null when the column's sampled values
// are all equal (no tail to index) or it has none.
std::unique_ptr<TailCollector> make_tail_collector(const ColumnView& column, double fraction);

// A test of a value against a constant of the column's own type.
enum class TailTest { lt, le, gt, ge, eq };

// A file's tail index on one column, opened from its sections.
class TailIndex {
 public:
  TailIndex(std::shared_ptr<const ByteSource> source, const std::string& file, uint32_t column, DType dtype,
            uint64_t particle_count, std::vector<StoredBlock> value_blocks, std::vector<StoredBlock> row_blocks,
            const std::string& bounds);
  // Keys its two streams in the cache of decoded blocks by the file's contents (BlockStream::
  // set_cache_key): `file` from content_cache_key, and their two sections in the file.
  void set_cache_keys(uint64_t file, uint64_t values_section, uint64_t rows_section) {
    values_.set_cache_key(file, values_section);
    rows_.set_cache_key(file, rows_section);
  }
  uint32_t column() const { return column_; }
  uint64_t low_count() const { return low_count_; }
  uint64_t high_count() const { return high_count_; }
  uint64_t stored_bytes() const { return values_.stored_bytes() + rows_.stored_bytes() + bounds_bytes_; }
  // Whether every value passing `value test c` is in the index (c: a constant of the
  // column's dtype); then the most entries that can pass it, from the fences alone (no read).
  std::optional<uint64_t> covers(TailTest test, const void* c) const;
  // The file positions of the values passing `value test c`, ascending. Only when covers().
  std::vector<uint64_t> rows(TailTest test, const void* c) const;
  // Checks every block against its checksum, the order of values, fences and limits, and
  // against `column` (the column's values): each entry's value at its position, and as many
  // values beyond each limit as entries.
  void verify(const BlockStream& column) const;

 private:
  std::string file_;
  uint32_t column_;
  DType dtype_;
  uint64_t particle_count_;
  uint64_t low_count_ = 0, high_count_ = 0, bounds_bytes_ = 0;
  bool low_valid_ = false, high_valid_ = false;
  uint64_t low_limit_ = 0, high_limit_ = 0;  // the limits' bytes (the column's dtype, little-endian)
  std::vector<double> fences_;               // first, last value of each block, as doubles
  BlockStream values_, rows_;
  // Entries [begin, end) that may satisfy the test, from the fences.
  std::pair<uint64_t, uint64_t> candidates(TailTest test, double c) const;
};

}  // namespace motes
