// Query execution over one particle file: prune the tree with every index
// (node ranges, bitmaps, level range), then filter candidate runs exactly,
// in parallel, producing the selection as sorted-by-task segments.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "motes/format/reader.hpp"
#include "motes/query/expr.hpp"

namespace motes {

struct QuerySpec {
  std::string where;            // boolean expression over columns; empty selects everything
  std::optional<Box> box;       // inclusive on both ends
  double quality_from = 0.0;    // read levels [L(quality_from), L(quality_to))
  double quality_to = 1.0;
  unsigned threads = 0;         // 0 = all cores
};

// A contiguous range of selected points in file order.
struct Segment {
  uint64_t start;
  uint64_t count;
};

struct QueryCounters {
  uint64_t nodes_visited = 0, nodes_pruned = 0, nodes_all = 0;
  uint64_t points_tested = 0, points_taken_whole = 0;
  bool scanned = false;  // the index pruned too little: the selected levels were scanned in order
};

class Query {
 public:
  Query(std::shared_ptr<const ParticleFile> file, const QuerySpec& spec);

  // Evaluates the query; calls sink(worker, chunk, segments) once per work chunk
  // (chunks are numbered in traversal order; workers in [0, threads())).
  using Sink = std::function<void(unsigned worker, size_t chunk, const std::vector<Segment>&)>;
  // dynamic: chunks go to whichever worker is free; fixed: worker w gets chunks
  // w, w + threads, ... (reproducible per-worker partial results).
  enum class Schedule { dynamic, fixed };
  size_t run(const Sink& sink, Schedule schedule = Schedule::dynamic);  // returns the number of chunks

  unsigned threads() const { return threads_; }
  const ParticleFile& file() const { return *file_; }
  const QueryCounters& counters() const { return counters_; }
  uint32_t level_begin() const { return level_begin_; }
  uint32_t level_end() const { return level_end_; }

 private:
  struct Task {
    uint64_t start;
    uint64_t count;
    bool all;  // every point matches: no test needed
  };
  std::shared_ptr<const ParticleFile> file_;
  ExprPtr predicate_;  // null when everything matches
  unsigned threads_;
  uint32_t level_begin_, level_end_;
  QueryCounters counters_;

  std::vector<Task> plan();
  static constexpr uint64_t kScanBlock = 1 << 14;  // points per block of tested runs
  static std::vector<Task> coalesce(const std::vector<std::vector<Task>>& by_level);
};

// A materialised selection: segments in traversal order with running offsets.
class Selection {
 public:
  Selection() = default;
  explicit Selection(Query& query);
  uint64_t size() const { return offsets_.empty() ? 0 : offsets_.back(); }
  const std::vector<Segment>& segments() const { return segments_; }
  // Copies rows [row_begin, row_end) of the selection of column `column` into dest (column dtype).
  void gather(const ParticleFile& file, size_t column, uint64_t row_begin, uint64_t row_end, void* dest,
              unsigned threads) const;
  // File positions of rows [row_begin, row_end).
  void positions(uint64_t row_begin, uint64_t row_end, uint64_t* dest) const;

 private:
  std::vector<Segment> segments_;
  std::vector<uint64_t> offsets_;  // offsets_[k] = rows before segment k; back() = total
  size_t segment_of(uint64_t row) const;
};

}  // namespace motes
