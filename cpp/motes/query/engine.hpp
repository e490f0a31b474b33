// Query execution over a collection (one particle file, or the parts of a step
// index): skip parts through the step index, prune each part's tree with every
// index (node ranges, bitmaps, level range), then filter candidate runs exactly,
// in parallel, producing the selection as segments in part and file order.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "motes/core/cancel.hpp"
#include "motes/particles/collection.hpp"
#include "motes/particles/reader.hpp"
#include "motes/expr/expr.hpp"
#include "motes/query/row_sample.hpp"

namespace motes {

struct QuerySpec {
  std::string where;            // boolean expression over columns; empty selects everything
  std::optional<Box> box;       // inclusive on both ends
  double quality_from = 0.0;    // read levels [L(quality_from), L(quality_to))
  double quality_to = 1.0;
  // Instead of a quality range: a share f of the particles, round(f * N) of each part file's
  // N, taken coarse to fine: whole levels, then an even sample of the next (LevelSample).
  std::optional<double> fraction;
  unsigned threads = 0;         // 0 = all cores
  // Tell the sources which byte ranges the evaluation will read before reading them (a cold
  // query then waits for a few overlapping reads); off saves the hints' system calls.
  bool prefetch = true;
  // Stops the query with CancelledError once cancelled (null: never), or once the deadline
  // has passed: checked between work chunks of the traversal, of the gathers of its
  // Selection and of the analyses (count, stats, histograms).
  std::shared_ptr<const CancelToken> cancel;
  std::optional<Deadline> deadline;
  // The grid fields `where` (and the values of an analysis, analysis/analysis.hpp) may sample
  // with field('name'[, 'component']) (fields/sample.hpp).
  std::vector<FieldRef> fields;
};

// UsageError unless the spec reads something well defined: quality_from and quality_to in
// [0, 1], not reversed; a fraction in [0, 1], and not with a quality range. The one check of
// these (a Query makes it; the bindings call it as soon as a spec is built, to fail before
// any file is opened).
void check_query_spec(const QuerySpec& spec);

// A contiguous range of selected points of one part, in file order.
struct Segment {
  uint64_t start;
  uint64_t count;
};

struct QueryCounters {
  uint64_t nodes_visited = 0, nodes_pruned = 0, nodes_all = 0;
  uint64_t points_tested = 0, points_taken_whole = 0;
  bool scanned = false;  // the index pruned too little: the selected levels were scanned in order (in some part)
  uint64_t parts_read = 0, parts_pruned = 0;  // part files opened / skipped through the step index
  // Part files planned through a value index (query/indexed.hpp), and the rows it named.
  uint64_t id_index_parts = 0, tail_index_parts = 0, index_rows = 0;
  // Part files whose selected rows a covering tail index holds (their covered columns are
  // read from beside the index: particles/tail_cover.hpp).
  uint64_t covered_parts = 0;
  // The reads planned for values and codes: byte ranges asked of the sources at once,
  // coalesced (blocks decoded already left out), and their bytes; what a cold read fetches
  // and what a remote reader will request. The query's own (the predicate's columns over
  // the runs it tests) and, in a Selection's counters, its gathers' too.
  uint64_t read_requests = 0, read_bytes = 0;
};

// The levels of detail a read takes from a file (levels `lv`, `count` particles): those
// [begin, end) of a quality range; for a fraction f, the round(f * count) coarsest
// particles: the whole levels before the last one and an even sample of it (`sample`).
struct LevelsRead {
  uint32_t begin = 0, end = 0;
  LevelSample sample;  // active: level end - 1 is taken in part
};
LevelsRead levels_read(const Levels& lv, uint64_t count, double quality_from, double quality_to,
                       std::optional<double> fraction);

class Query {
 public:
  Query(std::shared_ptr<const Collection> collection, const QuerySpec& spec);
  Query(std::shared_ptr<const ParticleFile> file, const QuerySpec& spec);  // a collection of one file

  // Evaluates the query; calls sink(worker, chunk, part, segments) once per work chunk
  // (chunks are numbered in traversal order over all parts; workers in [0, threads())).
  // The segments are the sink's to keep (move them).
  using Sink = std::function<void(unsigned worker, size_t chunk, uint32_t part, std::vector<Segment>&)>;
  // dynamic: chunks go to whichever worker is free; fixed: worker w gets chunks
  // w, w + threads, ... of each part (reproducible per-worker partial results).
  enum class Schedule { dynamic, fixed };
  // `counted`: for a caller that wants only the number of matches (count()). A part whose
  // matches an index counts exactly on its own (one indexed test over a full-detail read)
  // adds that count there and delivers no segments.
  size_t run(const Sink& sink, Schedule schedule = Schedule::dynamic, uint64_t* counted = nullptr);  // returns the number of chunks

  unsigned threads() const { return threads_; }
  const Collection& collection() const { return *collection_; }
  const std::shared_ptr<const Collection>& collection_ptr() const { return collection_; }
  const QueryCounters& counters() const { return counters_; }
  // The spec's token and deadline (a Selection of this query checks them too).
  const Cancellation& cancellation() const { return cancel_; }

  // The parts the query reads, in part order, found through the step index alone (its
  // nodes' ranges and bitmaps against the predicate and box; no part file is opened):
  // every part of a collection without one. `pruned`: how many the step index rules out.
  struct Parts {
    std::vector<uint32_t> read;
    uint64_t pruned = 0;
  };
  Parts parts_to_read() const;
  // The levels this query reads from a part file (levels_read of its quality or fraction).
  LevelsRead levels_read(const ParticleFile& file) const;
  // Whether it reads every level whole (no fraction, quality up to 1 from 0): known without
  // the file's tree.
  bool full_detail(const ParticleFile& file) const;
  // The predicate, box included (null: every point matches).
  const Expr* predicate() const { return predicate_.get(); }
  // After run(): the covered tail answer of part `part` when its selected rows are exactly
  // those hits (query/part_planner.cpp), else null.
  std::shared_ptr<const TailHits> covered(uint32_t part) const {
    return part < covered_.size() ? covered_[part] : nullptr;
  }

 private:
  struct Task {
    uint64_t start;
    uint64_t count;
    bool all;  // every point matches: no test needed
  };
  std::shared_ptr<const Collection> collection_;
  ExprPtr predicate_;  // null when everything matches
  unsigned threads_;
  double quality_from_, quality_to_;
  std::optional<double> fraction_;
  LevelSample sample_;  // the partly taken level of the part being planned (fraction queries)
  QueryCounters counters_;
  Cancellation cancel_;
  std::vector<std::shared_ptr<const TailHits>> covered_;  // by part (run())

  bool prefetch_ = true;
  class PartPlanner;  // plan() phase by phase (query/part_planner.cpp)
  void prefetch(const ParticleFile& file, const std::vector<Task>& tasks, QueryCounters& counters) const;
  // run()'s count of a part an index answers exactly (see counted), adding to `counters`.
  std::optional<uint64_t> indexed_count(const ParticleFile& file, QueryCounters& counters) const;
  std::vector<Task> plan(const ParticleFile& file, QueryCounters& counters, std::shared_ptr<const TailHits>& cover);
  size_t run_part(const ParticleFile& file, uint32_t part, const std::vector<Task>& tasks, size_t first_chunk,
                  const Sink& sink, Schedule schedule);
  static constexpr uint64_t kScanBlock = 1 << 14;  // points per block of tested runs
  static std::vector<Task> coalesce(const std::vector<std::vector<Task>>& by_level, const std::vector<PosRange>& read);
};

}  // namespace motes
