// Which part files a query reads, and about how many of their rows, from the indexes alone
// (no value is read): the plan that spreads a query over processes part by part (motes.mpi,
// motes.dask) and the estimate that picks a quality for a budget of points (the server).
// The query of each part stays exact: the plan only leaves out parts that cannot match.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "motes/query/engine.hpp"

namespace motes {

struct PartRead {
  uint32_t part = 0;   // its number in the collection
  uint64_t count = 0;  // particles in the part file
  // The rows the query reads from it, estimated: inside the box (query/estimate.hpp), at
  // its quality or fraction; the predicate is tested on them, so at most these match.
  double rows = 0;
  // With level estimates: per level of detail of the part file, the estimated particles
  // inside the box (every level, whatever the quality); else empty.
  std::vector<double> levels;
};

struct ReadPlan {
  std::vector<PartRead> parts;  // the parts to read, in part order
  uint64_t pruned = 0;          // the parts left out
};

// The parts of `collection` the query of `spec` reads. Left out: an empty part, a part the
// step index rules out (Query::parts_to_read: its ranges and bitmaps against the predicate
// and box), and a collection's only file when its root node rules it out. A part file is
// opened only when its estimate needs its tree: a box that cuts through it, or a quality
// range short of every level (and with `level_estimates`, every part kept).
ReadPlan plan_reads(std::shared_ptr<const Collection> collection, const QuerySpec& spec, bool level_estimates = false);

}  // namespace motes
