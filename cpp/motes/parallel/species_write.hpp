// One species' part of a collective write (write.cpp calls it within a step's write): every
// rank summarises its particles for rank 0, which plans the aggregation (aggregation.hpp);
// the columns travel to the aggregators, which write the part files with the serial writer.
#pragma once

#include <string>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/parallel/aggregation.hpp"
#include "motes/parallel/comm.hpp"
#include "motes/parallel/options.hpp"
#include "motes/particles/step_index.hpp"

namespace motes {

// What rank 0 planned for one species: the counts and the parts' aggregators on every
// rank, balance and moved on rank 0 only.
struct SpeciesPlan {
  uint64_t total = 0;
  uint64_t target_bytes = 0;
  uint32_t parts = 0;
  std::vector<uint32_t> aggregator;  // per part
  Balance balance;
  uint64_t moved = 0;
};

// Collective. Writes the part files of species `name` of step `index` of `dir` from every
// rank's columns `cols` (none when the species has no particle on any rank); fills `plan`
// and the phases' seconds of `report`. Returns, on rank 0, the part summaries in part order.
// Failures are agreed on: every rank throws the same error.
std::vector<PartSummary> write_species(const mpi::Comm& c, const std::string& dir, int64_t index, const std::string& name,
                                       const std::vector<ColumnView>& cols, const ParallelWriteOptions& options,
                                       SpeciesPlan& plan, ParallelWriteReport& report);

}  // namespace motes
