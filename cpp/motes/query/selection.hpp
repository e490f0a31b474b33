// A materialised selection: the rows a query selected, as segments of part files in
// traversal order, and the gathering of any column's values for any range of its rows.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "motes/query/engine.hpp"

namespace motes {

// A materialised selection: segments in traversal order with running offsets.
class Selection {
 public:
  Selection() = default;
  explicit Selection(Query& query);
  uint64_t size() const { return offsets_.empty() ? 0 : offsets_.back(); }
  const Collection& collection() const { return *collection_; }
  // Copies rows [row_begin, row_end) of the selection of column `column` into dest (column dtype).
  // hint: ask the sources for what is not in memory first (a caller that called prefetch for
  // every column it gathers passes false). Checks the query's cancellation between pieces
  // of rows (CancelledError).
  void gather(size_t column, uint64_t row_begin, uint64_t row_end, void* dest, unsigned threads, bool hint = true) const;
  // The same rows as float32: float(double(value) - subtract) (positions relative to an origin).
  void gather_f32(size_t column, uint64_t row_begin, uint64_t row_end, float* dest, double subtract, unsigned threads,
                  bool hint = true) const;
  // Asks the sources to start reading, all at once, what gathering these columns will read:
  // a cold query then waits for a few overlapping reads, not one page fault per row.
  // (Gathering does this for its column; a caller gathering several columns may ask for all
  // of them first.)
  void prefetch(const std::vector<size_t>& columns, uint64_t row_begin = 0, uint64_t row_end = UINT64_MAX) const;
  // The query's counters, with the reads this selection's gathers planned added
  // (QueryCounters::read_requests, read_bytes).
  QueryCounters counters() const;
  // How many of the selection's rows a covering tail holds for `column` (read beside the
  // index, a permuted copy: cheap per row).
  uint64_t covered_rows(size_t column) const;
  // Positions of rows [row_begin, row_end) in the collection (part offset + position in the part's file).
  void positions(uint64_t row_begin, uint64_t row_end, uint64_t* dest) const;

 private:
  std::shared_ptr<const Collection> collection_;
  std::vector<Segment> segments_;
  std::vector<uint32_t> part_of_;  // part of each segment
  // The segment where each part's segments begin (a part's are consecutive), then
  // segments_.size(): a covered part's segments are skipped at once, not one by one.
  std::vector<size_t> part_begin_;
  std::vector<uint64_t> offsets_;  // offsets_[k] = rows before segment k; back() = total
  Cancellation cancel_;            // the query's
  QueryCounters counters_;         // the query's
  // The reads prefetch() planned (several threads may gather at once).
  struct ReadTally {
    std::atomic<uint64_t> requests{0}, bytes{0};
  };
  std::shared_ptr<ReadTally> reads_ = std::make_shared<ReadTally>();
  // Parts whose rows a covering tail holds (Query::covered), with the selection row of each
  // one's first row: their covered columns are read from the cover.
  struct Covered {
    uint32_t part;
    uint64_t first;
    std::shared_ptr<const TailHits> hits;
  };
  std::vector<Covered> covered_;
  // Rows [row_begin, row_end) of the covered parts that cover `column`: emit(values, r0, r1).
  template <class Emit>
  void visit_covered(size_t column, uint64_t row_begin, uint64_t row_end, const Emit& emit) const;
  size_t segment_of(uint64_t row) const;
  // The end of the run of segments of segment k's part.
  size_t part_end(size_t k) const;
  struct ColumnParts;
  ColumnParts column_parts(size_t column, uint64_t row_begin, uint64_t row_end, unsigned threads) const;
  template <class T, class Emit>
  void visit_rows(const ColumnParts& parts, uint64_t a, uint64_t b, const Emit& emit) const;
  // Calls emit(from, r0, r1) with the values of rows [r0, r1) (a const T*, T the column's
  // type) for pieces covering [row_begin, row_end), on up to `threads` threads.
  template <class Emit>
  void visit(size_t column, uint64_t row_begin, uint64_t row_end, unsigned threads, bool hint, const Emit& emit) const;
};

}  // namespace motes
