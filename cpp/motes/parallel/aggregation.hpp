// Planning which aggregator writes which particles (docs/format.md section 12), without
// MPI: rank 0 runs this on every rank's summary, the MPI layer carries it out, and
// the simulation tool runs it for 10^5 virtual ranks.
//
// Each rank summarises its particles as a count, bounds and an adaptive octree
// histogram over its bounds: cells are halved until none holds more than a cap
// set from the target file size. The cells ("atoms") are the unit of assignment,
// so a dense rank is split spatially over several files.
#pragma once

#include <cstdint>
#include <vector>

#include "motes/core/types.hpp"

namespace motes {

struct RankCell {
  Box box;
  uint64_t count;
};

struct RankSummary {
  uint64_t count = 0;
  uint32_t node = 0;  // the node the rank runs on (ranks of one node give the same number)
  Box bounds{};
  std::vector<RankCell> cells;  // disjoint cells covering the rank's particles; empty: one cell, the bounds
};

// A rank's summary from its positions: octree cells over the bounds, split at
// midpoints until each holds at most `max_cell` particles (or cannot be split).
// With cell_of, also the cell of every particle (an index into the summary's cells).
RankSummary summarize_rank(const ColumnView& x, const ColumnView& y, const ColumnView& z, uint64_t max_cell,
                           std::vector<uint32_t>* cell_of = nullptr);

// The automatic file target: the data per rank, clamped to [64 MiB, 1 GiB].
uint64_t automatic_target_bytes(uint64_t total_bytes, size_t ranks);

// The cap summarize_rank should use for a given file target: a tenth of a file,
// so that leaves can be balanced to within about 10%.
inline uint64_t cell_cap(uint64_t target_bytes, uint64_t bytes_per_particle) {
  uint64_t c = target_bytes / bytes_per_particle / 10;
  return c ? c : 1;
}

struct AggregationOptions {
  uint64_t bytes_per_particle = 32;
  uint64_t target_bytes = 0;  // per file; 0 = automatic (total / ranks, clamped to [64 MiB, 1 GiB])
  double overfull = 1.25;     // a node this close to the target is not split further
  bool best_axis = false;     // try all three axes instead of the longest one
  bool local = true;          // aggregators near their data (assign_aggregators); false: spread evenly over the ranks
};

struct Atom {
  uint32_t rank;
  uint32_t cell;
  Box box;
  uint64_t count;
};

struct AggregationLeaf {
  Box bounds{};
  uint64_t count = 0;
  std::vector<uint32_t> atoms;  // indexes into AggregationPlan::atoms
  uint32_t aggregator = 0;      // the rank that writes this leaf's file
};

struct AggregationPlan {
  std::vector<Atom> atoms;
  std::vector<AggregationLeaf> leaves;
  uint64_t target_bytes = 0;
};

// File sizes of a plan: count, mean, standard deviation, maximum (bytes).
struct Balance {
  uint64_t files = 0;
  double mean = 0, sd = 0, max = 0;
  double sd_over_mean() const { return mean > 0 ? sd / mean : 0; }
  double max_over_mean() const { return mean > 0 ? max / mean : 0; }
};

// Adaptive k-d tree over atoms: a node holding k target-sized files' worth of
// particles is split where the count ratio is floor(k/2) : ceil(k/2), so files come
// out near equal; leaves go to aggregators by assign_aggregators.
AggregationPlan plan_adaptive(const std::vector<RankSummary>& ranks, const AggregationOptions& options);

// Who writes each leaf. With `local`, a leaf goes to the rank that holds most of its
// particles, so that fewer particles cross the network, as long as no rank writes more
// than ceil(L/P) of the L leaves and no node more than ceil(L/N) (N nodes); the leaves
// left over go to the ranks with the fewest leaves under the same caps (the node cap
// is dropped only where the nodes' sizes leave no other choice). Without `local`, leaf
// i goes to rank i*P/L (spread evenly over the rank space).
void assign_aggregators(AggregationPlan& plan, const std::vector<RankSummary>& ranks, bool local);

// The ranks holding a leaf's particles, ascending, with how many each holds.
std::vector<std::pair<uint32_t, uint64_t>> leaf_holders(const AggregationPlan& plan, const AggregationLeaf& leaf);

// Particles of a plan whose aggregator is not the rank that holds them (they cross the network).
uint64_t particles_moved(const AggregationPlan& plan);
// The fewest particles any choice of aggregators could move for the plan's leaves: each
// leaf written by its largest holder, with no cap.
uint64_t least_particles_moved(const AggregationPlan& plan);

// The adjustable uniform grid of Kumar et al. (ICPP 2019), as the baseline: cells
// of the largest rank box, doubled along x, y, z in turn until there are no more
// cells than ranks; one file per non-empty cell.
AggregationPlan plan_aug(const std::vector<RankSummary>& ranks, const AggregationOptions& options);

Balance balance(const AggregationPlan& plan, uint64_t bytes_per_particle);

}  // namespace motes
