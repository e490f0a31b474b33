// The tail index of a column (format 2.2, docs/format.md §4.16): the values at or below a
// low limit and at or above a high limit, each with its file position, sorted by value, so
// that a threshold selecting a tail (`energy > t`) is answered from a few small blocks
// whatever the spatial layout put those values. The limits are chosen from a sample so
// that about `fraction` of the values lie beyond each; every value beyond a limit is in the
// index (ties included), which is what makes answers exact. Collected by the writer as it
// streams the column in file order; read by the query planner (query/indexed.hpp).
#pragma once

#include <cstdint>
#include <functional>
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
  uint64_t low = 0, high = 0;                          // entries per side
  std::vector<uint64_t> entry_rows;  // each entry's file position (what covering reads; not stored as such)
  // Covering (2.3, particles/tail_cover.hpp): the outermost entries of each side with the
  // values of other columns at their rows, in entry order.
  struct Cover {
    uint32_t column = 0;
    std::string values;               // coded blocks of kIdBlockValues values
    std::vector<StoredBlock> blocks;  // offsets relative to `values`
  };
  uint64_t low_covered = 0, high_covered = 0;
  std::vector<Cover> covers;
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

class TailIndex;
// The entries of a tail index that pass a test: [begin, end) in entry order (contiguous, the
// values being sorted) and their file positions, ascending. When the tail's cover holds
// them all, `order` gives each position's entry (begin + order[i]) and gather() reads a
// covered column's values at those positions from beside the index, in position order.
struct TailHits {
  const TailIndex* tail = nullptr;
  uint64_t begin = 0, end = 0;
  std::vector<uint64_t> rows;
  std::vector<uint32_t> order;  // empty: not covered
  bool covered() const { return !order.empty(); }
  // The stream gather() reads `column` from (covered hits only: the tail's own values or a
  // cover stream) and the place of entry `begin` in it; null when it cannot.
  const BlockStream* source(uint32_t column, uint64_t& at) const;
  // Whether gather() can read `column`.
  bool covers(uint32_t column) const;
  // Values of `column` at positions rows[first, first + n) into dst (the column's dtype).
  void gather(uint32_t column, uint64_t first, uint64_t n, void* dst) const;
};

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
  uint64_t stored_bytes() const;
  // Whether every value passing `value test c` is in the index (c: a constant of the
  // column's dtype); then the most entries that can pass it, from the fences alone (no read).
  std::optional<uint64_t> covers(TailTest test, const void* c) const;
  // Whether the cover holds every entry that can pass `value test c`, from the fences alone
  // (no read): then hits(test, c, true) is covered whatever it finds. Only when covers().
  bool cover_holds(TailTest test, const void* c) const;
  // The file positions of the values passing `value test c`, ascending. Only when covers().
  std::vector<uint64_t> rows(TailTest test, const void* c) const { return hits(test, c, false).rows; }
  // The entries passing `value test c`, [begin, end) (contiguous: the values ascend; only
  // when covers()). Their count, without their rows.
  std::pair<uint64_t, uint64_t> passing(TailTest test, const void* c) const;
  // The entries passing `value test c` (only when covers()); with `order` when the cover
  // holds them all and `cover_order` asks for it.
  TailHits hits(TailTest test, const void* c, bool cover_order) const;
  // Covering (2.3): the entries covered on each side and the covered columns' streams (K
  // values each: the low side's first `low` entries, then the high side's last `high`).
  void set_cover(uint64_t low, uint64_t high, std::vector<std::pair<uint32_t, BlockStream>> streams);
  uint64_t low_covered() const { return low_covered_; }
  uint64_t high_covered() const { return high_covered_; }
  const std::vector<std::pair<uint32_t, BlockStream>>& cover_streams() const { return cover_; }
  // The stream holding `column` at entries [begin, end) of one covered side, and the place
  // of entry `begin` in it; null when the column is not covered there.
  const BlockStream* covering(uint32_t column, uint64_t begin, uint64_t end, uint64_t& at) const;
  // Checks every block against its checksum, the order of values, fences and limits, and
  // against `column` (the column's values): each entry's value at its position, and as many
  // values beyond each limit as entries.
  void verify(const BlockStream& column) const;
  // Checks every block of the cover and each covered value against the column's value at
  // its entry's position (`column_of(c)`: column c's values), bit for bit.
  void verify_cover(const std::function<const BlockStream&(uint32_t)>& column_of) const;

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
  uint64_t low_covered_ = 0, high_covered_ = 0;
  std::vector<std::pair<uint32_t, BlockStream>> cover_;  // covered column, its values
  // Whether entries [begin, end) lie on one side's covered entries; then `at` is the place of
  // entry begin in the cover streams.
  bool side_covered(uint64_t begin, uint64_t end, uint64_t& at) const;
  // Entries [begin, end) that may satisfy the test, from the fences.
  std::pair<uint64_t, uint64_t> candidates(TailTest test, double c) const;
};

}  // namespace motes
