// The collective write of grid fields from every rank's block (write.cpp calls it within a
// step's write): the field's HZ blocks are cut into runs, one part file each, written by
// aggregators spread over the ranks (fields/partition.hpp); every rank sends each aggregator
// only its samples that fall in the aggregator's run, with their offsets in it; aggregators
// own whole files and take no locks. A field of one part is one file, byte for byte what the
// serial writer makes.
#pragma once

#include <string>
#include <vector>

#include "motes/dataset/manifest.hpp"
#include "motes/parallel/comm.hpp"
#include "motes/parallel/options.hpp"

namespace motes {

// Collective. Writes each field of `blocks` (the same names, in the same order, on every
// rank) into the unpublished step `index` of `dir`; returns, on rank 0, their manifest
// entries. Failures (a spec that differs between ranks, blocks that overlap or leave a hole,
// I/O) are agreed on: every rank throws the same error.
std::vector<FieldEntry> write_field_blocks(const mpi::Comm& c, const std::string& dir, int64_t index,
                                           const std::vector<FieldBlockInput>& blocks, const ParallelWriteOptions& options,
                                           ParallelWriteReport& report);

}  // namespace motes
